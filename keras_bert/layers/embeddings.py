"""BERT's input embeddings: word + position + segment, then LayerNorm and dropout."""

import keras
from keras import ops

from keras_bert.backend import is_tensorflow


@keras.saving.register_keras_serializable(package="keras_bert")
class BertEmbeddings(keras.layers.Layer):
    """Sums word, learned absolute position and segment (token type) embeddings.

    Call with `(input_word_ids, input_type_ids)`, both int `[batch, seq]`; returns
    `[batch, seq, hidden]`. Sequences may be of any length up to `max_position_embeddings`.
    The word embedding table is exposed as `self.word_embeddings` so heads can tie to it.
    """

    def __init__(self, vocab_size, hidden_size, max_position_embeddings=512, type_vocab_size=2,
                 initializer_range=0.02, layer_norm_epsilon=1e-12, dropout=0.1, **kwargs):
        super().__init__(**kwargs)
        self.vocab_size = vocab_size
        self.hidden_size = hidden_size
        self.max_position_embeddings = max_position_embeddings
        self.type_vocab_size = type_vocab_size
        self.initializer_range = initializer_range
        self.layer_norm_epsilon = layer_norm_epsilon
        self.dropout_rate = dropout
        init = keras.initializers.TruncatedNormal(stddev=initializer_range)
        common = {"dtype": self.dtype_policy}
        self.word_embeddings = keras.layers.Embedding(
            vocab_size, hidden_size, embeddings_initializer=init, name="word_embeddings",
            **common)
        self.position_embeddings = keras.layers.Embedding(
            max_position_embeddings, hidden_size, embeddings_initializer=init,
            name="position_embeddings", **common)
        self.type_embeddings = keras.layers.Embedding(
            type_vocab_size, hidden_size, embeddings_initializer=init, name="type_embeddings",
            **common)
        self.layer_norm = keras.layers.LayerNormalization(
            epsilon=layer_norm_epsilon, name="layer_norm", **common)
        self.dropout = keras.layers.Dropout(dropout, **common)

    def build(self, input_shape=None):
        self.word_embeddings.build((None, None))
        self.position_embeddings.build((None, None))
        self.type_embeddings.build((None, None))
        self.layer_norm.build((None, None, self.hidden_size))
        self.built = True

    def call(self, input_word_ids, input_type_ids, training=None):
        seq_length = ops.shape(input_word_ids)[1]
        if isinstance(seq_length, int) and seq_length > self.max_position_embeddings:
            raise ValueError(
                f"Sequence length {seq_length} exceeds max_position_embeddings "
                f"({self.max_position_embeddings})")
        if not isinstance(seq_length, int) and is_tensorflow():
            # A dynamic length is checked when the graph runs (TF only: keras.ops has no
            # assertion op); without it `ops.slice` would fail with a bare "Expected size".
            import tensorflow as tf

            check = tf.debugging.assert_less_equal(
                seq_length, self.max_position_embeddings,
                message=f"Sequence length exceeds max_position_embeddings "
                        f"({self.max_position_embeddings})")
            with tf.control_dependencies([check]):  # checked before the slice, not racing it
                seq_length = tf.identity(seq_length)
        # The table as a tensor: JAX (0.10 on) no longer converts a Keras variable passed
        # to one of its primitives.
        table = ops.convert_to_tensor(self.position_embeddings.embeddings)
        positions = ops.slice(table, (0, 0),
                              (seq_length, self.hidden_size))
        x = self.word_embeddings(input_word_ids)
        x = x + self.type_embeddings(input_type_ids)
        # expand_dims, not `positions[None]`: a new-axis strided slice of a dynamic length
        # has no LiteRT kernel (the LiteRT export runs the network at the text's length).
        x = x + ops.cast(ops.expand_dims(positions, 0), x.dtype)
        return self.dropout(self.layer_norm(x), training=training)

    def compute_output_shape(self, input_word_ids_shape, input_type_ids_shape=None):
        return tuple(input_word_ids_shape) + (self.hidden_size,)

    def get_config(self):
        config = super().get_config()
        config.update(vocab_size=self.vocab_size, hidden_size=self.hidden_size,
                      max_position_embeddings=self.max_position_embeddings,
                      type_vocab_size=self.type_vocab_size,
                      initializer_range=self.initializer_range,
                      layer_norm_epsilon=self.layer_norm_epsilon, dropout=self.dropout_rate)
        return config
