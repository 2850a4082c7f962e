"""Readable Python reference of the original `run_squad.py` featurisation and decoding.

Tests hold the TensorFlow code (`keras_bert.tasks.question_answering.question_windows`, the
export's in-graph decoding in `keras_bert.tasks.question_answering.serving`) to this plain
reimplementation of the rules:

Features: `[CLS] question [SEP] window [SEP]` with the question cut to `max_query_length`
tokens and the context covered by windows of at most `seq_length - len(question) - 3`
tokens whose starts advance by `doc_stride` tokens (the original's step, not an overlap)
until a window reaches the end. A token seen by several windows is "max context" in the
one where it has the most surrounding context: `score = min(tokens left of it, tokens
right of it) + 0.01 * window length`, the first window winning ties. The answer is
labelled on a window that holds it whole; every other window (and every window of a v2.0
unanswerable question) points at [CLS] (index 0).

Offsets: each context token keeps its CHARACTER span in the original context, so a decoded
answer is an exact substring of the context.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np
import tensorflow as tf

from keras_bert.tasks.question_answering.squad import SquadAnswer, SquadExample


# ---------------------------------------------------------------------------- offsets
def byte_to_char_offsets(text: str, starts, ends) -> tuple[np.ndarray, np.ndarray]:
    """Converts UTF-8 byte offsets into `text` into character (code point) offsets.

    A start inside a multi-byte character maps to that character; an end inside one maps
    past it, so `text[start:end]` always covers the bytes.
    """
    raw = np.frombuffer(text.encode("utf-8"), np.uint8)
    char_starts = np.flatnonzero((raw & 0xC0) != 0x80)  # bytes that begin a character
    starts = np.searchsorted(char_starts, np.asarray(starts, np.int64), side="right") - 1
    ends = np.searchsorted(char_starts, np.asarray(ends, np.int64), side="left")
    return starts.astype(np.int32), ends.astype(np.int32)


# ---------------------------------------------------------------------------- windows
def doc_windows(num_tokens: int, max_tokens: int, doc_stride: int) -> list[tuple[int, int]]:
    """`(start, length)` of the windows over `num_tokens` context tokens (original rule).

    Windows start at 0, doc_stride, 2 * doc_stride, ... (the step is `min(length,
    doc_stride)`), each at most `max_tokens` long, and stop at the first window that
    reaches the last token. An empty context still gets one (empty) window.
    """
    if max_tokens < 1 or doc_stride < 1:
        raise ValueError(f"max_tokens ({max_tokens}) and doc_stride ({doc_stride}) must be "
                         "positive.")
    windows, start = [], 0
    while True:
        length = min(num_tokens - start, max_tokens)
        windows.append((start, length))
        if start + length >= num_tokens:
            return windows
        start += min(length, doc_stride)


def max_context_windows(windows: Sequence[tuple[int, int]], num_tokens: int) -> np.ndarray:
    """For each context token, the index of the window where it has the most context.

    Score of token p in window (start, length): `min(p - start, start + length - 1 - p) +
    0.01 * length`; the highest score wins, the earliest window on ties (the original
    `_check_is_max_context`).
    """
    positions = np.arange(num_tokens)
    best = np.zeros(num_tokens, np.int64)
    best_score = np.full(num_tokens, -np.inf)
    for w, (start, length) in enumerate(windows):
        end = start + length - 1
        inside = (positions >= start) & (positions <= end)
        score = np.minimum(positions - start, end - positions) + 0.01 * length
        better = inside & (score > best_score)
        best[better] = w
        best_score[better] = score[better]
    return best


@dataclass
class SquadFeature:
    """One window of one question: model inputs plus what decoding needs.

    Arrays are `[seq_length]`: `input_word_ids`, `input_mask`, `input_type_ids` (int32);
    `token_start_char` / `token_end_char` (int32), the character span in the context of
    each position (-1 outside the context); `token_is_max_context` (bool). `start_position`
    / `end_position` label the answer (0 = [CLS]: no answer in this window).
    """

    example_index: int
    qas_id: str
    window_index: int
    input_word_ids: np.ndarray
    input_mask: np.ndarray
    input_type_ids: np.ndarray
    token_start_char: np.ndarray
    token_end_char: np.ndarray
    token_is_max_context: np.ndarray
    start_position: int = 0
    end_position: int = 0


def _ragged_rows(ragged) -> list[np.ndarray]:
    """Rows of a 2-D `tf.RaggedTensor` as NumPy arrays."""
    values, splits = ragged.flat_values.numpy(), ragged.row_splits.numpy()
    return [values[splits[i]:splits[i + 1]] for i in range(len(splits) - 1)]


def answer_token_span(answer: SquadAnswer, token_start_char: np.ndarray,
                      token_end_char: np.ndarray, qas_id: str = "") -> tuple[int, int]:
    """First and last context token overlapping the answer's characters."""
    overlapping = np.flatnonzero((token_end_char > answer.start_char)
                                 & (token_start_char < answer.end_char))
    if not len(overlapping):
        raise ValueError(f"question {qas_id!r}: the answer {answer.text!r} covers no token of "
                         "the context.")
    return int(overlapping[0]), int(overlapping[-1])


