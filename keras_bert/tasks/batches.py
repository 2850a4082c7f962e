"""Batches of featurised examples: what the kinds' `fit`, `evaluate` and validation streams
are made of, and the shape of each batch (`Batching`).

`epoch_shuffled_batches` orders each epoch by a permutation seeded by `(seed, epoch)`, so a
resumed fit that skips the batches it trained on sees exactly what the uninterrupted fit saw.

Every kind packs its rows (or windows) at the sequence length. A batch then computes only
up to its longest row, rounded up to one of a few length buckets (the export's XLA
buckets: `length_buckets`), so that XLA, JAX and TPUs compile a bounded number of step
shapes while a fine-tuning batch of short texts no longer computes mostly padding. The
rows are right-padded, so cutting the padding changes no real position's output.
"""

from __future__ import annotations

import dataclasses

import numpy as np
import tensorflow as tf

from keras_bert.training.stream_options import fit_stream

XLA_MIN_BUCKET = 16
# Batches per chunk when `group_by_length=True`: Hugging Face's `group_by_length` sorts
# chunks ("megabatches") of 50 batches.
DEFAULT_GROUP_CHUNK = 50
BUCKET_CHOICES = ("auto", "longest", "full")


def length_buckets(longest: int) -> list[int]:
    """The sequence lengths an XLA export compiles for, and `fit`'s batches are cut to:
    every multiple of 16 up to 128, of 32 up to 256, then of 128 (at most 12%, 20%, 33%
    padding); the last one is `longest`."""
    buckets, bucket = [], XLA_MIN_BUCKET
    while bucket < longest:
        buckets.append(bucket)
        bucket += 16 if bucket < 128 else 32 if bucket < 256 else 128
    return buckets + [max(int(longest), 1)]


@dataclasses.dataclass(frozen=True)
class Batching:
    """The shape of the batches `fit` trains on (and `evaluate` scores).

    `length_buckets`: `"auto"` (the default): each batch is cut to its longest row, rounded
    up to the next of `length_buckets(seq_length)` where the step is compiled for each
    shape (XLA, JAX), and not rounded where it is not (TensorFlow without XLA runs any
    shape in one traced graph, as on CPUs by default); `"longest"`: never rounded;
    `"full"`: every batch at the sequence length (static shapes, as a TPU wants; what every
    batch was before); or the ascending lengths themselves, the last one the sequence
    length. Under buckets, a batch with fewer rows than the batch size (an epoch's last)
    stays at the sequence length, so one stream has at most one more step shape than there
    are buckets.

    `group_by_length`: 0 (off, the default) or `k`: each epoch's shuffled rows are sorted
    by length within chunks of `k` batches before they are cut into batches, and the
    batches' order is shuffled again, both seeded by `(seed, epoch)` (Hugging Face's
    `group_by_length`; `True` is its 50 batches). Rows of similar length share a batch,
    so less padding is computed; an epoch holds the same rows either way.
    """

    length_buckets: str | tuple[int, ...] = "auto"
    group_by_length: int = 0

    def __post_init__(self):
        buckets = self.length_buckets
        if isinstance(buckets, str):
            if buckets not in BUCKET_CHOICES:
                raise ValueError(f"length_buckets is {', '.join(map(repr, BUCKET_CHOICES))} "
                                 f"or a list of lengths, got {buckets!r}")
        else:
            lengths = tuple(int(b) for b in buckets)
            if not lengths or any(b < 1 for b in lengths) or list(lengths) != sorted(
                    set(lengths)):
                raise ValueError(f"length_buckets {list(buckets)} must be increasing "
                                 "positive lengths")
            object.__setattr__(self, "length_buckets", lengths)
        group = self.group_by_length
        if isinstance(group, bool):
            group = DEFAULT_GROUP_CHUNK if group else 0
        if not isinstance(group, (int, np.integer)) or group < 0:
            raise ValueError(f"group_by_length is a number of batches per chunk (0: off), "
                             f"got {self.group_by_length!r}")
        object.__setattr__(self, "group_by_length", int(group))

    @classmethod
    def of(cls, value: Batching | None) -> Batching:
        """`value`, or the default where it is None."""
        return cls() if value is None else value

    def buckets(self, seq_length: int, per_shape: bool | None = None) -> list[int]:
        """The lengths batches of rows packed at `seq_length` are cut to (`[seq_length]`:
        not cut; every length: cut to the longest row); a list that does not end at
        `seq_length` is an error naming both. `per_shape`: whether the step compiles one
        program per shape (`"auto"`'s choice; None: the backend's default,
        `keras_bert.training.backends.compiles_per_shape`)."""
        if self.length_buckets == "auto":
            if per_shape is None:
                from keras_bert.training.backends import compiles_per_shape

                per_shape = compiles_per_shape()
            return length_buckets(seq_length) if per_shape else list(range(1, seq_length + 1))
        if self.length_buckets == "longest":
            return list(range(1, seq_length + 1))
        if self.length_buckets == "full":
            return [int(seq_length)]
        if self.length_buckets[-1] != seq_length:
            raise ValueError(f"length_buckets {list(self.length_buckets)} must end at the "
                             f"sequence length {seq_length}")
        return list(self.length_buckets)

    def resolved(self, seq_length: int, per_shape: bool, static: bool = False) -> Batching:
        """This batching with `"auto"` decided: full-length batches where every batch must
        have one shape (`static`: a TPU compiles one program), the export's buckets where
        the step compiles one program per shape (`per_shape`: XLA, JAX), else cut to the
        longest row. An explicit choice is kept."""
        if self.length_buckets != "auto":
            return self
        if static:
            return dataclasses.replace(self, length_buckets="full")
        return dataclasses.replace(self, length_buckets=tuple(length_buckets(seq_length))
                                   if per_shape else "longest")

    def describe(self) -> dict:
        """JSON values (what a resumable fit records)."""
        buckets = self.length_buckets
        return {"length_buckets": buckets if isinstance(buckets, str) else list(buckets),
                "group_by_length": self.group_by_length}


