"""BERT's masked language model head, tied to the encoder's word embeddings."""

from __future__ import annotations

import keras
from keras import ops

from keras_bert.layers.activations import get_activation


def gather_positions(sequence, positions):
    """`sequence` `[batch, seq, hidden]` at `positions` `[batch, P]` -> `[batch, P, hidden]`.

    As `gather_indexes` of the original BERT: one gather on the flattened sequence, so only
    the `P` predicted positions go through the head, never every token.
    """
    shape = ops.shape(sequence)
    batch, seq_length, hidden = shape[0], shape[1], shape[2]
    positions = ops.cast(positions, "int32")
    offsets = ops.reshape(ops.arange(batch, dtype="int32") * seq_length, (-1, 1))
    flat_positions = ops.reshape(positions + offsets, (-1,))
    flat_sequence = ops.reshape(sequence, (-1, hidden))
    gathered = ops.take(flat_sequence, flat_positions, axis=0)
    return ops.reshape(gathered, (batch, ops.shape(positions)[1], hidden))


@keras.saving.register_keras_serializable(package="keras_bert")
class BertMaskedLMHead(keras.layers.Layer):
    """Predicts the tokens at the masked positions (`cls/predictions` of the original BERT).

    Call with `sequence_output` `[batch, seq, hidden]` and `masked_lm_positions` int
    `[batch, P]`; returns float32 logits `[batch, P, vocab_size]`:

        h = LayerNorm(Activation(Dense(sequence_output[positions])))   # the "transform"
        logits = h @ word_embeddings^T + output_bias

    The output projection is tied to `embedding`, the encoder's word `keras.layers.Embedding`
    (its variable itself, not a copy). Without `embedding` (as when the layer is deserialized
    on its own) the head creates an untied table of its own; `BertPretrainer` always ties.

    Under a mixed precision policy the transform runs in the compute dtype; the output
    projection reads the embedding table in float32 and the logits are float32.
    """

    def __init__(self, vocab_size, hidden_size, embedding=None, hidden_act="gelu_exact",
                 layer_norm_epsilon=1e-12, initializer_range=0.02, **kwargs):
        # No autocast scope around `call`: the tied table and the bias are read in float32.
        # The sub-layers (dense, LayerNorm) still autocast to the compute dtype themselves.
        kwargs.setdefault("autocast", False)
        super().__init__(**kwargs)
        self.vocab_size = vocab_size
        self.hidden_size = hidden_size
        self.hidden_act = hidden_act
        self.layer_norm_epsilon = layer_norm_epsilon
        self.initializer_range = initializer_range
        init = keras.initializers.TruncatedNormal(stddev=initializer_range)
        if embedding is None:
            embedding = keras.layers.Embedding(vocab_size, hidden_size, embeddings_initializer=init,
                                               name="output_embeddings", dtype=self.dtype_policy)
        elif (embedding.input_dim, embedding.output_dim) != (vocab_size, hidden_size):
            raise ValueError(
                f"The tied embedding is [{embedding.input_dim}, {embedding.output_dim}], the head "
                f"expects [vocab_size={vocab_size}, hidden_size={hidden_size}]")
        self.embedding = embedding
        self.dense = keras.layers.Dense(hidden_size, activation=get_activation(hidden_act),
                                        kernel_initializer=init, name="transform",
                                        dtype=self.dtype_policy)
        self.layer_norm = keras.layers.LayerNormalization(
            epsilon=layer_norm_epsilon, name="layer_norm", dtype=self.dtype_policy)

    def build(self, input_shape=None, positions_shape=None):
        if not self.embedding.built:
            self.embedding.build((None, None))
        self.dense.build((None, self.hidden_size))
        self.layer_norm.build((None, self.hidden_size))
        self.output_bias = self.add_weight(shape=(self.vocab_size,), initializer="zeros",
                                           name="output_bias", dtype="float32")
        self.built = True

    def call(self, sequence_output, masked_lm_positions):
        gathered = gather_positions(sequence_output, masked_lm_positions)
        shape = ops.shape(gathered)
        h = self.layer_norm(self.dense(ops.reshape(gathered, (-1, self.hidden_size))))
        table = ops.cast(self.embedding.embeddings, "float32")
        logits = ops.matmul(ops.cast(h, "float32"), ops.transpose(table))
        logits = ops.add(logits, ops.cast(self.output_bias, "float32"))
        return ops.reshape(logits, (shape[0], shape[1], self.vocab_size))

    def compute_output_shape(self, input_shape, positions_shape):
        return (positions_shape[0], positions_shape[1], self.vocab_size)

    def compute_output_spec(self, sequence_output, masked_lm_positions):
        shape = masked_lm_positions.shape
        return keras.KerasTensor((shape[0], shape[1], self.vocab_size), dtype="float32")

    def get_config(self):
        config = super().get_config()
        config.update(vocab_size=self.vocab_size, hidden_size=self.hidden_size,
                      hidden_act=self.hidden_act, layer_norm_epsilon=self.layer_norm_epsilon,
                      initializer_range=self.initializer_range)
        config.pop("autocast", None)
        return config
