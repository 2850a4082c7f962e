"""Pretraining TFRecords with the original BERT feature names, written in shards and read back.

Features (as Google's `create_pretraining_data.py` writes them, so existing files work):
`input_ids`, `input_mask`, `segment_ids` (int64 `[seq_length]`), `masked_lm_positions`,
`masked_lm_ids` (int64 `[max_predictions]`), `masked_lm_weights` (float `[max_predictions]`),
`next_sentence_labels` (int64 `[1]`). The reader renames the first three to the model's input
names (`input_word_ids`, `input_mask`, `input_type_ids`).
"""

from __future__ import annotations

import os
from collections.abc import Iterable

import numpy as np
import tensorflow as tf

from keras_bert.training.stream_options import fit_stream

# Original feature name -> the name our models and pipelines use.
RENAMES = {"input_ids": "input_word_ids", "input_mask": "input_mask",
           "segment_ids": "input_type_ids", "masked_lm_positions": "masked_lm_positions",
           "masked_lm_ids": "masked_lm_ids", "masked_lm_weights": "masked_lm_weights",
           "next_sentence_labels": "next_sentence_labels"}


def _int64(values) -> tf.train.Feature:
    return tf.train.Feature(int64_list=tf.train.Int64List(value=np.asarray(values).tolist()))


def _float(values) -> tf.train.Feature:
    return tf.train.Feature(float_list=tf.train.FloatList(value=np.asarray(values).tolist()))


def serialize_example(example: dict) -> bytes:
    """One `tf.train.Example` from a dict in our names (one row, NumPy or lists)."""
    features = {}
    for original, ours in RENAMES.items():
        value = np.reshape(example[ours], [-1])
        features[original] = _float(value) if original == "masked_lm_weights" else _int64(value)
    example = tf.train.Example(features=tf.train.Features(feature=features))
    return example.SerializeToString(deterministic=True)  # map order fixed: same bytes


def shard_paths(output: str, num_shards: int) -> list[str]:
    """`output` itself for one shard, else `output-00000-of-00004` style names."""
    if num_shards == 1:
        return [output]
    return [f"{output}-{i:05d}-of-{num_shards:05d}" for i in range(num_shards)]


def write_examples(batches: Iterable[dict], output: str, num_shards: int = 1) -> list[str]:
    """Writes batches of examples (dicts of `[batch, ...]` arrays in our names) round-robin
    over `num_shards` files; returns the paths. Files are written under a temporary name and
    renamed when complete."""
    paths = shard_paths(output, num_shards)
    os.makedirs(os.path.dirname(os.path.abspath(output)), exist_ok=True)
    writers = [tf.io.TFRecordWriter(p + ".incomplete") for p in paths]
    count = 0
    try:
        for batch in batches:
            rows = len(batch["input_word_ids"])
            for row in range(rows):
                example = {name: np.asarray(batch[name])[row] for name in RENAMES.values()}
                writers[count % num_shards].write(serialize_example(example))
                count += 1
    finally:
        for writer in writers:
            writer.close()
    for path in paths:
        os.replace(path + ".incomplete", path)
    return paths


def parse_spec(seq_length: int, max_predictions: int) -> dict:
    """The `tf.io.parse_example` spec of the original features."""
    spec = {name: tf.io.FixedLenFeature([seq_length], tf.int64)
            for name in ("input_ids", "input_mask", "segment_ids")}
    spec.update({
        "masked_lm_positions": tf.io.FixedLenFeature([max_predictions], tf.int64),
        "masked_lm_ids": tf.io.FixedLenFeature([max_predictions], tf.int64),
        "masked_lm_weights": tf.io.FixedLenFeature([max_predictions], tf.float32),
        "next_sentence_labels": tf.io.FixedLenFeature([1], tf.int64),
    })
    return spec


def read_examples(pattern: str, seq_length: int, max_predictions: int, batch_size: int,
                  shuffle_buffer: int = 0, seed: int | None = None, repeat: bool = False,
                  drop_remainder: bool = False) -> tf.data.Dataset:
    """Batched pretraining features from TFRecords matching `pattern`, in our names (int32)."""
    files = tf.io.gfile.glob(pattern)
    if not files:
        raise FileNotFoundError(f"No TFRecord files match {pattern}")
    ds = tf.data.Dataset.from_tensor_slices(sorted(files))
    if shuffle_buffer:
        ds = ds.shuffle(len(files), seed=seed)
    # In a fixed order unless shuffled without a seed: the held-out batches are the same on
    # every pass, and every process of a multi-process run reads the same global batches (a
    # process keeps its slice of each).
    ds = ds.interleave(tf.data.TFRecordDataset, cycle_length=min(len(files), 4),
                       num_parallel_calls=tf.data.AUTOTUNE,
                       deterministic=seed is not None or not shuffle_buffer)
    if repeat:
        ds = ds.repeat()
    if shuffle_buffer:
        ds = ds.shuffle(shuffle_buffer, seed=seed)
    spec = parse_spec(seq_length, max_predictions)

    def parse(serialized):
        parsed = tf.io.parse_example(serialized, spec)
        out = {RENAMES[k]: tf.cast(v, tf.int32) if v.dtype == tf.int64 else v
               for k, v in parsed.items()}
        out["next_sentence_labels"] = tf.squeeze(out["next_sentence_labels"], -1)
        return out

    return fit_stream(ds.batch(batch_size, drop_remainder=drop_remainder).map(
        parse, num_parallel_calls=tf.data.AUTOTUNE).prefetch(tf.data.AUTOTUNE))
