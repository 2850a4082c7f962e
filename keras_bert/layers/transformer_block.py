"""One post-LayerNorm transformer encoder block, as in BERT."""

import keras
from keras import ops

from keras_bert.layers.activations import get_activation
from keras_bert.layers.self_attention import BertSelfAttention


@keras.saving.register_keras_serializable(package="keras_bert")
class BertTransformerBlock(keras.layers.Layer):
    """Self-attention and a feed-forward network, each with dropout, residual and LayerNorm.

        h = LayerNorm(x + Dropout(SelfAttention(x)))
        y = LayerNorm(h + Dropout(Dense(Activation(Dense(h)))))

    Call with `x` `[batch, seq, hidden]` and an optional `padding_mask` `[batch, seq]`.
    """

    def __init__(self, hidden_size, num_heads, intermediate_size, hidden_act="gelu_exact",
                 hidden_dropout=0.1, attention_dropout=0.1, initializer_range=0.02,
                 layer_norm_epsilon=1e-12, **kwargs):
        super().__init__(**kwargs)
        self.hidden_size = hidden_size
        self.num_heads = num_heads
        self.intermediate_size = intermediate_size
        self.hidden_act = hidden_act
        self.hidden_dropout = hidden_dropout
        self.attention_dropout = attention_dropout
        self.initializer_range = initializer_range
        self.layer_norm_epsilon = layer_norm_epsilon
        policy = self.dtype_policy
        init = keras.initializers.TruncatedNormal(stddev=initializer_range)
        self.attention = BertSelfAttention(hidden_size, num_heads, initializer_range,
                                           attention_dropout, name="attention", dtype=policy)
        self.attention_layer_norm = keras.layers.LayerNormalization(
            epsilon=layer_norm_epsilon, name="attention_layer_norm", dtype=policy)
        self.intermediate = keras.layers.Dense(
            intermediate_size, activation=get_activation(hidden_act), kernel_initializer=init,
            name="intermediate", dtype=policy)
        self.output_dense = keras.layers.Dense(hidden_size, kernel_initializer=init,
                                               name="output", dtype=policy)
        self.output_layer_norm = keras.layers.LayerNormalization(
            epsilon=layer_norm_epsilon, name="output_layer_norm", dtype=policy)
        self.dropout = keras.layers.Dropout(hidden_dropout, dtype=policy)

    def build(self, input_shape):
        shape = (None, None, self.hidden_size)
        self.attention.build(shape)
        self.attention_layer_norm.build(shape)
        self.intermediate.build(shape)
        self.output_dense.build((None, None, self.intermediate_size))
        self.output_layer_norm.build(shape)
        self.built = True

    def call(self, x, padding_mask=None, training=None, return_attention_scores=False):
        attended = self.attention(x, padding_mask=padding_mask, training=training,
                                  return_attention_scores=return_attention_scores)
        if return_attention_scores:
            attended, scores = attended
        # The rest is position-wise: run it on [batch * seq, hidden], where each Dense is a
        # plain 2-D matmul that TensorFlow's graph optimizer (with oneDNN, its default on
        # x86) fuses with the bias add and the activation into one kernel.
        shape = ops.shape(x)
        x, attended = (ops.reshape(t, (-1, self.hidden_size)) for t in (x, attended))
        h = self.attention_layer_norm(x + self.dropout(attended, training=training))
        ffn = self.output_dense(self.intermediate(h))
        y = self.output_layer_norm(h + self.dropout(ffn, training=training))
        y = ops.reshape(y, shape)
        if return_attention_scores:
            return y, scores
        return y

    def get_config(self):
        config = super().get_config()
        config.update(hidden_size=self.hidden_size, num_heads=self.num_heads,
                      intermediate_size=self.intermediate_size, hidden_act=self.hidden_act,
                      hidden_dropout=self.hidden_dropout,
                      attention_dropout=self.attention_dropout,
                      initializer_range=self.initializer_range,
                      layer_norm_epsilon=self.layer_norm_epsilon)
        return config
