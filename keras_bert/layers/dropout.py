"""Dropout whose mask costs less to draw on TensorFlow: the encoder's own dropout layers.

Keras' `Dropout` on TensorFlow calls `tf.nn.experimental.stateless_dropout`, which draws one
32-bit Philox number per element, converts it to a float and compares. On a CPU that draw
is a large share of a fine-tuning step at short lengths: attention dropout alone draws
`batch x heads x seq x seq` numbers per layer (bench/RESULTS.md, "Fit at the texts'
length": the fit without attention dropout took 1.17x less time). This layer draws one
32-bit number per *two* elements and compares each 16-bit half with an integer threshold.

The rate it applies is `round(rate * 65536) / 65536` (0.1 becomes 0.0999908, 9.2e-6 off),
and it scales what it keeps by exactly the inverse of the kept share, so each element's
expected value is unchanged. The mask is a function of the layer's seed generator, as
Keras' is: the same seeds give the same masks, which exact resume relies on.

Other backends (JAX's dropout is already one fused draw), a `noise_shape`, or a rate the
16-bit threshold cannot hold (0 < rate < 2^-17, or 1) keep Keras' own `Dropout`. The
layer is a `keras.layers.Dropout`: same arguments, same seed generator variable, same
config, so models saved with it hold what they held before.
"""

from __future__ import annotations

import keras

from keras_bert.backend import is_tensorflow

# The resolution of the mask: one draw per element is compared at this many levels.
LEVELS = 1 << 16


def drop_threshold(rate: float) -> int:
    """The 16-bit threshold below which an element is dropped: `rate` rounded to the
    nearest multiple of 1/65536."""
    return round(rate * LEVELS)


@keras.saving.register_keras_serializable(package="keras_bert")
class BertDropout(keras.layers.Dropout):
    """`keras.layers.Dropout` with a 16-bit mask on TensorFlow (see the module's notes)."""

    def call(self, inputs, training=False):
        threshold = drop_threshold(self.rate)
        if (not training or not is_tensorflow() or self.noise_shape is not None
                or not 0 < threshold < LEVELS):
            return super().call(inputs, training=training)
        return _sixteen_bit_dropout(inputs, threshold, self.seed_generator.next())


def _sixteen_bit_dropout(inputs, threshold: int, seed):
    """`inputs` with the elements whose 16-bit draw falls below `threshold` set to zero and
    the others scaled by `LEVELS / (LEVELS - threshold)`."""
    import tensorflow as tf  # this path runs on TensorFlow only; the module stays neutral

    if seed.dtype != tf.int32:  # XLA's stateless draws take int32 seeds, as Keras' do
        seed = tf.cast(tf.math.floormod(seed, tf.int32.max - 1), tf.int32)
    count = tf.size(inputs)
    words = tf.random.stateless_uniform([(count + 1) // 2], seed=seed,
                                        minval=None, maxval=None, dtype=tf.uint32)
    halves = tf.reshape(tf.bitcast(words, tf.uint16), [-1])[:count]
    keep = tf.reshape(halves >= threshold, tf.shape(inputs))
    scale = tf.cast(LEVELS / (LEVELS - threshold), inputs.dtype)
    return tf.where(keep, inputs * scale, tf.zeros_like(inputs))
