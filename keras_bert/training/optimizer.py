"""BERT's optimizers: AdamW (the paper's) or LAMB (the large-batch recipe of You et al.
2019), both with decoupled weight decay (not on LayerNorm or biases), the warmup + linear
decay schedule, and gradient clipping at global norm 1.0."""

from __future__ import annotations

import keras

from keras_bert.config import OPTIMIZERS  # noqa: F401 - read here by its users too
from keras_bert.training.backends import distribution_scope
from keras_bert.training.dense_gradients import DenseGradients
from keras_bert.training.fused_adam import FusedAdamUpdate
from keras_bert.training.lamb import Lamb
from keras_bert.training.schedules import WarmupPolynomialDecay

# Variable names (Keras' short names) that get no weight decay: LayerNorm scale/offset, biases
# (the MLM head's `output_bias` included). LAMB gives them no trust ratio either.
NO_DECAY = ("gamma", "beta", "bias")


@keras.saving.register_keras_serializable(package="keras_bert")
class AdamW(DenseGradients, FusedAdamUpdate, keras.optimizers.AdamW):
    """`keras.optimizers.AdamW` with embedding-lookup gradients summed per row before the
    clipping and the moments: Keras' own mishandles the repeated rows of a lookup's
    `tf.IndexedSlices` (see `keras_bert.training.dense_gradients`); on TensorFlow, each
    variable's update is one fused kernel (`keras_bert.training.fused_adam`)."""


def build_optimizer(model: keras.Model) -> None:
    """Creates the compiled optimizer's variables for the model's trainable weights now.

    Without a distribution strategy Keras (TF backend) leaves them to the first trace of the
    training step, and `tf.function` then traces the step a second time, without variable
    creation: seconds of tracing per `fit` (5 of 22 s for a tiny classifier's whole job).
    """
    if model.optimizer is not None and not model.optimizer.built:
        with distribution_scope(model):
            model.optimizer.build(model.trainable_variables)


def create_optimizer(learning_rate: float = 1e-4, total_steps: int = 10000,
                     warmup_steps: int | None = None, weight_decay: float = 0.01,
                     end_learning_rate: float = 0.0, clip_global_norm: float | None = 1.0,
                     beta_1: float = 0.9, beta_2: float = 0.999, epsilon: float = 1e-6,
                     no_decay: tuple[str, ...] = NO_DECAY, optimizer: str = "adamw",
                     start_step: int = 0) -> keras.optimizers.Optimizer:
    """The optimizer of the BERT paper (`optimizer="adamw"`, Keras' AdamW: see `AdamW`)
    or LAMB (`"lamb"`, `keras_bert.training.lamb.Lamb`), under `WarmupPolynomialDecay`.

    `warmup_steps` defaults to 10% of `total_steps` (the fine-tuning recipe; the paper's
    pretraining used 10,000 of 1,000,000). `start_step`: the optimizer step at which the
    schedule starts (a second pretraining phase continuing the first's optimizer). Unlike
    the original `AdamWeightDecayOptimizer`, Keras' AdamW applies Adam's bias correction (as
    LAMB's paper does); it matters only for the first few hundred steps, which warmup
    already damps.
    """
    if optimizer not in OPTIMIZERS:
        raise ValueError(f"optimizer must be one of {OPTIMIZERS}, got {optimizer!r}")
    if warmup_steps is None:
        warmup_steps = int(0.1 * total_steps)
    schedule = WarmupPolynomialDecay(learning_rate, total_steps, warmup_steps,
                                     end_learning_rate, start_step=start_step)
    kind = Lamb if optimizer == "lamb" else AdamW
    result = kind(learning_rate=schedule, weight_decay=weight_decay, beta_1=beta_1,
                  beta_2=beta_2, epsilon=epsilon, global_clipnorm=clip_global_norm)
    result.exclude_from_weight_decay(var_names=list(no_decay))  # Lamb: and the trust ratio
    return result
