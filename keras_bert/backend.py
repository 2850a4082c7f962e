"""Which Keras backend this process runs: the one question every layer may ask.

The layers and models are `keras.ops` code for any backend; where one backend has a better
kernel or needs a check the others lack (fused attention on JAX, a graph-time assertion on
TensorFlow), the code asks here. It imports neither TensorFlow nor JAX.
`keras_bert.training.backends` answers the training questions (distribution scope,
replicas, devices, XLA) on top of it.
"""

from __future__ import annotations

# Keras is imported inside `name`: the command line imports this module (through
# `keras_bert.training.precision`, for its choices) and must start without Keras, which
# imports its backend.


def name() -> str:
    """The Keras backend this process runs: `tensorflow`, `jax`, `torch` or `numpy`."""
    import keras

    return keras.backend.backend()


def is_tensorflow() -> bool:
    """Whether Keras runs on TensorFlow (the package's default)."""
    return name() == "tensorflow"


def is_jax() -> bool:
    """Whether Keras runs on JAX."""
    return name() == "jax"


__all__ = ["is_jax", "is_tensorflow", "name"]