def featurise_in_chunks(items: list, chunk_size: int, featurise) -> dict:
    """`featurise(chunk) -> {name: tensor}` (or a nest of such dicts) over `items` in
    chunks of `chunk_size`; the rows of each leaf concatenated in order (windowed tasks:
    one row per window)."""
    parts = [tf.nest.map_structure(np.asarray, featurise(items[begin:begin + chunk_size]))
             for begin in range(0, len(items), chunk_size)]
    return tf.nest.map_structure(lambda *chunks: np.concatenate(chunks), *parts)


def row_lengths(inputs) -> np.ndarray:
    """Each row's length: one past its last unmasked position, over every `input_mask` in
    the nest `inputs` (an embedder's pair: the longer side)."""
    masks = [np.asarray(mask) for path, mask in _flatten_with_names(inputs)
             if path[-1] == "input_mask"]
    if not masks:
        raise ValueError("the inputs have no input_mask to measure rows by")
    positions = np.arange(1, masks[0].shape[1] + 1)
    return np.max([np.max(np.where(m != 0, positions, 0), axis=1) for m in masks], axis=0)


def epoch_shuffled_batches(tensors, count: int, batch_size: int, seed: int,
                           drop_remainder: bool = False, lengths: np.ndarray | None = None,
                           group_chunk: int = 0) -> tf.data.Dataset:
    """An endless stream of batches of `tensors` (a nest of arrays with `count` rows):
    epoch after epoch, each in the order of a permutation seeded by `(seed, epoch)`; with
    `group_chunk` and each row's `lengths`, rows of similar length grouped into batches
    (`Batching.group_by_length`).

    Batch k depends on k alone, not on how many iterators were made before (unlike
    `shuffle(reshuffle_each_iteration=True)`), so a resumed run that skips the batches it
    has trained on sees exactly what the uninterrupted run saw.
    """
    tensors = tf.nest.map_structure(tf.convert_to_tensor, tensors)
    seed = tf.constant(seed, tf.int64)
    grouped = group_chunk > 0 and count >= batch_size
    if grouped:
        lengths = tf.constant(np.asarray(lengths), tf.int64)

    def epoch(e):
        order = tf.random.experimental.stateless_shuffle(tf.range(count, dtype=tf.int64),
                                                         seed=tf.stack([seed, e]))
        if grouped:
            order = _grouped(order, lengths, count, batch_size, group_chunk,
                             tf.stack([seed, -1 - e]))
        return tf.data.Dataset.from_tensor_slices(order).batch(batch_size,
                                                               drop_remainder=drop_remainder)

    return tf.data.Dataset.counter().flat_map(epoch).map(
        lambda rows: tf.nest.map_structure(lambda t: tf.gather(t, rows), tensors))