def squad_features(examples: Sequence[SquadExample], tokenizer, seq_length: int = 384,
                   max_query_length: int = 64, doc_stride: int = 128) -> list[SquadFeature]:
    """Windowed model inputs for SQuAD examples (see the module docstring for the rules).

    Questions and contexts are tokenized in batches (each distinct context once). The
    first gold answer labels the windows of answerable questions; examples without
    answers (prediction data, v2.0 unanswerable) point every window at [CLS].
    """
    if seq_length < max_query_length + 4:
        raise ValueError(f"seq_length ({seq_length}) must leave room for the question "
                         f"({max_query_length}), 3 special tokens and some context.")
    if not examples:
        return []
    special = tokenizer.special_token_ids
    contexts = list(dict.fromkeys(ex.context for ex in examples))
    context_index = {c: i for i, c in enumerate(contexts)}
    question_ids = _ragged_rows(tokenizer.tokenize(tf.constant(
        [ex.question for ex in examples], tf.string)))
    ids, starts, ends = tokenizer.tokenize_with_offsets(tf.constant(contexts, tf.string))
    context_ids = _ragged_rows(ids)
    context_chars = [byte_to_char_offsets(c, s, e) for c, s, e in
                     zip(contexts, _ragged_rows(starts), _ragged_rows(ends), strict=True)]
    features = []
    for e, ex in enumerate(examples):
        query = question_ids[e][:max_query_length]
        c = context_index[ex.context]
        doc_ids, (char_starts, char_ends) = context_ids[c], context_chars[c]
        span = None
        if ex.answers and not ex.is_impossible:
            span = answer_token_span(ex.answers[0], char_starts, char_ends, ex.qas_id)
        windows = doc_windows(len(doc_ids), seq_length - len(query) - 3, doc_stride)
        best = max_context_windows(windows, len(doc_ids))
        offset = len(query) + 2
        for w, (start, length) in enumerate(windows):
            features.append(_window_feature(
                e, ex.qas_id, w, special, seq_length, query, doc_ids[start:start + length],
                char_starts[start:start + length], char_ends[start:start + length],
                best[start:start + length] == w, offset,
                _window_answer(span, start, length, offset)))
    return features


def _window_answer(span, start: int, length: int, offset: int) -> tuple[int, int]:
    """Answer positions in a window, or (0, 0) ([CLS]) when it is not wholly inside."""
    if span is None or span[0] < start or span[1] > start + length - 1:
        return 0, 0
    return span[0] - start + offset, span[1] - start + offset


def _window_feature(example_index, qas_id, window_index, special, seq_length, query, doc,
                    char_starts, char_ends, max_context, offset, positions) -> SquadFeature:
    """Packs `[CLS] query [SEP] doc [SEP]` and its per-position context offsets."""
    tokens = np.concatenate([[special["cls"]], query, [special["sep"]], doc, [special["sep"]]])
    n = len(tokens)
    ids = np.full(seq_length, special["pad"], np.int32)
    ids[:n] = tokens
    mask = np.zeros(seq_length, np.int32)
    mask[:n] = 1
    type_ids = np.zeros(seq_length, np.int32)
    type_ids[offset:n] = 1
    start_char = np.full(seq_length, -1, np.int32)
    end_char = np.full(seq_length, -1, np.int32)
    is_max = np.zeros(seq_length, bool)
    start_char[offset:offset + len(doc)] = char_starts
    end_char[offset:offset + len(doc)] = char_ends
    is_max[offset:offset + len(doc)] = max_context
    return SquadFeature(example_index, qas_id, window_index, ids, mask, type_ids, start_char,
                        end_char, is_max, *positions)


def squad_dataset(features: Sequence[SquadFeature], batch_size: int = 32,
                  training: bool = False, shuffle_buffer: int = 0, seed: int | None = None,
                  drop_remainder: bool = False) -> tf.data.Dataset:
    """A batched `tf.data.Dataset` of the windows, in order unless shuffled.

    Training elements are `(inputs, {"start_positions", "end_positions"})` (int32
    `[batch]`); otherwise `inputs` alone, one row per feature in `features` order, so that
    `model.predict` output lines up with `features` for `decode_predictions`.
    """
    inputs = {name: np.stack([getattr(f, name) for f in features])
              for name in ("input_word_ids", "input_mask", "input_type_ids")}
    if training:
        targets = {
            "start_positions": np.asarray([f.start_position for f in features], np.int32),
            "end_positions": np.asarray([f.end_position for f in features], np.int32)}
        ds = tf.data.Dataset.from_tensor_slices((inputs, targets))
    else:
        ds = tf.data.Dataset.from_tensor_slices(inputs)
    if shuffle_buffer:
        ds = ds.shuffle(shuffle_buffer, seed=seed, reshuffle_each_iteration=True)
    return ds.batch(batch_size, drop_remainder=drop_remainder)


