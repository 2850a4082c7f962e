"""The task models a Python user holds: Keras models that take raw strings and own their
preprocessing (`TextClassifier`, `MultiLabelClassifier`, `TextRegressor`, `TokenClassifier`,
`QuestionAnswerer`, `TextEmbedder`; see `text_task_model.py`) and `TextPretrainer` (masked
LM + NSP on raw documents)."""

from keras_bert.task_models.multilabel_classifier import MultiLabelClassifier
from keras_bert.task_models.question_answerer import QuestionAnswerer
from keras_bert.task_models.text_classifier import TextClassifier, TextRegressor
from keras_bert.task_models.text_embedder import TextEmbedder
from keras_bert.task_models.text_pretrainer import MaskingConfig, TextPretrainer
from keras_bert.task_models.text_task_model import TextTaskModel
from keras_bert.task_models.token_classifier import TokenClassifier
from keras_bert.training.fit_schedule import FitSchedule

__all__ = ["FitSchedule", "MaskingConfig", "MultiLabelClassifier", "QuestionAnswerer",
           "TextClassifier", "TextEmbedder", "TextPretrainer", "TextRegressor", "TextTaskModel",
           "TokenClassifier"]
