"""BERT's learning-rate schedule: linear warmup, then polynomial (linear) decay."""

import keras
from keras import ops


@keras.saving.register_keras_serializable(package="keras_bert")
class WarmupPolynomialDecay(keras.optimizers.schedules.LearningRateSchedule):
    """`peak * step / warmup_steps` during warmup, then polynomial decay to `end_learning_rate`
    at `decay_steps` (power 1 = linear, as in BERT), constant after.

    `decay_steps` counts from step 0 (the total number of training steps), as in the original
    `optimization.py`, where the decay runs over all steps and warmup overrides its start.
    `start_step` is the optimizer step at which the schedule's step 0 falls: a second
    pretraining phase continues the first one's optimizer (its step count, which Adam's bias
    correction uses) under a schedule of its own.
    """

    def __init__(self, peak_learning_rate: float, decay_steps: int, warmup_steps: int = 0,
                 end_learning_rate: float = 0.0, power: float = 1.0, start_step: int = 0):
        if decay_steps < 1:
            raise ValueError(f"decay_steps must be positive, got {decay_steps}")
        if not 0 <= warmup_steps <= decay_steps:
            raise ValueError(f"warmup_steps ({warmup_steps}) must be in [0, decay_steps]")
        if start_step < 0:
            raise ValueError(f"start_step must be >= 0, got {start_step}")
        self.peak_learning_rate = float(peak_learning_rate)
        self.decay_steps = int(decay_steps)
        self.warmup_steps = int(warmup_steps)
        self.end_learning_rate = float(end_learning_rate)
        self.power = float(power)
        self.start_step = int(start_step)

    def __call__(self, step):
        step = ops.cast(step, "float32")
        if self.start_step:
            step = ops.maximum(step - float(self.start_step), 0.0)
        progress = ops.minimum(step, self.decay_steps) / self.decay_steps
        decayed = (self.peak_learning_rate - self.end_learning_rate) * \
            ops.power(1.0 - progress, self.power) + self.end_learning_rate
        if self.warmup_steps == 0:
            return decayed
        warmup = self.peak_learning_rate * step / self.warmup_steps
        return ops.where(step < self.warmup_steps, warmup, decayed)

    def get_config(self):
        return {"peak_learning_rate": self.peak_learning_rate, "decay_steps": self.decay_steps,
                "warmup_steps": self.warmup_steps, "end_learning_rate": self.end_learning_rate,
                "power": self.power, "start_step": self.start_step}
