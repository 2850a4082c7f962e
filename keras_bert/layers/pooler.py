"""BERT's pooler: a dense layer with tanh on the first (`[CLS]`) token."""

import keras


@keras.saving.register_keras_serializable(package="keras_bert")
class BertPooler(keras.layers.Layer):
    """Maps `sequence_output` `[batch, seq, hidden]` to `pooled_output` `[batch, hidden]`."""

    def __init__(self, hidden_size, initializer_range=0.02, **kwargs):
        super().__init__(**kwargs)
        self.hidden_size = hidden_size
        self.initializer_range = initializer_range
        self.dense = keras.layers.Dense(
            hidden_size, activation="tanh", name="dense", dtype=self.dtype_policy,
            kernel_initializer=keras.initializers.TruncatedNormal(stddev=initializer_range))

    def build(self, input_shape):
        self.dense.build((None, self.hidden_size))
        self.built = True

    def call(self, sequence_output):
        return self.dense(sequence_output[:, 0, :])

    def compute_output_shape(self, input_shape):
        return (input_shape[0], self.hidden_size)

    def get_config(self):
        config = super().get_config()
        config.update(hidden_size=self.hidden_size, initializer_range=self.initializer_range)
        return config
