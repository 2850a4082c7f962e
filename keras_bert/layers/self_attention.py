"""Multi-head self-attention with a padding mask, as in BERT."""

import math

import keras
from keras import ops

from keras_bert.layers import fused_attention

# Added to the scores of padding positions before the softmax (in float32).
_MASK_PENALTY = -1e9


@keras.saving.register_keras_serializable(package="keras_bert")
class BertSelfAttention(keras.layers.Layer):
    """Scaled dot-product self-attention over `num_heads` heads, with its output projection.

    Call with `x` `[batch, seq, hidden]` and an optional `padding_mask` `[batch, seq]`
    (1 for real tokens, 0 for padding): padded keys receive zero attention weight. Under
    mixed precision the projections run in the compute dtype; the query and key are then
    cast to float32 and the scores `q @ k^T`, the mask and the softmax are computed in
    float32; the probabilities are cast back to the compute dtype for `probs @ v`.
    Set `return_attention_scores=True` in the call to also get `[batch, heads, seq, seq]`.

    The weights are those of four `Dense` layers, `query`, `key`, `value` and `output`,
    each with a `(hidden, hidden)` kernel (the layout checkpoint converters rely on). They
    run on the flattened `[batch * seq, hidden]` activations (plain 2-D matmuls that
    TensorFlow fuses with their bias add); nothing is computed from the weights at call time,
    so an exported graph does no per-request work on them. The `1 / sqrt(head_size)` score
    scale multiplies the float32 query.

    On Keras' JAX backend, where no attention dropout applies, a right-padded mask is
    given to `jax.nn.dot_product_attention` as key lengths: cuDNN's fused kernel on a GPU
    in half precision, XLA's elsewhere (`keras_bert.layers.fused_attention`).
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
        dense = dict(
            kernel_initializer=keras.initializers.TruncatedNormal(stddev=initializer_range),
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

    @property
    def _scale(self):
        return 1.0 / math.sqrt(self.head_size)

    def call(self, x, padding_mask=None, training=None, return_attention_scores=False):
        batch, seq = ops.shape(x)[0], ops.shape(x)[1]
        tokens = ops.reshape(x, (-1, self.hidden_size))
        # [tokens, hidden] -> [batch, seq, heads, head_size]
        q, k, v = (ops.reshape(projection(tokens), (batch, seq, self.num_heads, self.head_size))
                   for projection in (self.query, self.key, self.value))
        if fused_attention.applies(padding_mask, training, self.dropout_rate,
                                   return_attention_scores):
            context = fused_attention.attend(
                q, k, v, padding_mask, self._scale,
                lambda: self._attend(q, k, v, padding_mask, training)[0])
        else:
            context, probs = self._attend(q, k, v, padding_mask, training)
        # [batch, seq, heads, head_size] -> [batch * seq, hidden] for the output projection.
        context = ops.reshape(context, (-1, self.hidden_size))
        output = ops.reshape(self.output_dense(context), (batch, seq, self.hidden_size))
        if return_attention_scores:
            return output, probs
        return output

    def _attend(self, q, k, v, padding_mask, training):
        """`(context [batch, seq, heads, head_size], probabilities [batch, heads, seq, seq])`
        of the projected `q`, `k`, `v` (each `[batch, seq, heads, head_size]`)."""
        batch, seq = ops.shape(q)[0], ops.shape(q)[1]
        q = ops.transpose(q, (0, 2, 1, 3))  # [batch, heads, seq, head_size]
        k_t = ops.transpose(k, (0, 2, 3, 1))  # [batch, heads, head_size, seq]
        v = ops.transpose(v, (0, 2, 1, 3))
        # Scores in float32 under mixed precision too: q and k are cast BEFORE the product
        # (a bf16 product would round every score to 8 significant bits, ~4% on the
        # probability of a score of 10), and the scale multiplies the float32 query.
        # No-ops in float32; ~1% of a layer's FLOPs at 128.
        scores = ops.matmul(ops.cast(q, "float32") * self._scale, ops.cast(k_t, "float32"))
        if padding_mask is not None:
            # A reshape, not `[:, None, None, :]`: LiteRT has no kernel for a new-axis
            # strided slice of a dynamic length (the LiteRT export's network).
            keep = ops.reshape(ops.cast(padding_mask, "float32"), (batch, 1, 1, seq))
            scores = scores + (1.0 - keep) * _MASK_PENALTY
        probs = ops.softmax(scores, axis=-1)
        context = ops.matmul(self.dropout(ops.cast(probs, v.dtype), training=training), v)
        return ops.transpose(context, (0, 2, 1, 3)), probs

    def get_config(self):
        config = super().get_config()
        config.update(hidden_size=self.hidden_size, num_heads=self.num_heads,
                      initializer_range=self.initializer_range, dropout=self.dropout_rate)
        return config
