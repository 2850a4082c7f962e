"""How sentence-level models read a text longer than their sequence length, in graph.

`LongTextReading` is the setting (`keras_bert.config`, saved in the task block): `truncate`
packs one row per text, BERT's longest-first truncation cutting what does not fit (BERT's
own behaviour); `windows` reads the whole text as windows whose outputs are aggregated per
text.

Windows (`sentence_windows`): the rows of a batch are cut into windows of `text` of at most
`m` tokens, starting every `min(m, doc_stride)` tokens until one reaches the text's end
(`keras_bert.text.doc_windows`, the rule of the original `run_squad.py`), at most
`max_windows` per text. `m` is what the sequence length leaves beside `[CLS]`, `[SEP]`s and,
for pairs, `text_b`, which every window holds whole; only a `text_b` that fills the
sequence length alone is cut (to BERT's longest-first share of it, as `truncate` would).
The windows of all texts are flattened into one batch for the encoder
(`example` maps each back to its text) and `aggregate_windows` gathers the outputs back.

Both modes also say what was read: `num_tokens` (the word pieces of `text` and `text_b`),
`num_windows`, and `truncated` (some word piece was not read).
"""

from __future__ import annotations

import dataclasses

import tensorflow as tf

from keras_bert.config import AGGREGATIONS, LongTextReading
from keras_bert.text.doc_windows import doc_windows
from keras_bert.text.packer import longest_first_lengths

# Embeddings: the windows' vectors averaged, each weighted by the word pieces of `text` it
# read (at least 1, so an empty text keeps its one window's vector).
TOKEN_MEAN = "token_mean"


@dataclasses.dataclass(frozen=True)
class WindowBatch:
    """The windows of a batch of texts, flattened.

    Attributes:
      segments: the windows' token ids, one `[windows, (tokens)]` ragged tensor per segment
        (`text`, and `text_b` for pairs), ready for `BertPacker`.
      example: int32 `[windows]`, the text each window belongs to.
      num_tokens, num_windows: int32 `[batch]`, per text.
      truncated: bool `[batch]`, per text: some word piece is in no window.
    """

    segments: list
    example: tf.Tensor
    num_tokens: tf.Tensor
    num_windows: tf.Tensor
    truncated: tf.Tensor


def sentence_windows(segments: list, max_length, doc_stride: int,
                     max_windows: int) -> WindowBatch:
    """The windows of `segments` (`[text]` or `[text, text_b]`, int `[batch, (tokens)]`
    ragged ids) for rows of at most `max_length` positions (see the module docstring)."""
    if len(segments) not in (1, 2):
        raise ValueError(f"windows take one or two segments, got {len(segments)}")
    text = tf.cast(segments[0], tf.int32).with_row_splits_dtype(tf.int64)
    n = text.row_lengths()
    budget = tf.cast(max_length, tf.int64) - (len(segments) + 1)
    num_tokens = n
    if len(segments) == 2:
        text_b = tf.cast(segments[1], tf.int32).with_row_splits_dtype(tf.int64)
        n_b = text_b.row_lengths()
        num_tokens = n + n_b
        cut_b = longest_first_lengths(n, n_b, budget)[1]
        keep_b = tf.where(n_b < budget, n_b, cut_b)  # text_b whole unless it fills a row
        room = tf.maximum(budget - keep_b, 1)
    else:
        keep_b, room = None, tf.broadcast_to(budget, tf.shape(n))
    windows = doc_windows(n, room, doc_stride)
    count = tf.minimum(windows.count, max_windows)
    kept = windows.index < tf.gather(count, windows.example)
    example, start, length = (tf.boolean_mask(t, kept)
                              for t in (windows.example, windows.start, windows.length))
    begin = tf.gather(text.row_splits, example) + start
    window_text = tf.RaggedTensor.from_row_lengths(
        tf.gather(text.values, tf.ragged.range(begin, begin + length).flat_values), length)
    out = [window_text]
    if keep_b is not None:
        b = tf.gather(text_b, example)
        positions = tf.ragged.range(b.row_lengths())
        out.append(tf.ragged.boolean_mask(b, positions < tf.gather(keep_b, example)[:, None]))
        b_cut = keep_b < n_b
    else:
        b_cut = tf.zeros_like(n, tf.bool)
    last = tf.gather(windows.start, _first_window(windows.count) + count - 1)
    read_to = last + tf.minimum(n - last, room)  # where the last window kept ends
    return WindowBatch(out, tf.cast(example, tf.int32), tf.cast(num_tokens, tf.int32),
                       tf.cast(count, tf.int32), (read_to < n) | b_cut)


def read_windows(preprocessor, reading: LongTextReading, text, text_b=None,
                 max_total: int | None = None) -> tuple[dict, WindowBatch]:
    """Strings -> `(packed windows, WindowBatch)`: every window of every text, one row each,
    at the preprocessor's length (its `seq_length`, else its `max_length`), packed by it
    on the host CPU; what training, `predict`, `evaluate` and exports all run. With
    `max_total`, a batch needing more windows fails with an error naming that limit."""
    length = preprocessor.max_length
    with tf.device("/CPU:0"):
        segments = [preprocessor.tokenize(t) for t in ([text] if text_b is None
                                                       else [text, text_b])]
        batch = sentence_windows(segments, length, reading.stride(length), reading.max_windows)
        checks = []
        if max_total is not None:
            checks.append(tf.debugging.assert_less_equal(
                tf.size(batch.example), max_total,
                message=f"the request needs more than {max_total} windows (the most one "
                        "request may read): send fewer or shorter texts"))
        with tf.control_dependencies(checks):
            return preprocessor.pack(batch.segments), batch


def truncation_stats(segments: list, max_length) -> WindowBatch:
    """What BERT's longest-first truncation reads (`truncate`): one window per text."""
    lengths = [tf.cast(tf.cast(s, tf.int32).row_lengths(), tf.int32) for s in segments]
    num_tokens = tf.add_n(lengths)
    budget = tf.cast(max_length, tf.int32) - (len(segments) + 1)
    ones = tf.ones_like(num_tokens)
    return WindowBatch(list(segments), tf.range(tf.size(num_tokens)), num_tokens, ones,
                       num_tokens > budget)


def aggregate_windows(values, batch: WindowBatch, how: str = "mean", weights=None):
    """Per-text values `[batch, ...]` of per-window `values` `[windows, ...]`: their mean,
    max, or the first window's; with `weights` (`[windows]`), the weighted mean;
    `TOKEN_MEAN`: the mean weighted by the word pieces each window read of `text`."""
    segments = tf.size(batch.num_windows)
    if how == TOKEN_MEAN:
        how = "mean"
        weights = tf.maximum(batch.segments[0].row_lengths(), 1)
    if how == "first":
        return tf.gather(values, _first_window(batch.num_windows))
    if how == "max":
        return tf.math.unsorted_segment_max(values, batch.example, segments)
    if how != "mean":
        raise ValueError(f"window aggregation must be one of {AGGREGATIONS}, got {how!r}")
    if weights is None:
        return tf.math.unsorted_segment_mean(values, batch.example, segments)
    weights = tf.cast(tf.reshape(weights, [-1] + [1] * (values.shape.rank - 1)), values.dtype)
    total = tf.math.unsorted_segment_sum(values * weights, batch.example, segments)
    return total / tf.maximum(tf.math.unsorted_segment_sum(weights, batch.example, segments),
                              1e-12)


def _first_window(count) -> tf.Tensor:
    """The flat index of each text's first window (`count`: windows per text)."""
    return tf.cumsum(count, exclusive=True)
