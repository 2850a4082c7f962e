"""Pretraining TFRecords: the original feature names, sharding, and a lossless round trip."""

import numpy as np
import pytest
import tensorflow as tf

from keras_bert.pretraining.tfrecord import read_examples, write_examples

SEQ, PRED = 12, 3


def _batch(rng, n):
    return {"input_word_ids": rng.integers(0, 1000, (n, SEQ)),
            "input_mask": rng.integers(0, 2, (n, SEQ)),
            "input_type_ids": rng.integers(0, 2, (n, SEQ)),
            "masked_lm_positions": rng.integers(0, SEQ, (n, PRED)),
            "masked_lm_ids": rng.integers(0, 1000, (n, PRED)),
            "masked_lm_weights": rng.integers(0, 2, (n, PRED)).astype(np.float32),
            "next_sentence_labels": rng.integers(0, 2, (n,))}


def test_round_trip_over_shards(tmp_path):
    rng = np.random.default_rng(0)
    batches = [_batch(rng, 7), _batch(rng, 5)]
    paths = write_examples(batches, str(tmp_path / "train.tfrecord"), num_shards=3)
    assert [p.rsplit("/", 1)[1] for p in paths] == [
        f"train.tfrecord-0000{i}-of-00003" for i in range(3)]
    counts = [sum(1 for _ in tf.data.TFRecordDataset(p)) for p in paths]
    assert counts == [4, 4, 4]  # round-robin
    read = list(read_examples(str(tmp_path / "train.tfrecord-*"), SEQ, PRED, batch_size=100,
                              seed=1).as_numpy_iterator())[0]
    expected = {k: np.concatenate([b[k] for b in batches]) for k in batches[0]}
    # Shards interleave the order: compare as sets of rows keyed by their ids.
    order_read = np.lexsort(read["input_word_ids"].T)
    order_expected = np.lexsort(expected["input_word_ids"].T)
    for name, values in expected.items():
        assert read[name].dtype == (np.float32 if name == "masked_lm_weights" else np.int32)
        np.testing.assert_array_equal(read[name][order_read], values[order_expected])


def test_reads_the_original_feature_names(tmp_path):
    """A record built by hand with the names Google's script writes."""
    def ints(v):
        return tf.train.Feature(int64_list=tf.train.Int64List(value=v))

    feature = {"input_ids": ints([101, 7, 102] + [0] * (SEQ - 3)),
               "input_mask": ints([1, 1, 1] + [0] * (SEQ - 3)),
               "segment_ids": ints([0] * SEQ), "masked_lm_positions": ints([1, 0, 0]),
               "masked_lm_ids": ints([9, 0, 0]),
               "masked_lm_weights": tf.train.Feature(
                   float_list=tf.train.FloatList(value=[1.0, 0.0, 0.0])),
               "next_sentence_labels": ints([1])}
    example = tf.train.Example(features=tf.train.Features(feature=feature))
    with tf.io.TFRecordWriter(str(tmp_path / "g.tfrecord")) as writer:
        writer.write(example.SerializeToString())
    batch = next(iter(read_examples(str(tmp_path / "g.tfrecord"), SEQ, PRED, batch_size=1)))
    assert batch["input_word_ids"].numpy()[0, :3].tolist() == [101, 7, 102]
    assert batch["masked_lm_ids"].numpy()[0].tolist() == [9, 0, 0]
    assert batch["next_sentence_labels"].numpy().tolist() == [1]


def test_missing_files(tmp_path):
    with pytest.raises(FileNotFoundError, match="No TFRecord files match"):
        read_examples(str(tmp_path / "nothing-*"), SEQ, PRED, 2)
