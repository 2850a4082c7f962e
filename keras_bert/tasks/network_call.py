"""A task network called on the Keras backend that runs it: where the serving functions'
path differs between backends, and nowhere else.

The serving functions (`keras_bert.tasks.serving`) read text with TensorFlow ops on every
backend (TF Text's tokenizer is the one preprocessing of a model) and hand the packed ids
to the network through the call made here:

- on TensorFlow, `model(inputs, training=False)`: a Keras call inside the serving
  function's graph, traced once for the export and for `predict`;
- on another backend (JAX), where nothing is exported and the serving functions run
  eagerly in this process (`keras_bert.tasks.in_process`), the model's own compiled
  `predict_on_batch` on NumPy arrays. The arrays are padded to a length bucket and to a
  power-of-two number of rows (`padded_shape`), so that the backend compiles one function
  per bucket shape and not one per request, and the outputs are cut back to the rows and
  positions asked for. An XLA export pads its graph to the same shapes
  (`keras_bert.tasks.serving.pad_to_bucket`).

This module holds no TensorFlow code: the ids come in as anything `numpy.asarray` reads (the
serving function's eager tensors), the outputs go back as NumPy arrays, which the serving
function's own ops take as they are.
"""

from __future__ import annotations

from collections.abc import Callable

import keras
import numpy as np

from keras_bert.tasks.batches import length_buckets
from keras_bert.training.backends import is_tensorflow


def network_call(model, longest: int, per_token: bool) -> Callable:
    """`inputs -> outputs` of the Keras model `model` (the three id arrays in, as a dict)
    on this process's backend; `longest`: the serving length (the last length bucket);
    `per_token`: whether the outputs have a position axis (axis 1) to cut back after
    padding."""
    if is_tensorflow():
        def call(inputs):
            return model(inputs, training=False)
        return call
    return PaddedCall(model, longest, per_token)


class PaddedCall:
    """The model's own `predict_on_batch` over NumPy arrays padded to few shapes (see the
    module docstring): a backend that compiles per shape (JAX) compiles once per length
    bucket and power-of-two batch."""

    def __init__(self, model, longest: int, per_token: bool):
        self.model = model
        self.longest = int(longest)
        self.per_token = per_token

    def __call__(self, inputs: dict):
        arrays = {name: np.asarray(value) for name, value in inputs.items()}
        batch, length = arrays["input_word_ids"].shape
        outputs = self.model.predict_on_batch(pad_arrays(arrays, self.longest))

        def cut(value):
            value = np.asarray(value)
            return value[:batch, :length] if self.per_token else value[:batch]
        return keras.tree.map_structure(cut, outputs)


def padded_shape(batch: int, length: int, longest: int) -> tuple[int, int]:
    """`(rows, positions)` a batch of `batch` rows of `length` positions is padded to: the
    next of `length_buckets(longest)` (a longer row keeps its length), and the next power
    of two of the rows (0 stays 0)."""
    buckets = length_buckets(longest)
    bucket = next((b for b in buckets if b >= length), buckets[-1])
    rows = 0 if batch == 0 else 1 << (int(batch) - 1).bit_length()
    return rows, max(bucket, int(length))


def pad_arrays(inputs: dict[str, np.ndarray], longest: int) -> dict[str, np.ndarray]:
    """The packed `[batch, length]` arrays padded to `padded_shape`: positions with 0
    (padding, masked out), rows with copies of the first. The caller keeps the first rows
    and positions of the outputs."""
    batch, length = inputs["input_word_ids"].shape
    rows, bucket = padded_shape(batch, length, longest)
    take = np.concatenate([np.arange(batch), np.zeros(rows - batch, np.int64)])
    return {name: np.pad(value[take], [(0, 0), (0, bucket - length)])
            for name, value in inputs.items()}
