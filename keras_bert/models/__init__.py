"""BERT models: the encoder and the models built on it."""

from keras_bert.models.encoder import INPUT_NAMES, BertEncoder
from keras_bert.models.pretrainer import PRETRAINING_INPUT_NAMES, BertPretrainer

__all__ = ["INPUT_NAMES", "PRETRAINING_INPUT_NAMES", "BertEncoder", "BertPretrainer"]
