"""Adam's update of one variable as one TensorFlow kernel, where Keras runs on TensorFlow.

Keras 3's `Adam.update_step` is written in `keras.ops`: on TensorFlow each of its products
and sums is a kernel of its own that reads and writes the whole variable, about ten passes
over every weight per step. On a CPU that is memory-bound work: 267 ms of a 1.4 s
all-MiniLM-L6-v2 fine-tuning step (22.7M weights, batch 32 x 40 pieces, AMD EPYC Zen 3,
2 cores). TensorFlow's `ResourceApplyAdam` computes the same update, with the same formulas
in the same order (`m += (g - m)(1 - b1)`, `v += (g^2 - v)(1 - b2)`,
`var -= lr sqrt(1 - b2^t) / (1 - b1^t) m / (sqrt(v) + eps)`), in one pass: 34 ms
(`bench/fit_speed.py`'s section of bench/RESULTS.md has the fit it speeds up).

Everything around the update stays Keras': gradient clipping, decoupled weight decay and its
exclusions, loss scaling, the step counter, the variables' layout and checkpoints. JAX, torch,
AMSGrad and sparse gradients keep Keras' own update. Under a `tf.distribute` strategy Keras
calls the update once per device copy (`extended.update`); the moments' `handle` is then
that device's copy, as the variable's is.
"""

from __future__ import annotations

from keras_bert.backend import is_tensorflow

# The dtypes TensorFlow's kernel is registered for (on CPU and GPU alike).
_KERNEL_DTYPES = ("float16", "bfloat16", "float32", "float64")


class FusedAdamUpdate:
    """Optimizer mixin for `keras.optimizers.Adam` and its subclasses (AdamW): the
    per-variable `update_step` as TensorFlow's fused kernel where it applies, else Keras'."""

    def update_step(self, gradient, variable, learning_rate):
        if not is_tensorflow() or self.amsgrad:
            return super().update_step(gradient, variable, learning_rate)
        import tensorflow as tf

        if (not isinstance(gradient, tf.Tensor)
                or variable.dtype.name not in _KERNEL_DTYPES):
            return super().update_step(gradient, variable, learning_rate)
        dtype = variable.dtype
        index = self._get_variable_index(variable)
        step = tf.cast(self.iterations + 1, dtype)
        tf.raw_ops.ResourceApplyAdam(
            var=variable.handle,
            m=_handle(self._momentums[index]),
            v=_handle(self._velocities[index]),
            beta1_power=tf.pow(tf.cast(self.beta_1, dtype), step),
            beta2_power=tf.pow(tf.cast(self.beta_2, dtype), step),
            lr=tf.cast(learning_rate, dtype),
            beta1=tf.cast(self.beta_1, dtype),
            beta2=tf.cast(self.beta_2, dtype),
            epsilon=tf.cast(self.epsilon, dtype),
            grad=tf.cast(gradient, dtype))


def _handle(variable):
    """The resource handle of a Keras variable's TensorFlow variable (under a strategy's
    `update`, the current device's copy)."""
    return getattr(variable, "value", variable).handle


__all__ = ["FusedAdamUpdate"]
