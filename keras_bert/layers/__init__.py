"""Keras 3 layers of BERT (model code: `keras.ops` only, no TensorFlow Text)."""

from keras_bert.layers.embeddings import BertEmbeddings
from keras_bert.layers.mlm_head import BertMaskedLMHead
from keras_bert.layers.nsp_head import BertNextSentenceHead
from keras_bert.layers.pooler import BertPooler
from keras_bert.layers.self_attention import BertSelfAttention
from keras_bert.layers.transformer_block import BertTransformerBlock

__all__ = ["BertEmbeddings", "BertMaskedLMHead", "BertNextSentenceHead", "BertPooler",
           "BertSelfAttention", "BertTransformerBlock"]
