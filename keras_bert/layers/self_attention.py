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
    (1 for real tokens, 0 for padding): padded keys receive zero attention weight. Under
    mixed precision the projections run in the compute dtype; the query and key are then
    cast to float32 and the scores `q @ k^T`, the mask and the softmax are computed in
    float32; the probabilities are cast back to the compute dtype for `probs @ v`.
    Set `return_attention_scores=True` in the call to also get `[batch, heads, seq, seq]`.

    The weights are those of four `Dense` layers, `query`, `key`, `value` and `output`,
    each with a `(hidden, hidden)` kernel (the layout checkpoint converters rely on). For
    speed, `call` does not run the first three one by one: it concatenates their kernels
    into one `(hidden, 3 * hidden)` matrix on the fly (a ~1% copy) and projects the
    flattened `[batch * seq, hidden]` activations with a single matrix multiplication.
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

    def _project_qkv(self, x):
        """`[tokens, hidden]` -> `[tokens, 3 * hidden]`: the scaled query, the key and the value.

        The `1 / sqrt(head_size)` score scale is folded into the query weights (cheaper
        than scaling the activations, and exact when `head_size` is a power of 4).
        """
        dense = (self.query, self.key, self.value)
        if any(getattr(layer, "quantization_mode", None) for layer in dense):
            # Quantized kernels cannot be concatenated: run the three layers.
            return ops.concatenate([self.query(x) * self._scale, self.key(x), self.value(x)],
                                   axis=-1)
        kernel = ops.concatenate(
            [self.query.kernel * self._scale, self.key.kernel, self.value.kernel], axis=1)
        bias = ops.concatenate(
            [self.query.bias * self._scale, self.key.bias, self.value.bias], axis=0)
        return ops.add(ops.matmul(x, ops.cast(kernel, x.dtype)), ops.cast(bias, x.dtype))

    @property
    def _scale(self):
        return 1.0 / math.sqrt(self.head_size)

    def call(self, x, padding_mask=None, training=None, return_attention_scores=False):
        batch, seq = ops.shape(x)[0], ops.shape(x)[1]
        heads, head_size = self.num_heads, self.head_size
        # Work on [batch * seq, hidden], as the original BERT code does: the projections
        # are then plain 2-D matmuls that TensorFlow fuses with their bias add.
        qkv = self._project_qkv(ops.reshape(x, (-1, self.hidden_size)))
        # One transpose lays out all three as [3, batch, heads, seq, head_size].
        qkv = ops.transpose(ops.reshape(qkv, (batch, seq, 3, heads, head_size)), (2, 0, 3, 1, 4))
        q, k, v = qkv[0], qkv[1], qkv[2]
        # Scores in float32 under mixed precision too: q and k are cast BEFORE the product
        # (a bf16 product would round every score to 8 significant bits, ~4% on the
        # probability of a score of 10). A no-op in float32; ~1% of a layer's FLOPs at 128.
        scores = ops.matmul(ops.cast(q, "float32"), ops.transpose(ops.cast(k, "float32"),
                                                                 (0, 1, 3, 2)))
        if padding_mask is not None:
            keep = ops.cast(padding_mask, "float32")[:, None, None, :]
            scores = scores + (1.0 - keep) * _MASK_PENALTY
        probs = ops.softmax(scores, axis=-1)
        context = ops.matmul(self.dropout(ops.cast(probs, v.dtype), training=training), v)
        # [batch, heads, seq, head_size] -> [batch * seq, hidden] for the output projection.
        context = ops.reshape(ops.transpose(context, (0, 2, 1, 3)), (-1, self.hidden_size))
        output = ops.reshape(self.output_dense(context), (batch, seq, self.hidden_size))
        if return_attention_scores:
            return output, probs
        return output

    def get_config(self):
        config = super().get_config()
        config.update(hidden_size=self.hidden_size, num_heads=self.num_heads,
                      initializer_range=self.initializer_range, dropout=self.dropout_rate)
        return config
