"""BERT networks: the encoder and the pretraining model (the task networks live with their
kinds, `keras_bert.tasks.<kind>.network`)."""

from keras_bert.models.encoder import INPUT_NAMES, BertEncoder
from keras_bert.models.pretrainer import PRETRAINING_INPUT_NAMES, BertPretrainer

__all__ = ["INPUT_NAMES", "PRETRAINING_INPUT_NAMES", "BertEncoder", "BertPretrainer"]
