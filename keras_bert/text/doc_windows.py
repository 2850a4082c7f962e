"""Sliding windows over long contexts, in graph: `keras_bert.tasks.question_answering.squad`'s
rules as tensors.

A context of `n` tokens is covered by windows of at most `m` tokens (`m` = the room left
by the question) whose starts advance by `step = min(m, doc_stride)` until a window
reaches the end (the original `run_squad.py`; `squad.doc_windows` in Python): window `i`
starts at `i * step` and holds `min(n - i * step, m)` tokens, and there are
`1 + max(0, ceil((n - m) / step))` of them (one, empty, for an empty context).

A token is "max context" in the window where `min(tokens left of it, tokens right of it) +
0.01 * window length` is highest, the first window winning ties (`squad.max_context_windows`).
Every window but the last holds `m` tokens, so over them the score is a tent in the window
index peaking at `(2p - m + 1) / (2 * step)` for token `p`: the best window is one of the
two integers around the peak, or the last window. Three candidates per token, whatever the
number of windows, in core TensorFlow ops only.
"""

from __future__ import annotations

import dataclasses

import tensorflow as tf


@dataclasses.dataclass(frozen=True)
class Windows:
    """The windows of a batch, flattened (one entry per window, examples in order).

    Attributes:
      example: int64 `[windows]`, the row of the batch each window belongs to.
      index: int64 `[windows]`, the window's number within its example (0, 1, ...).
      start, length: int64 `[windows]`, its first context token and its token count.
      count: int64 `[batch]`, windows per example.
      num_tokens, max_tokens, step: int64 `[windows]`, of the window's example: context
        tokens, the longest window and the stride.
    """

    example: tf.Tensor
    index: tf.Tensor
    start: tf.Tensor
    length: tf.Tensor
    count: tf.Tensor
    num_tokens: tf.Tensor
    max_tokens: tf.Tensor
    step: tf.Tensor


def doc_windows(num_tokens, max_tokens, doc_stride: int) -> Windows:
    """The windows over each row's context (see the module docstring).

    Args:
      num_tokens: int `[batch]`, context tokens per row.
      max_tokens: int `[batch]`, the longest window per row (at least 1).
      doc_stride: how far window starts advance (at least 1).
    """
    if doc_stride < 1:
        raise ValueError(f"doc_stride must be positive, got {doc_stride}")
    n = tf.cast(num_tokens, tf.int64)
    m = tf.cast(max_tokens, tf.int64)
    step = tf.minimum(m, doc_stride)
    count = 1 + tf.maximum(-((m - n) // step), 0)  # 1 + ceil((n - m) / step), at least 1
    windows = tf.ragged.range(count)
    example = windows.value_rowids()
    index = windows.flat_values
    per_window = [tf.gather(t, example) for t in (n, m, step)]
    start = index * per_window[2]
    length = tf.minimum(per_window[0] - start, per_window[1])
    return Windows(example, index, start, length, count, *per_window)


def _score(position, window, step, num_tokens, max_tokens, count) -> tf.Tensor:
    """float64 max-context score of each token `position` in `window` (-inf outside it);
    the other arguments are those of the token's example, broadcast against `position`."""
    start = window * step
    length = tf.minimum(num_tokens - start, max_tokens)
    left, right = position - start, start + length - 1 - position
    inside = (left >= 0) & (right >= 0) & (window < count)
    # The original's float arithmetic: an integer plus 0.01 * length, in float64.
    score = tf.cast(tf.minimum(left, right), tf.float64) + 0.01 * tf.cast(length, tf.float64)
    return tf.where(inside, score, tf.constant(-float("inf"), tf.float64))


def max_context_window(position, step, num_tokens, max_tokens, count) -> tf.Tensor:
    """int64: the window (numbered within its example) where each token `position` has
    the most context; the other arguments are its example's stride, token count, longest
    window and window count, broadcast against `position` (see the module docstring)."""
    last = count - 1
    full_last = tf.maximum(last - 1, 0)  # windows 0 .. count - 2 hold max_tokens tokens
    peak = (2 * position - max_tokens + 1) // (2 * step)
    candidates = [tf.clip_by_value(peak, 0, full_last),
                  tf.clip_by_value(peak + 1, 0, full_last),
                  last + tf.zeros_like(peak)]
    args = (step, num_tokens, max_tokens, count)
    best, best_score = candidates[0], _score(position, candidates[0], *args)
    for window in candidates[1:]:  # ascending: a strict win keeps the first window on ties
        score = _score(position, window, *args)
        best = tf.where(score > best_score, window, best)
        best_score = tf.maximum(score, best_score)
    return best


def is_max_context(windows: Windows, offset, width) -> tf.Tensor:
    """bool `[windows, width]`: whether column `j` of each window's packed row is a context
    token whose max-context window is this one.

    Args:
      windows: from `doc_windows`.
      offset: int `[windows]`, the column of each window's first context token (column `j`
        holds its token `j - offset`).
      width: the packed rows' length.
    """
    offset = tf.cast(offset, tf.int64)
    j = tf.range(tf.cast(width, tf.int64))[None, :] - offset[:, None]
    in_window = (j >= 0) & (j < windows.length[:, None])
    position = windows.start[:, None] + j  # the context token at each column
    count = tf.gather(windows.count, windows.example)[:, None]
    best = max_context_window(position, windows.step[:, None], windows.num_tokens[:, None],
                              windows.max_tokens[:, None], count)
    return in_window & tf.equal(best, windows.index[:, None])