def _grouped(order, lengths, count: int, batch_size: int, chunk_batches: int, batch_seed):
    """`order` with its full batches' rows sorted by length within chunks of
    `chunk_batches` batches, those batches then in a seeded random order; the rows of the
    last, partial batch stay last, as the permutation drew them."""
    full = count // batch_size * batch_size
    head, tail = order[:full], order[full:]
    chunk = tf.range(full, dtype=tf.int64) // (chunk_batches * batch_size)
    key = chunk * (tf.reduce_max(lengths) + 1) + tf.gather(lengths, head)
    head = tf.gather(head, tf.argsort(key, stable=True))
    batches = tf.reshape(head, [-1, batch_size])
    shuffled = tf.random.experimental.stateless_shuffle(
        tf.range(full // batch_size, dtype=tf.int64), seed=batch_seed)
    return tf.concat([tf.reshape(tf.gather(batches, shuffled), [-1]), tail], axis=0)


def cut_to_bucket(inputs, targets, buckets: list[int], batch_size: int,
                  per_token_targets: bool = False, partial_whole: bool = True):
    """A batch's `inputs` (every leaf `[rows, seq_length]`) and, with `per_token_targets`,
    its `targets`, cut to the first of `buckets` that holds the batch's longest row; with
    `partial_whole`, a batch of fewer than `batch_size` rows stays whole (see
    `Batching`)."""
    leaves = tf.nest.flatten(inputs)
    masks = [mask for path, mask in _flatten_with_names(inputs) if path[-1] == "input_mask"]
    positions = tf.range(1, tf.shape(masks[0])[1] + 1)
    longest = tf.reduce_max([tf.reduce_max(tf.where(tf.not_equal(m, 0), positions, 0))
                             for m in masks])
    table = tf.constant(buckets, tf.int32)
    bucket = tf.reduce_min(tf.where(table >= longest, table, table[-1]))
    if partial_whole:
        bucket = tf.where(tf.shape(leaves[0])[0] < batch_size, table[-1], bucket)

    def cut(t):
        return t[:, :bucket]

    inputs = tf.nest.map_structure(cut, inputs)
    if per_token_targets:
        targets = tf.nest.map_structure(cut, targets)
    return inputs, targets


def examples_dataset(inputs: dict, targets, batch_size: int,
                     shuffle_seed: int | None = None, drop_remainder: bool = False,
                     batching: Batching | None = None,
                     per_token_targets: bool = False) -> tf.data.Dataset:
    """`(inputs, targets)` batches of featurised examples (`inputs`: a dict, or a dict of
    dicts, of `[count, seq_length]` arrays): one pass in order, or, with `shuffle_seed`,
    endless shuffled epochs (`epoch_shuffled_batches`), each batch shaped by `batching`
    (`per_token_targets`: the targets have a position axis, cut with the inputs)."""
    batching = Batching.of(batching)
    count = len(tf.nest.flatten(inputs)[0])
    seq_length = int(tf.nest.flatten(inputs)[0].shape[1])
    buckets = batching.buckets(seq_length)
    if shuffle_seed is not None:
        lengths = row_lengths(inputs) if batching.group_by_length else None
        ds = epoch_shuffled_batches((inputs, targets), count, batch_size, shuffle_seed,
                                    drop_remainder, lengths, batching.group_by_length)
    else:
        ds = tf.data.Dataset.from_tensor_slices((inputs, targets)).batch(
            batch_size, drop_remainder=drop_remainder)
    if len(buckets) == 1:
        return fit_stream(ds)
    # Where every length is a bucket no program is compiled per shape: a partial batch is
    # cut as well.
    partial_whole = len(buckets) < seq_length
    return fit_stream(ds.map(lambda x, y: cut_to_bucket(x, y, buckets, batch_size,
                                                        per_token_targets, partial_whole),
                             num_parallel_calls=tf.data.AUTOTUNE, deterministic=True))


def _flatten_with_names(nest) -> list[tuple[tuple, object]]:
    """`(path, leaf)` pairs of a nest of dicts (paths of keys)."""
    if isinstance(nest, dict):
        return [((key, *path), leaf) for key, value in nest.items()
                for path, leaf in _flatten_with_names(value)]
    return [((), nest)]
