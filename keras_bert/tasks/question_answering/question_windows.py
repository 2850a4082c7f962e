"""Question + context -> packed windows `[CLS] question [SEP] window [SEP]`, in TensorFlow.

The span-QA featurisation, written once: the fine-tuning data (with answer labels), the
export's `serving_default` and `preprocess`, and `keras-bert predict` all call
`question_windows`. Rules of the original `run_squad.py`: the question is cut to
`max_query_length` wordpieces; the context is covered by windows of at most
`length - len(question) - 3` wordpieces whose starts advance by `doc_stride`
(`keras_bert.text.doc_windows`); a context token is "max context" in the window where it has
the most tokens around it. An answer labels the window that holds all of its tokens (the
tokens overlapping its bytes) at their packed columns; every other window points at
`[CLS]` (column 0).
"""

from __future__ import annotations

import tensorflow as tf

from keras_bert.text.doc_windows import doc_windows, is_max_context
from keras_bert.text.packer import keep_first


def question_windows(preprocessor, question, context, max_query_length: int,
                     doc_stride: int, answer_start=None, answer_end=None) -> dict:
    """The packed windows of each (question, context) pair, on the host CPU.

    Args:
      preprocessor: the model's `BertPreprocessor` (its tokenizer; its packer's length).
      question, context: `[pairs]` strings.
      max_query_length, doc_stride: the task's settings.
      answer_start, answer_end: optional int64 `[pairs]` UTF-8 byte offsets of each answer
        in its context (`-1`: no answer).

    Returns a dict: `inputs` (the model inputs, one row per window), `windows` (a
    `keras_bert.text.doc_windows.Windows`), `begin` (each window's first context column),
    `first` (its first context token in `starts.values`), `max_context` (bool, the columns
    whose max-context window is this one), `starts` / `ends` (the context tokens' byte
    offsets, ragged per pair); with answers also `start_positions` / `end_positions`
    (int32 `[windows]`) and `answer_tokens` (int64 `[pairs, 2]`: first and last token of
    each answer, `-1` where an answer covers no token).
    """
    with tf.device("/CPU:0"):
        tokenizer = preprocessor.tokenizer
        query = tokenizer.tokenize(question)
        query = keep_first(query, tf.minimum(query.row_lengths(), max_query_length))
        ids, starts, ends = tokenizer.tokenize_with_offsets(context)
        row_starts = tf.cast(ids.row_splits[:-1], tf.int64)
        room = preprocessor.packer.max_length - 3 - tf.cast(query.row_lengths(), tf.int64)
        windows = doc_windows(ids.row_lengths(), room, doc_stride)
        first = tf.gather(row_starts, windows.example) + windows.start  # in ids.values
        window_ids = tf.gather(ids.values, tf.ragged.range(first, first + windows.length))
        window_query = tf.gather(query, windows.example)
        inputs = preprocessor.pack([window_query, window_ids])
        begin = tf.cast(window_query.row_lengths(), tf.int64) + 2
        max_context = is_max_context(windows, begin, tf.shape(inputs["input_word_ids"])[1])
        result = {"inputs": inputs, "windows": windows, "begin": begin, "first": first,
                  "max_context": max_context, "starts": starts, "ends": ends}
        if answer_start is not None:
            result.update(_answer_labels(starts, ends, windows, begin, answer_start,
                                         answer_end))
    return result


def _answer_labels(starts, ends, windows, begin, answer_start, answer_end) -> dict:
    """Packed answer columns per window, and each answer's token span."""
    answer_start = tf.cast(answer_start, tf.int64)
    answer_end = tf.cast(answer_end, tf.int64)
    rows = starts.value_rowids()
    index = tf.range(tf.size(starts.values, out_type=tf.int64)) - tf.gather(
        starts.row_splits, rows)  # each token's index in its context
    overlaps = ((ends.values > tf.gather(answer_start, rows))
                & (starts.values < tf.gather(answer_end, rows))
                & (tf.gather(answer_start, rows) >= 0))
    pairs = tf.size(answer_start, out_type=tf.int64)
    none = tf.int64.max
    first = tf.math.unsorted_segment_min(tf.where(overlaps, index, none), rows, pairs)
    last = tf.math.unsorted_segment_max(tf.where(overlaps, index, -1), rows, pairs)
    found = last >= 0
    first, last = tf.where(found, first, -1), tf.where(found, last, -1)
    window_first = tf.gather(first, windows.example) - windows.start
    window_last = tf.gather(last, windows.example) - windows.start
    inside = ((tf.gather(found, windows.example)) & (window_first >= 0)
              & (window_last < windows.length))
    return {"start_positions": tf.cast(tf.where(inside, window_first + begin, 0), tf.int32),
            "end_positions": tf.cast(tf.where(inside, window_last + begin, 0), tf.int32),
            "answer_tokens": tf.stack([first, last], axis=1)}
