"""BERT's optimizer: AdamW with decoupled weight decay (not on LayerNorm or biases), the
warmup + linear decay schedule, and gradient clipping at global norm 1.0."""

from __future__ import annotations

import keras

from keras_bert.training.schedules import WarmupPolynomialDecay

# Variable names (Keras' short names) that get no weight decay: LayerNorm scale/offset, biases.
NO_DECAY = ("gamma", "beta", "bias")


def create_optimizer(learning_rate: float = 1e-4, total_steps: int = 10000,
                     warmup_steps: int | None = None, weight_decay: float = 0.01,
                     end_learning_rate: float = 0.0, clip_global_norm: float | None = 1.0,
                     beta_1: float = 0.9, beta_2: float = 0.999, epsilon: float = 1e-6,
                     no_decay: tuple[str, ...] = NO_DECAY) -> keras.optimizers.AdamW:
    """The optimizer of the BERT paper, as a `keras.optimizers.AdamW`.

    `warmup_steps` defaults to 10% of `total_steps` (the fine-tuning recipe; the paper's
    pretraining used 10,000 of 1,000,000). Unlike the original `AdamWeightDecayOptimizer`,
    Keras' AdamW applies Adam's bias correction; it matters only for the first few hundred
    steps, which warmup already damps.
    """
    if warmup_steps is None:
        warmup_steps = int(0.1 * total_steps)
    schedule = WarmupPolynomialDecay(learning_rate, total_steps, warmup_steps,
                                     end_learning_rate)
    optimizer = keras.optimizers.AdamW(
        learning_rate=schedule, weight_decay=weight_decay, beta_1=beta_1, beta_2=beta_2,
        epsilon=epsilon, global_clipnorm=clip_global_norm)
    optimizer.exclude_from_weight_decay(var_names=list(no_decay))
    return optimizer
