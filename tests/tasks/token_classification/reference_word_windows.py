"""Readable Python reference of token classification's windows
(`keras_bert.tasks.token_classification.word_windows` must give the same): the original
run_squad.py window and max-context rules applied to a sentence's wordpieces, the label on
each word's first wordpiece."""

from __future__ import annotations

from keras_bert.tasks.token_classification.word_windows import IGNORE_LABEL
from tests.tasks.question_answering.reference_squad import doc_windows, max_context_windows


def sentence_windows(word_pieces: list[list[int]], length: int, doc_stride: int,
                     special: dict, labels: list[int] | None = None) -> dict:
    """The windows of one sentence given each word's wordpiece ids (each word >= 1 piece).

    Returns `ids`, `labels` (lists of unpadded rows `[CLS] pieces [SEP]`) and `words`: per
    word, `(window, column)` of its first wordpiece in its max-context window.
    """
    pieces = [p for word in word_pieces for p in word]
    firsts, position = [], 0
    for word in word_pieces:
        firsts.append(position)
        position += len(word)
    windows = doc_windows(len(pieces), length - 2, doc_stride)
    best = max_context_windows(windows, len(pieces))
    ids, label_rows = [], []
    for start, count in windows:
        ids.append([special["cls"], *pieces[start:start + count], special["sep"]])
        row = [IGNORE_LABEL] * (count + 2)
        for w, first in enumerate(firsts):
            if labels is not None and start <= first < start + count:
                row[1 + first - start] = labels[w]
        label_rows.append(row)
    words = [(int(best[first]), 1 + first - windows[int(best[first])][0]) for first in firsts]
    return {"ids": ids, "labels": label_rows, "words": words}
