"""The LiteRT graphs' text steps (`keras_bert/export/litert_text.py`) against the
SavedModel's own (`keras_bert.text.doc_windows`, the tagger's `split_words`) and Python,
in TensorFlow: windows, the max-context rule's float64 ties, words and their offsets, row
ids. `test_litert_spans.py` runs them in LiteRT's interpreter, end to end."""

import numpy as np
import tensorflow as tf

from keras_bert.export.litert_text import (
    ContextRanks,
    cut,
    padded,
    padding_index,
    python_whitespace,
    row_ids,
    split_words,
    windows,
)
from keras_bert.tasks.token_classification.word_windows import split_words as saved_split
from keras_bert.text.doc_windows import doc_windows, max_context_window
from tests.text.test_tokenizer import HARD_CASES


def test_row_ids_are_value_rowids():
    for lengths in ([], [0], [3], [2, 0, 3], [0, 0, 1, 0], [5, 1, 0, 0, 2, 0]):
        want = tf.RaggedTensor.from_row_lengths(tf.zeros([sum(lengths)]),
                                                tf.constant(lengths, tf.int64))
        got = row_ids(tf.constant(lengths, tf.int32))
        assert got.numpy().tolist() == want.value_rowids().numpy().tolist(), lengths


def test_windows_are_doc_windows():
    num_tokens = tf.constant([0, 1, 7, 14, 15, 100, 33], tf.int32)
    for room, stride in ((14, 8), (5, 5), (30, 7), (3, 100)):
        rooms = tf.fill(tf.shape(num_tokens), room)
        got, want = windows(num_tokens, rooms, stride), doc_windows(num_tokens, rooms, stride)
        for name in ("example", "index", "start", "length", "count"):
            np.testing.assert_array_equal(getattr(got, name), getattr(want, name), name)
        np.testing.assert_array_equal(got.first, tf.cumsum(want.count, exclusive=True))


def test_context_ranks_break_ties_as_float64_does():
    """Every token of contexts whose last window is 100 or 200 tokens shorter than the
    others, where float64 rounding breaks ties of `min(left, right) + 0.01 * length` that
    exact arithmetic keeps (found by a search over lengths and strides): the window the
    SavedModel's rule picks, not the exact one."""
    ranks = ContextRanks(384)
    exact_differs = 0
    for room, step, n in ((193, 101, 194), (363, 202, 365), (194, 101, 599),
                          (194, 186, 466), (282, 279, 361), (14, 8, 200), (381, 128, 1000)):
        count = 1 + max(0, -((room - n) // step))
        position = np.arange(n)
        want = max_context_window(*(tf.constant(v, tf.int64) for v in (
            position, step, n, room, count))).numpy()
        got = ranks.best_window(tf.constant(position, tf.int32), step, n, room, count)
        np.testing.assert_array_equal(got, want, f"room {room}, step {step}, n {n}")
        exact_differs += int(np.sum(_exact_best(position, step, n, room, count) != want))
    assert exact_differs >= 10  # the cases hold the ties exact arithmetic would break


def _exact_best(position, step, n, room, count) -> np.ndarray:
    """The rule in exact integer arithmetic (`100 * min(left, right) + length`)."""
    best, best_score = np.zeros_like(position), np.full(position.shape, -1)
    for window in range(count):
        start = window * step
        length = min(n - start, room)
        left, right = position - start, start + length - 1 - position
        score = np.where((left >= 0) & (right >= 0), 100 * np.minimum(left, right) + length,
                         -1)
        best = np.where(score > best_score, window, best)
        best_score = np.maximum(score, best_score)
    return best


def test_words_and_offsets_are_the_saved_models():
    texts = HARD_CASES + ["", "a\x1cb\x1dc\x85d\u3000e\u2028f\u00a0", " \u3000x\u2009",
                          "nul\x00inside x", "word " * 50]
    strings = tf.constant([t.encode("utf-8", "surrogatepass") for t in texts])
    words, splits, starts, ends = split_words(strings)
    want_words, want_starts, want_ends = saved_split(strings)
    np.testing.assert_array_equal(splits, want_words.row_splits)
    np.testing.assert_array_equal(words, want_words.flat_values)
    np.testing.assert_array_equal(starts, want_starts.flat_values)
    np.testing.assert_array_equal(ends, want_ends.flat_values)
    for text in texts:  # and both are Python's str.split()
        got = split_words(tf.constant([text.encode("utf-8", "surrogatepass")]))[0]
        assert [w.decode("utf-8", "surrogatepass") for w in got.numpy()] == text.split()


def test_whitespace_table_is_str_isspace():
    table = python_whitespace()
    named = {c for c in range(len(table) * 8) if table[c >> 3] >> (c & 7) & 1}
    assert named == {c for c in range(0x110000) if chr(c).isspace()}


def test_cut_and_padded():
    text = tf.constant(["naïve café".encode(), b"", "中文".encode()])
    starts = tf.constant([[0, 7], [0, 0], [3, 0]])
    ends = tf.constant([[6, 12], [0, 0], [6, 0]])
    assert cut(text, starts, ends).numpy().tolist() == [
        ["naïve".encode(), "café".encode()], [b"", b""], ["文".encode(), b""]]
    values, splits = tf.constant([1, 2, 3, 4]), tf.constant([0, 3, 3, 4])
    index = padding_index(splits)
    assert index.numpy().tolist() == [[0, 1, 2], [4, 4, 4], [3, 4, 4]]
    assert padded(values, index, -1).numpy().tolist() == [[1, 2, 3], [-1, -1, -1],
                                                          [4, -1, -1]]
    assert padded(values * 10, index, 0).numpy().tolist() == [[10, 20, 30], [0, 0, 0],
                                                              [40, 0, 0]]
