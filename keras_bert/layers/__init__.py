"""Keras 3 layers of BERT (model code: `keras.ops` only, no TensorFlow Text)."""

from keras_bert.layers.attention import BertSelfAttention
from keras_bert.layers.embeddings import BertEmbeddings
from keras_bert.layers.pooler import BertPooler
from keras_bert.layers.transformer_block import BertTransformerBlock

__all__ = ["BertEmbeddings", "BertPooler", "BertSelfAttention", "BertTransformerBlock"]
