"""The in-process engine: a model's serving functions answering in this process, for
`predict`, `evaluate` of texts read in windows, `keras-bert predict` and `encode`.

The functions are the export's (`keras_bert.tasks.serving`). On TensorFlow they run as the
export holds them, traced once per model (`ServingModule.traced`); on another Keras backend
nothing is exported and they run eagerly, their text ops TensorFlow's and their network the
backend's own (`keras_bert.tasks.network_call`). Requests go through in batches; the
outputs come back as NumPy arrays (`run_in_batches`), strings decoded where asked
(`decoded`, `text_of`).
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import tensorflow as tf

from keras_bert.training.backends import is_tensorflow

PREDICT_BATCH = 32  # texts per call when answering in process


def answering_function(module, name: str) -> Callable:
    """The function of the signature `name` of `module` (a `ServingModule`) as this
    process runs it: on TensorFlow the concrete function the export holds (traced once per
    module); on another backend the endpoint itself, run eagerly."""
    if is_tensorflow():
        return module.traced(name).get_concrete_function()
    return module.endpoints()[name][0]


def run_in_batches(function, requests: dict[str, list], batch_size: int) -> dict[str, np.ndarray]:
    """`function(**batch)` over `requests` (name -> list of strings) in batches of
    `batch_size`; each output's batches concatenated (padded ones padded to the widest)."""
    count = len(next(iter(requests.values())))
    parts: dict[str, list[np.ndarray]] = {}
    for begin in range(0, count, batch_size):
        batch = {k: tf.constant(v[begin:begin + batch_size], tf.string)
                 for k, v in requests.items()}
        for name, value in function(**batch).items():
            parts.setdefault(name, []).append(value.numpy())
    return {name: _concatenate(values) for name, values in parts.items()}


def _concatenate(values: list[np.ndarray]) -> np.ndarray:
    if values[0].ndim < 2:
        return np.concatenate(values)
    width = max(v.shape[1] for v in values)
    padded = []
    for v in values:
        pad = np.zeros((v.shape[0], width - v.shape[1], *v.shape[2:]), v.dtype)
        padded.append(np.concatenate([v, pad], axis=1))
    return np.concatenate(padded)


def decoded(value: np.ndarray) -> np.ndarray:
    """A serving output with its bytes decoded to `str` (other outputs as they are)."""
    if value.dtype == object:
        return np.vectorize(text_of, otypes=[object])(value).astype(str)
    return value


def text_of(value) -> str:
    """A string output of a serving function as `str`."""
    return value.decode("utf-8") if isinstance(value, bytes) else str(value)
