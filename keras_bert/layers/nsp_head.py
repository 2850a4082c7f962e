"""BERT's next sentence prediction head."""

from __future__ import annotations

import keras
from keras import ops


@keras.saving.register_keras_serializable(package="keras_bert")
class BertNextSentenceHead(keras.layers.Layer):
    """Is sentence B the real continuation of sentence A? (`cls/seq_relationship`).

    Call with `pooled_output` `[batch, hidden]`; returns float32 logits `[batch, 2]`
    (class 0 = B is the next sentence, 1 = B is random, as in the original data). The
    dense layer runs in float32 whatever the dtype policy.
    """

    def __init__(self, hidden_size, initializer_range=0.02, **kwargs):
        super().__init__(**kwargs)
        self.hidden_size = hidden_size
        self.initializer_range = initializer_range
        self.dense = keras.layers.Dense(
            2, name="dense", dtype="float32",
            kernel_initializer=keras.initializers.TruncatedNormal(stddev=initializer_range))

    def build(self, input_shape=None):
        self.dense.build((None, self.hidden_size))
        self.built = True

    def call(self, pooled_output):
        return self.dense(ops.cast(pooled_output, "float32"))

    def compute_output_shape(self, input_shape):
        return (input_shape[0], 2)

    def compute_output_spec(self, pooled_output):
        return keras.KerasTensor((pooled_output.shape[0], 2), dtype="float32")

    def get_config(self):
        config = super().get_config()
        config.update(hidden_size=self.hidden_size, initializer_range=self.initializer_range)
        return config
