"""Batches of featurised examples: what the kinds' `fit` streams are made of.

`epoch_shuffled_batches` orders each epoch by a permutation seeded by `(seed, epoch)`, so a
resumed fit that skips the batches it trained on sees exactly what the uninterrupted fit saw.
"""

from __future__ import annotations

import numpy as np
import tensorflow as tf


def featurise_in_chunks(items: list, chunk_size: int, featurise) -> dict[str, np.ndarray]:
    """`featurise(chunk) -> {name: tensor}` over `items` in chunks of `chunk_size`; the
    rows of each name concatenated in order (windowed tasks: one row per window)."""
    parts: dict[str, list] = {}
    for begin in range(0, len(items), chunk_size):
        for name, value in featurise(items[begin:begin + chunk_size]).items():
            parts.setdefault(name, []).append(np.asarray(value))
    return {name: np.concatenate(values) for name, values in parts.items()}


def epoch_shuffled_batches(tensors, count: int, batch_size: int, seed: int,
                           drop_remainder: bool = False) -> tf.data.Dataset:
    """An endless stream of batches of `tensors` (a nest of arrays with `count` rows):
    epoch after epoch, each in the order of a permutation seeded by `(seed, epoch)`.

    Batch k depends on k alone, not on how many iterators were made before (unlike
    `shuffle(reshuffle_each_iteration=True)`), so a resumed run that skips the batches it
    has trained on sees exactly what the uninterrupted run saw.
    """
    tensors = tf.nest.map_structure(tf.convert_to_tensor, tensors)
    seed = tf.constant(seed, tf.int64)

    def epoch(e):
        order = tf.random.experimental.stateless_shuffle(tf.range(count, dtype=tf.int64),
                                                         seed=tf.stack([seed, e]))
        return tf.data.Dataset.from_tensor_slices(order).batch(batch_size,
                                                               drop_remainder=drop_remainder)

    return tf.data.Dataset.counter().flat_map(epoch).map(
        lambda rows: tf.nest.map_structure(lambda t: tf.gather(t, rows), tensors))


def examples_dataset(inputs: dict, targets, batch_size: int,
                     shuffle_seed: int | None = None,
                     drop_remainder: bool = False) -> tf.data.Dataset:
    """`(inputs, targets)` batches of featurised examples: one pass in order, or, with
    `shuffle_seed`, endless shuffled epochs (`epoch_shuffled_batches`)."""
    if shuffle_seed is not None:
        count = len(tf.nest.flatten(inputs)[0])
        return epoch_shuffled_batches((inputs, targets), count, batch_size, shuffle_seed,
                                      drop_remainder)
    return tf.data.Dataset.from_tensor_slices((inputs, targets)).batch(
        batch_size, drop_remainder=drop_remainder)
