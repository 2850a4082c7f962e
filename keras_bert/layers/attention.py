"""Multi-head self-attention with a padding mask, as in BERT."""

import math

import keras
from keras import ops

# Added to the scores of padding positions before the softmax (in float32).
_MASK_PENALTY = -1e9


@keras.saving.register_keras_serializable(package="keras_bert")
class BertSelfAttention(keras.layers.Layer):
    """Scaled dot-product self-attention over `num_heads` heads, with its output projection.

    Call with `x` `[batch, seq, hidden]` and an optional `padding_mask` `[batch, seq]`
    (1 for real tokens, 0 for padding): padded keys receive zero attention weight. The
    scores and the softmax are computed in float32 whatever the compute dtype.
    Set `return_attention_scores=True` in the call to also get `[batch, heads, seq, seq]`.
    """

    def __init__(self, hidden_size, num_heads, initializer_range=0.02, dropout=0.1, **kwargs):
        super().__init__(**kwargs)
        if hidden_size % num_heads:
            raise ValueError(f"hidden_size {hidden_size} is not divisible by num_heads {num_heads}")
        self.hidden_size = hidden_size
        self.num_heads = num_heads
        self.head_size = hidden_size // num_heads
        self.initializer_range = initializer_range
        self.dropout_rate = dropout
        dense = dict(kernel_initializer=keras.initializers.TruncatedNormal(stddev=initializer_range),
                     dtype=self.dtype_policy)
        self.query = keras.layers.Dense(hidden_size, name="query", **dense)
        self.key = keras.layers.Dense(hidden_size, name="key", **dense)
        self.value = keras.layers.Dense(hidden_size, name="value", **dense)
        self.output_dense = keras.layers.Dense(hidden_size, name="output", **dense)
        self.dropout = keras.layers.Dropout(dropout, dtype=self.dtype_policy)

    def build(self, input_shape):
        for layer in (self.query, self.key, self.value, self.output_dense):
            layer.build((None, None, self.hidden_size))
        self.built = True

    def _split_heads(self, x):
        batch, seq = ops.shape(x)[0], ops.shape(x)[1]
        x = ops.reshape(x, (batch, seq, self.num_heads, self.head_size))
        return ops.transpose(x, (0, 2, 1, 3))  # [batch, heads, seq, head_size]

    def call(self, x, padding_mask=None, training=None, return_attention_scores=False):
        # Scaling q before the product is cheaper than scaling the [seq, seq] scores.
        q = self._split_heads(self.query(x) * (1.0 / math.sqrt(self.head_size)))
        k = self._split_heads(self.key(x))
        v = self._split_heads(self.value(x))
        scores = ops.cast(ops.matmul(q, ops.transpose(k, (0, 1, 3, 2))), "float32")
        if padding_mask is not None:
            keep = ops.cast(padding_mask, "float32")[:, None, None, :]
            scores = scores + (1.0 - keep) * _MASK_PENALTY
        probs = ops.softmax(scores, axis=-1)
        context = ops.matmul(self.dropout(ops.cast(probs, v.dtype), training=training), v)
        context = ops.transpose(context, (0, 2, 1, 3))
        context = ops.reshape(context, (ops.shape(x)[0], ops.shape(x)[1], self.hidden_size))
        output = self.output_dense(context)
        if return_attention_scores:
            return output, probs
        return output

    def get_config(self):
        config = super().get_config()
        config.update(hidden_size=self.hidden_size, num_heads=self.num_heads,
                      initializer_range=self.initializer_range, dropout=self.dropout_rate)
        return config
