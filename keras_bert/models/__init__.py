"""BERT models: the encoder and the models built on it."""

from keras_bert.models.classifier import BertClassifier
from keras_bert.models.embedder import EMBEDDER_POOLINGS, BertEmbedder
from keras_bert.models.encoder import INPUT_NAMES, BertEncoder
from keras_bert.models.pretrainer import PRETRAINING_INPUT_NAMES, BertPretrainer
from keras_bert.models.span_qa import BertSpanQA
from keras_bert.models.tagger import BertTagger

__all__ = ["INPUT_NAMES", "PRETRAINING_INPUT_NAMES", "BertEncoder", "BertPretrainer"]
__all__ += ["EMBEDDER_POOLINGS", "BertClassifier", "BertEmbedder", "BertSpanQA", "BertTagger"]
