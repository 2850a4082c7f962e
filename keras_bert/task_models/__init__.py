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

TASK_MODELS = {model.kind: model for model in (
    TextClassifier, MultiLabelClassifier, TextRegressor, TokenClassifier, QuestionAnswerer,
    TextEmbedder)}


def task_model_class(kind: str) -> type[TextTaskModel]:
    """The task model class of the task kind `kind` (`keras_bert.tasks.registry`)."""
    if kind not in TASK_MODELS:
        raise ValueError(f"no task model for the task kind {kind!r}; kinds: "
                         f"{sorted(TASK_MODELS)}")
    return TASK_MODELS[kind]

__all__ = ["TASK_MODELS", "FitSchedule", "MaskingConfig", "MultiLabelClassifier", "QuestionAnswerer",
           "TextClassifier", "TextEmbedder", "TextPretrainer", "TextRegressor", "TextTaskModel",
           "TokenClassifier", "task_model_class"]
