"""`TextEmbedder`: raw strings -> sentence vectors (tokenizer + packer + encoder + pooling)."""

from __future__ import annotations

import numpy as np
import tensorflow as tf

from keras_bert.models.encoder import BertEncoder
from keras_bert.models.pooling import pool
from keras_bert.text.packer import BertPacker


class TextEmbedder(tf.Module):
    """Embeds raw strings with a `BertEncoder`; the whole path is one `tf.function`.

    Each batch is padded to its longest text, truncated to `seq_length` tokens.
    """

    def __init__(self, encoder: BertEncoder, tokenizer, seq_length: int = 128,
                 pooling: str = "pooled"):
        super().__init__(name="text_embedder")
        if seq_length > encoder.config.max_position_embeddings:
            raise ValueError(f"seq_length {seq_length} exceeds the model's "
                             f"max_position_embeddings {encoder.config.max_position_embeddings}")
        self.encoder = encoder
        self.tokenizer = tokenizer
        ids = tokenizer.special_token_ids
        self.packer = BertPacker(None, ids["cls"], ids["sep"], ids["pad"], max_length=seq_length)
        self.pooling = pooling

    @tf.function(input_signature=[tf.TensorSpec([None], tf.string)])
    def embed(self, texts):
        """`[batch]` strings -> `[batch, hidden]` float32 vectors."""
        inputs = self.packer([self.tokenizer.tokenize(texts)])
        outputs = self.encoder(inputs, training=False)
        return tf.cast(pool(outputs, inputs["input_mask"], self.pooling), tf.float32)

    def __call__(self, texts) -> np.ndarray:
        return self.embed(tf.constant(list(texts), tf.string)).numpy()
