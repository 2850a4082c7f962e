"""`word_windows` and friends (TensorFlow; fine-tuning, export and predict all run them)
against the readable Python reference
(`tests/tasks/token_classification/reference_word_windows.py`), against Python's
`str.split()`, and against the one-window alignment of the original recipe
(`tests/tasks/token_classification/reference_alignment.py`) on sentences that fit."""

from __future__ import annotations

import numpy as np
import pytest
import tensorflow as tf

from keras_bert.tasks.token_classification.word_windows import (
    IGNORE_LABEL,
    split_words,
    tokenize_words,
    word_windows,
)
from keras_bert.text import BertTokenizer
from tests.tasks.token_classification.reference_alignment import align_sentences
from tests.tasks.token_classification.reference_word_windows import sentence_windows

SPECIAL = {"cls": 2, "sep": 3, "pad": 0}
VOCAB = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "call", "me", "ish", "##mael", ".",
         "who", "?", "the", "whale", "sailed", "to", "sea"]
HARD = ["Call me  Ishmael.", "", "   ", "\tthe\u3000whale\x1cwho\u00a0sailed\u2028to sea ",
        "\u200b who \u200b", "naïve whale ÉTÉ", "nul\x00inside\x01 and \x00", "the " * 40]


def _random_sentences(rng, count):
    """Words as wordpiece ids: 1-4 pieces each (one word sometimes very long), 0-30 words."""
    sentences = []
    for _ in range(count):
        words = [list(rng.integers(5, 100, size=rng.integers(1, 5)))
                 for _ in range(rng.integers(0, 31))]
        if words and rng.random() < 0.2:
            words[rng.integers(len(words))] = list(rng.integers(5, 100, size=20))
        sentences.append(words)
    return sentences


def _ragged(sentences, inner=True):
    return tf.ragged.constant(sentences, dtype=tf.int32, ragged_rank=2 if inner else 1,
                              row_splits_dtype=tf.int64)


@pytest.mark.parametrize("length,doc_stride", [(8, 3), (9, 7), (9, 100), (16, 5), (3, 1)])
@pytest.mark.parametrize("fixed", [True, False])
def test_same_windows_as_the_reference(length, doc_stride, fixed):
    rng = np.random.default_rng(length * 100 + doc_stride)
    sentences = _random_sentences(rng, 24) + [[], [[7]]]
    labels = [[int(rng.integers(0, 5)) for _ in s] for s in sentences]
    got = word_windows(_ragged(sentences), length if fixed else None, doc_stride, **{
        f"{k}_id": v for k, v in SPECIAL.items()}, word_labels=tf.ragged.constant(
        labels, dtype=tf.int32), max_length=length)
    ids, label_rows, rows, words = [], [], [], []
    for i, (s, lab) in enumerate(zip(sentences, labels, strict=True)):
        ref = sentence_windows(s, length, doc_stride, SPECIAL, lab)
        offset = len(ids)
        ids += ref["ids"]
        label_rows += ref["labels"]
        rows += [i] * len(ref["ids"])
        words += [(offset + w, c) for w, c in ref["words"]]
    width = length if fixed else max(len(r) for r in ids)
    assert got["input_word_ids"].shape == (len(ids), width)
    np.testing.assert_array_equal(got["input_word_ids"], [r + [0] * (width - len(r)) for r in ids])
    np.testing.assert_array_equal(got["input_mask"], [[1] * len(r) + [0] * (width - len(r))
                                                      for r in ids])
    assert not got["input_type_ids"].numpy().any()
    np.testing.assert_array_equal(got["labels"], [r + [IGNORE_LABEL] * (width - len(r))
                                                  for r in label_rows])
    assert got["window_row"].numpy().tolist() == rows
    assert list(zip(got["word_window"].numpy().tolist(),
                    got["word_column"].numpy().tolist(), strict=True)) == words
    # Every word is read at its own first wordpiece.
    flat = [w[0] for s in sentences for w in s]
    assert got["input_word_ids"].numpy()[got["word_window"], got["word_column"]].tolist() == flat
    assert got["word_row_splits"].numpy().tolist() == np.cumsum(
        [0] + [len(s) for s in sentences]).tolist()


def test_split_words_is_str_split_with_byte_offsets():
    words, starts, ends = split_words(tf.constant(HARD))
    for i, text in enumerate(HARD):
        assert [w.decode() for w in words[i].numpy()] == text.split()
        raw = text.encode()
        assert [raw[s:e].decode() for s, e in zip(starts[i].numpy(), ends[i].numpy(),
                                                   strict=True)] == text.split()


def test_a_word_without_wordpieces_is_unk():
    tokenizer = BertTokenizer(VOCAB)
    pieces = tokenize_words(tokenizer, tf.ragged.constant([["\u200b", "call"], []]))
    assert pieces.to_list() == [[[1], [5]], []]


def test_sentences_that_fit_are_the_original_alignment():
    tokenizer = BertTokenizer(VOCAB)
    sentences = [t.split() for t in HARD[:-1]]
    labels = [[j % 3 for j in range(len(s))] for s in sentences]
    expected = align_sentences(tokenizer, sentences, 24, labels)
    words = tf.ragged.constant(sentences, dtype=tf.string)
    got = word_windows(tokenize_words(tokenizer, words), 24, 8, 2, 3, 0,
                       word_labels=tf.ragged.constant(labels, dtype=tf.int32))
    for name, value in expected.features().items():
        np.testing.assert_array_equal(got[name], value, name)
    np.testing.assert_array_equal(got["labels"], expected.labels)


def test_runs_in_a_dataset_map_and_a_traced_function():
    tokenizer = BertTokenizer(VOCAB)

    def featurise(text):
        words, _, _ = split_words(text)
        return word_windows(tokenize_words(tokenizer, words), None, 4, 2, 3, 0,
                            max_length=8)["input_word_ids"]

    traced = tf.function(featurise, input_signature=[tf.TensorSpec([None], tf.string)])
    eager = featurise(tf.constant(HARD))
    np.testing.assert_array_equal(traced(tf.constant(HARD)), eager)
    mapped = next(iter(tf.data.Dataset.from_tensor_slices(HARD).batch(len(HARD)).map(featurise)))
    np.testing.assert_array_equal(mapped, eager)


def test_bad_settings_are_named():
    with pytest.raises(ValueError, match="doc_stride must be positive"):
        word_windows(_ragged([[[5]]]), 8, 0, 2, 3, 0)
    with pytest.raises(ValueError, match="length of at least 3"):
        word_windows(_ragged([[[5]]]), 2, 1, 2, 3, 0)
