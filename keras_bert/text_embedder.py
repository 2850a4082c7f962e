"""`TextEmbedder`: raw strings -> sentence vectors (preprocessor + encoder + pooling)."""

from __future__ import annotations

import numpy as np
import tensorflow as tf

from keras_bert.models.encoder import BertEncoder
from keras_bert.models.pooling import pool
from keras_bert.text.preprocessor import BertPreprocessor


class TextEmbedder(tf.Module):
    """Embeds raw strings with a `BertEncoder`; the whole path is one `tf.function`.

    `preprocessor`: the model's `BertPreprocessor` (a `BertTokenizer` is wrapped in one).
    Each batch is padded to its longest text, truncated to `seq_length` tokens.
    """

    def __init__(self, encoder: BertEncoder, preprocessor, seq_length: int = 128,
                 pooling: str = "pooled"):
        super().__init__(name="text_embedder")
        if seq_length > encoder.config.max_position_embeddings:
            raise ValueError(f"seq_length {seq_length} exceeds the model's "
                             f"max_position_embeddings {encoder.config.max_position_embeddings}")
        self.encoder = encoder
        self.preprocessor = (preprocessor.with_length(None, seq_length)
                             if isinstance(preprocessor, BertPreprocessor)
                             else BertPreprocessor(preprocessor, None, seq_length))
        self.tokenizer = self.preprocessor.tokenizer
        self.pooling = pooling

    @tf.function(input_signature=[tf.TensorSpec([None], tf.string)])
    def embed(self, texts):
        """`[batch]` strings -> `[batch, hidden]` float32 vectors."""
        inputs = self.preprocessor(texts)
        outputs = self.encoder(inputs, training=False)
        return tf.cast(pool(outputs, inputs["input_mask"], self.pooling), tf.float32)

    def __call__(self, texts) -> np.ndarray:
        return self.embed(tf.constant(list(texts), tf.string)).numpy()
