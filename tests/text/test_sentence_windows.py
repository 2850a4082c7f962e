"""`sentence_windows` / `aggregate_windows` against a Python reference written from the rule
(module docstring of `keras_bert.text.sentence_windows`): windows of `text` start every
`min(room, stride)` tokens until one reaches the end, `text_b` whole in each unless it fills
the row alone (then BERT's `truncate_seq_pair` share), at most `max_windows` per text."""

from __future__ import annotations

import numpy as np
import pytest
import tensorflow as tf

from keras_bert.config import LongTextReading
from keras_bert.text.sentence_windows import (
    WindowBatch,
    aggregate_windows,
    sentence_windows,
    truncation_stats,
)


def _truncate_pair(a: list, b: list, budget: int) -> tuple[list, list]:
    """The original BERT's `_truncate_seq_pair`: pop from the longer list (b on a tie)."""
    a, b = list(a), list(b)
    while len(a) + len(b) > budget:
        (a if len(a) > len(b) else b).pop()
    return a, b


def _reference(a: list, b: list | None, length: int, stride: int, max_windows: int):
    """`([(window text, window text_b)], num_tokens, num_windows, truncated)` of one text."""
    budget = length - (2 if b is None else 3)
    kept_b = None
    room = budget
    if b is not None:
        kept_b = b if len(b) < budget else _truncate_pair(a, b, budget)[1]
        room = max(budget - len(kept_b), 1)
    step = min(room, stride)
    windows, start = [], 0
    while True:
        windows.append(a[start:start + room])
        if start + room >= len(a):
            break
        start += step
    kept = windows[:max_windows]
    read = set()
    for i in range(len(kept)):
        read.update(range(i * step, min(i * step + room, len(a))))
    truncated = len(read) < len(a) or (kept_b is not None and len(kept_b) < len(b))
    return ([(w, kept_b) for w in kept], len(a) + len(b or []), len(kept), truncated)


def _ragged(rows):
    return tf.ragged.constant(rows, dtype=tf.int32, ragged_rank=1) if any(rows) else \
        tf.RaggedTensor.from_row_lengths(tf.zeros([0], tf.int32), [len(r) for r in rows])


CASES = [  # (length, stride, max_windows)
    (10, 3, 4), (10, 8, 2), (16, 5, 8), (8, 1, 3), (12, 100, 5)]


@pytest.mark.parametrize("pair", [False, True])
@pytest.mark.parametrize(("length", "stride", "max_windows"), CASES)
def test_windows_are_the_reference_windows(pair, length, stride, max_windows):
    rng = np.random.default_rng(length * 100 + stride + 7 * pair)
    budget = length - (3 if pair else 2)
    sizes = [0, 1, budget - 1, budget, budget + 1, 3 * budget, 40, *rng.integers(0, 50, 12)]
    texts = [list(rng.integers(5, 1000, n)) for n in sizes]
    b_sizes = [0, budget, budget + 5, 1, 2, *rng.integers(0, budget + 3, len(sizes) - 5)]
    texts_b = [list(rng.integers(5, 1000, n)) for n in b_sizes] if pair else None
    segments = [_ragged(texts)] + ([_ragged(texts_b)] if pair else [])

    got = tf.function(lambda *s: vars(sentence_windows(
        list(s), length, stride, max_windows)))(*segments)  # in graph, as exports run it
    got = WindowBatch(**got)
    windows = [got.segments[0].to_list()] + ([got.segments[1].to_list()] if pair else [])
    example = got.example.numpy().tolist()
    at = 0
    for i, text in enumerate(texts):
        want, num_tokens, num_windows, truncated = _reference(
            text, texts_b[i] if pair else None, length, stride, max_windows)
        assert got.num_tokens[i] == num_tokens, i
        assert got.num_windows[i] == num_windows == len(want), i
        assert bool(got.truncated[i]) == truncated, (i, len(text))
        for window_text, window_b in want:
            assert example[at] == i
            assert windows[0][at] == [int(t) for t in window_text], (i, at)
            if pair:
                assert windows[1][at] == [int(t) for t in window_b], (i, at)
            assert len(window_text) + len(window_b or []) <= budget
            at += 1
    assert at == len(example)


def test_truncate_reads_one_row_and_flags_what_it_cut():
    texts = _ragged([[5] * 8, [5] * 9, []])
    stats = truncation_stats([texts], 10)  # 8 word pieces fit beside [CLS] and [SEP]
    assert stats.num_windows.numpy().tolist() == [1, 1, 1]
    assert stats.num_tokens.numpy().tolist() == [8, 9, 0]
    assert stats.truncated.numpy().tolist() == [False, True, False]


def test_aggregations_are_numpy_s():
    values = tf.constant([[1.0, -2.0], [3.0, 4.0], [5.0, 0.0], [-1.0, 7.0]])
    batch = sentence_windows([_ragged([[5] * 20, [5] * 2])], 10, 8, 8)
    assert batch.num_windows.numpy().tolist() == [3, 1]  # windows of 8 at 0, 8, 16
    np.testing.assert_allclose(aggregate_windows(values, batch, "mean"),
                               [[3.0, 2 / 3], [-1.0, 7.0]], rtol=1e-6)
    np.testing.assert_allclose(aggregate_windows(values, batch, "max"), [[5, 4], [-1, 7]])
    np.testing.assert_allclose(aggregate_windows(values, batch, "first"), [[1, -2], [-1, 7]])
    weighted = aggregate_windows(values, batch, "mean", weights=tf.constant([8.0, 8, 4, 2]))
    np.testing.assert_allclose(weighted, [[(8 + 24 + 20) / 20, (-16 + 32) / 20], [-1, 7]],
                               rtol=1e-6)


def test_reading_settings_are_checked_and_round_trip():
    reading = LongTextReading("windows", doc_stride=64, max_windows=4, aggregate="max")
    assert LongTextReading.from_block(reading.block()) == reading
    assert LongTextReading.from_block(None) == LongTextReading()  # older task blocks
    assert LongTextReading().stride(128) == 64 and LongTextReading().stride(512) == 128
    for bad, message in [({"mode": "slide"}, "long-text reading"),
                         ({"aggregate": "median"}, "aggregation"),
                         ({"doc_stride": 0}, "doc_stride"), ({"max_windows": 0}, "max_windows")]:
        with pytest.raises(ValueError, match=message):
            LongTextReading(**bad)
