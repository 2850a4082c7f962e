"""Keras callbacks the tests share: each step's loss, and a kill at a chosen step."""

from __future__ import annotations

import keras


class StepLosses(keras.callbacks.Callback):
    """Each training step's running loss, in order."""

    def __init__(self):
        super().__init__()
        self.losses: list[float] = []

    def on_train_batch_end(self, batch, logs=None):
        self.losses.append(float(logs["loss"]))


class Killed(Exception):
    """Raised by `KillAt`: what a kill of the training process would be."""


class KillAt(keras.callbacks.Callback):
    """Stops training (as a kill would) once the optimizer has taken `step` steps."""

    def __init__(self, step: int):
        super().__init__()
        self.step = step

    def on_train_batch_end(self, batch, logs=None):
        if int(self.model.optimizer.iterations.numpy()) == self.step:
            raise Killed
