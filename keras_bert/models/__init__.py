"""BERT models: the encoder and the models built on it."""

from keras_bert.models.encoder import INPUT_NAMES, BertEncoder

__all__ = ["INPUT_NAMES", "BertEncoder"]