# ---------------------------------------------------------------------------- decoding
def _top_indexes(logits: np.ndarray, n: int) -> np.ndarray:
    """Indexes of the `n` largest logits, largest first (stable on ties)."""
    return np.argsort(-logits, kind="stable")[:n]


def _window_candidates(feature: SquadFeature, start_logits, end_logits, n_best: int,
                       max_answer_length: int) -> list[tuple[float, int, int]]:
    """Valid `(score, start, end)` spans of one window (original filtering rules)."""
    in_context = feature.token_start_char >= 0
    found = []
    for s in _top_indexes(start_logits, n_best):
        if not in_context[s] or not feature.token_is_max_context[s]:
            continue
        for e in _top_indexes(end_logits, n_best):
            if not in_context[e] or e < s or e - s + 1 > max_answer_length:
                continue
            found.append((float(start_logits[s] + end_logits[e]), int(s), int(e)))
    return found


def _softmax(scores: Sequence[float]) -> list[float]:
    if not scores:
        return []
    top = max(scores)
    exps = [math.exp(s - top) for s in scores]
    total = sum(exps)
    return [x / total for x in exps]


def decode_predictions(examples: Sequence[SquadExample], features: Sequence[SquadFeature],
                       start_logits, end_logits, n_best: int = 20,
                       max_answer_length: int = 30, allow_no_answer: bool = False,
                       null_score_threshold: float = 0.0) -> dict[str, dict]:
    """Answer text per question from per-window start/end logits.

    For each question, the `n_best` best start and end positions of each of its windows
    are paired; a pair is kept when both lie in the context, start <= end, the span has at
    most `max_answer_length` tokens and the window is the max-context one for the start
    token. Spans are ranked by `start_logit + end_logit` and turned into text through the
    character offsets (distinct texts only, best `n_best`).

    With `allow_no_answer` (SQuAD v2.0) the null score is the smallest `start_logits[0] +
    end_logits[0]` over the question's windows; the answer is "" when `null_score -
    best_span_score > null_score_threshold` (or when no span is valid).

    Args:
      examples, features: from `squad_features` (features in the order of the logits).
      start_logits, end_logits: `[num_features, seq_length]`.

    Returns:
      `{qas_id: {"text", "score", "start_char", "end_char", "null_score", "nbest"}}`;
      `start_char`/`end_char` index the context (`None` for ""), `null_score` is `None`
      without `allow_no_answer`, `nbest` lists `{"text", "score", "probability",
      "start_char", "end_char"}` best first (probabilities: softmax over its scores).
    """
    start_logits = np.asarray(start_logits, np.float64)
    end_logits = np.asarray(end_logits, np.float64)
    if start_logits.shape != end_logits.shape or len(start_logits) != len(features):
        raise ValueError(f"{len(features)} features but logits of shapes {start_logits.shape} "
                         f"and {end_logits.shape}.")
    by_example: dict[int, list[int]] = {}
    for i, f in enumerate(features):
        by_example.setdefault(f.example_index, []).append(i)
    results = {}
    for e, indexes in by_example.items():
        results[examples[e].qas_id] = _decode_example(
            examples[e], [(features[i], start_logits[i], end_logits[i]) for i in indexes],
            n_best, max_answer_length, allow_no_answer, null_score_threshold)
    return results


def _decode_example(example: SquadExample, windows, n_best, max_answer_length,
                    allow_no_answer, null_score_threshold) -> dict:
    """Best answer of one question from its windows' logits."""
    candidates = []
    null_score = math.inf
    for feature, start, end in windows:
        null_score = min(null_score, float(start[0] + end[0]))
        candidates += [(score, feature, s, e) for score, s, e in
                       _window_candidates(feature, start, end, n_best, max_answer_length)]
    candidates.sort(key=lambda c: -c[0])
    nbest, seen = [], set()
    for score, feature, s, e in candidates:
        if len(nbest) >= n_best:
            break
        start_char, end_char = int(feature.token_start_char[s]), int(feature.token_end_char[e])
        text = example.context[start_char:end_char]
        if text in seen:
            continue
        seen.add(text)
        nbest.append({"text": text, "score": score, "start_char": start_char,
                      "end_char": end_char})
    best = nbest[0] if nbest else None
    if allow_no_answer:
        nbest.append({"text": "", "score": null_score, "start_char": None, "end_char": None})
        nbest.sort(key=lambda c: -c["score"])
    for entry, p in zip(nbest, _softmax([c["score"] for c in nbest]), strict=True):
        entry["probability"] = p
    no_answer = best is None or (
        allow_no_answer and null_score - best["score"] > null_score_threshold)
    if no_answer:
        score = null_score if allow_no_answer else -math.inf
        chosen = {"text": "", "score": score, "start_char": None, "end_char": None}
    else:
        chosen = {k: best[k] for k in ("text", "score", "start_char", "end_char")}
    chosen["null_score"] = null_score if allow_no_answer else None
    chosen["nbest"] = nbest
    return chosen


def predicted_texts(results: Mapping[str, Mapping]) -> dict[str, str]:
    """`{qas_id: text}` from `decode_predictions` output (the official scorer's input)."""
    return {qid: r["text"] for qid, r in results.items()}
