"""Span QA's decoding, in graph: the best answer span of each packed row, by the original
`run_squad.py`'s rules (`serving.py`'s module docstring states them). The SavedModel's
`serving_default` and `serve_ids` (`serving.py`) and the LiteRT graph
(`litert_answerer.py`) decode with it.
"""

from __future__ import annotations

import tensorflow as tf

NO_ANSWER = -1
# The score of a question no span can answer (SQuAD v1.1 decoding, e.g. an empty context):
# finite, as JSON has no infinity (TF Serving's REST API writes `-Infinity`, which strict
# parsers reject); `has_answer` says it.
NO_SPAN_SCORE = 0.0


def best_spans(start_logits, end_logits, context_begin, context_end, n_best: int = 20,
               max_answer_length: int = 30, allow_no_answer: bool = False,
               null_score_threshold: float = 0.0, start_mask=None) -> dict:
    """The best answer span of each row, in graph (see the module docstring for the rules).

    Args:
      start_logits, end_logits: float32 `[batch, seq]`.
      context_begin, context_end: int `[batch]`: the context's token positions are
        `context_begin <= position < context_end`.
      start_mask: optional bool `[batch, seq]`, the positions a span may start at (the
        window's max-context tokens).

    Returns:
      `start_position`, `end_position` (int64 `[batch]`, -1 for no answer), `score`
      (float32 `[batch]`, finite: the null score when "no answer" wins, 0 when no span is
      possible) and `has_answer` (bool `[batch]`).
    """
    # New axes by expand_dims / reshape, not `[:, :, None]`: LiteRT (the LiteRT export runs
    # this function too) has no kernel for a new-axis slice of a dynamic length.
    k = tf.minimum(n_best, tf.shape(start_logits)[1])
    top_start = tf.math.top_k(start_logits, k)
    top_end = tf.math.top_k(end_logits, k)
    starts = tf.expand_dims(tf.cast(top_start.indices, tf.int64), 2)
    ends = tf.expand_dims(tf.cast(top_end.indices, tf.int64), 1)
    begin = tf.reshape(tf.cast(context_begin, tf.int64), [-1, 1, 1])
    end = tf.reshape(tf.cast(context_end, tf.int64), [-1, 1, 1])
    valid = ((starts >= begin) & (starts < end) & (ends >= begin) & (ends < end)
             & (ends >= starts) & (ends - starts + 1 <= max_answer_length))
    if start_mask is not None:
        valid &= tf.expand_dims(tf.gather(start_mask, top_start.indices, batch_dims=1), 2)
    scores = tf.expand_dims(top_start.values, 2) + tf.expand_dims(top_end.values, 1)
    batch = tf.shape(scores)[0]
    flat_scores = tf.reshape(tf.where(valid, scores, -float("inf")), [batch, -1])
    best = tf.argmax(flat_scores, axis=-1, output_type=tf.int32)  # first of equals
    best_score = tf.reduce_max(flat_scores, axis=-1)
    answered = tf.reduce_any(tf.reshape(valid, [batch, -1]), axis=-1)
    if allow_no_answer:
        null_score = start_logits[:, 0] + end_logits[:, 0]
        answered &= ~(null_score - best_score > null_score_threshold)
        best_score = tf.where(answered, best_score, null_score)
    else:
        best_score = tf.where(answered, best_score, NO_SPAN_SCORE)
    start = tf.gather(top_start.indices, best // k, batch_dims=1)
    end_position = tf.gather(top_end.indices, best % k, batch_dims=1)
    return {"start_position": tf.where(answered, tf.cast(start, tf.int64), NO_ANSWER),
            "end_position": tf.where(answered, tf.cast(end_position, tf.int64), NO_ANSWER),
            "score": best_score, "has_answer": answered}


def best_windows(spans: dict, example, pairs, start_logits, end_logits,
                 allow_no_answer: bool = False, null_score_threshold: float = 0.0) -> dict:
    """Each pair's answer from its windows' `best_spans` (decoded with `allow_no_answer`
    off): the best span score over the pair's windows and the first window holding it
    (`window`, 0 where the pair has none); with `allow_no_answer`, the pair's null score
    (the least over its windows, as the original `run_squad.py` keeps it) against that score.

    `example`: the pair of each window; `pairs`: the number of pairs, whose dtype the window
    indices take (the SavedModel's int64, the LiteRT graph's int32).

    Returns `window`, `answered` (bool `[pairs]`) and `score` (float32 `[pairs]`, finite).
    """
    found = spans["has_answer"]
    window_score = tf.where(found, spans["score"], -float("inf"))
    score = tf.math.unsorted_segment_max(window_score, example, pairs)
    is_best = found & tf.equal(window_score, tf.gather(score, example))
    none = tf.size(example, out_type=pairs.dtype)
    best = tf.math.unsorted_segment_min(tf.where(is_best, tf.range(none), none), example,
                                        pairs)
    answered = best < none
    score = tf.where(answered, score, NO_SPAN_SCORE)  # (the segment max gives -max)
    if allow_no_answer:
        null = tf.math.unsorted_segment_min(start_logits[:, 0] + end_logits[:, 0], example,
                                            pairs)
        answered &= ~(null - score > null_score_threshold)
        score = tf.where(answered, score, null)
    return {"window": tf.where(answered, best, tf.constant(0, best.dtype)), "answered": answered,
            "score": score}
