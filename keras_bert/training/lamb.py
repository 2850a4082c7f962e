"""LAMB (You et al. 2019, arXiv:1904.00962, Algorithm 2) as a Keras optimizer.

Per variable `w` with gradient `g` at step `t` (counting from 1):

    m = beta_1 * m + (1 - beta_1) * g          v = beta_2 * v + (1 - beta_2) * g**2
    r = (m / (1 - beta_1**t)) / (sqrt(v / (1 - beta_2**t)) + epsilon)
    u = r + weight_decay * w                    (not for excluded variables)
    w = w - lr * (||w|| / ||u||) * u            (ratio 1 when either norm is 0, and for
                                                 excluded variables)

The weight decay is part of the update the trust ratio scales (decoupled from the moments).
As in Google's LAMB (ALBERT's `lamb_optimizer.py`, TF Addons / Model Garden `LAMB`: the
variables excluded from layer adaptation default to those excluded from weight decay) and
NVIDIA's (apex `FusedLAMB`, `use_nvlamb=False`: no trust ratio for the parameter groups
without weight decay), LayerNorm and bias variables get neither decay nor a trust ratio.

`keras.optimizers.Lamb` (Keras 3.15) is not this algorithm: it applies the weight decay
outside the trust-ratio update (Keras' generic decoupled decay, `w -= lr * wd * w`), its
trust ratio is `||w|| / ||r||` without the decay term, and it cannot exclude variables from
the trust ratio.
"""

from __future__ import annotations

import re

import keras
from keras import ops

from keras_bert.training.dense_gradients import DenseGradients


@keras.saving.register_keras_serializable(package="keras_bert")
class Lamb(DenseGradients, keras.optimizers.Optimizer):
    """LAMB with decoupled weight decay inside the layer-wise trust ratio.

    `exclude_from_weight_decay(var_names=[...])` (Keras' own method) names the variables
    without decay; `exclude_from_layer_adaptation(var_names=[...])` those without the trust
    ratio, by default the same ones. Gradient clipping, loss scaling and the learning-rate
    schedule are Keras' (`global_clipnorm=1.0` clips the gradient before the moments, as
    NVIDIA's BERT recipe does).
    """

    def __init__(self, learning_rate=1e-3, beta_1: float = 0.9, beta_2: float = 0.999,
                 epsilon: float = 1e-6, weight_decay: float | None = 0.01, name: str = "lamb",
                 **kwargs):
        super().__init__(learning_rate=learning_rate, weight_decay=weight_decay, name=name,
                         **kwargs)
        self.beta_1 = beta_1
        self.beta_2 = beta_2
        self.epsilon = epsilon
        self._adaptation_names: list[str] | None = None  # None: the weight decay exclusions
        self._adaptation_cache: dict = {}

    def build(self, var_list):
        if self.built:
            return
        super().build(var_list)
        self._momentums = [self.add_variable_from_reference(v, name="momentum")
                           for v in var_list]
        self._velocities = [self.add_variable_from_reference(v, name="velocity")
                            for v in var_list]

    def exclude_from_layer_adaptation(self, var_names: list[str] | None = None) -> None:
        """Variables whose name contains a match of one of `var_names` (regular expressions,
        as for `exclude_from_weight_decay`) get no trust ratio. Call before `build`."""
        if self.built:
            raise ValueError("exclude_from_layer_adaptation() must be called before the "
                             "optimizer is built")
        self._adaptation_names = list(var_names or [])
        self._adaptation_cache = {}

    def _use_layer_adaptation(self, variable) -> bool:
        if self._adaptation_names is None:
            return self._use_weight_decay(variable)
        key = self._var_key(variable)
        if key not in self._adaptation_cache:
            pattern = "|".join(self._adaptation_names)
            self._adaptation_cache[key] = not (pattern and re.search(pattern, variable.name))
        return self._adaptation_cache[key]

    def _apply_weight_decay(self, variables):
        """Nothing: the decay is part of the update (`update_step`), under the trust ratio."""

    def update_step(self, gradient, variable, learning_rate):
        dtype = variable.dtype
        lr = ops.cast(learning_rate, dtype)
        gradient = ops.cast(gradient, dtype)  # dense: `DenseGradients`
        step = ops.cast(self.iterations + 1, dtype)
        beta_1 = ops.cast(self.beta_1, dtype)
        beta_2 = ops.cast(self.beta_2, dtype)
        m = self._momentums[self._get_variable_index(variable)]
        v = self._velocities[self._get_variable_index(variable)]
        self.assign(m, beta_1 * m + (1.0 - beta_1) * gradient)
        self.assign(v, beta_2 * v + (1.0 - beta_2) * ops.square(gradient))
        m_hat = m / (1.0 - ops.power(beta_1, step))
        v_hat = v / (1.0 - ops.power(beta_2, step))
        update = m_hat / (ops.sqrt(v_hat) + ops.cast(self.epsilon, dtype))
        weights = ops.convert_to_tensor(variable)
        if self.weight_decay and self._use_weight_decay(variable):
            update = update + ops.cast(self.weight_decay, dtype) * weights
        if self._use_layer_adaptation(variable):
            w_norm = ops.sqrt(ops.sum(ops.square(weights)))
            u_norm = ops.sqrt(ops.sum(ops.square(update)))
            ratio = ops.where(ops.logical_and(w_norm > 0, u_norm > 0),
                              w_norm / ops.maximum(u_norm, 1e-30), ops.ones_like(w_norm))
            update = ratio * update
        self.assign_sub(variable, lr * update)

    def get_config(self):
        config = super().get_config()
        config.update({"beta_1": self.beta_1, "beta_2": self.beta_2, "epsilon": self.epsilon})
        return config


__all__ = ["Lamb"]
