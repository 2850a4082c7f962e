"""Pretraining corpora: documents as lists of sentences, in three file formats.

- `sentences`: the original BERT format: one sentence per line, a blank line between
  documents.
- `prose`: paragraphs separated by blank lines, each paragraph one document, split into
  sentences by `split_sentences` (e.g. the embedded Moby Dick and State of the Union texts).
- `jsonl`: one JSON object per line, the document's text under `text_field`, split into
  sentences.
"""

from __future__ import annotations

import glob
import json
import os
from collections.abc import Iterator

from keras_bert.data.sentences import split_sentences

FORMATS = ("sentences", "prose", "jsonl")
CORPUS_DIR = os.path.join(os.path.dirname(__file__), "corpus")


def default_corpus_files() -> list[str]:
    """The embedded public-domain corpus (see `keras_bert/data/corpus/SOURCE.md`)."""
    return sorted(glob.glob(os.path.join(CORPUS_DIR, "*.txt")))


def _blocks(path: str) -> Iterator[list[str]]:
    block: list[str] = []
    with open(path, encoding="utf-8", errors="replace") as f:
        for line in f:
            line = line.strip()
            if line:
                block.append(line)
            elif block:
                yield block
                block = []
    if block:
        yield block


def read_documents(path: str, fmt: str = "sentences",
                   text_field: str = "text") -> Iterator[list[str]]:
    """Yields the documents of one file, each a non-empty list of sentences."""
    if fmt not in FORMATS:
        raise ValueError(f"Unknown corpus format {fmt!r}; choose one of {FORMATS}")
    if fmt == "sentences":
        yield from _blocks(path)
    elif fmt == "prose":
        for block in _blocks(path):
            sentences = split_sentences(" ".join(block))
            if sentences:
                yield sentences
    else:
        with open(path, encoding="utf-8") as f:
            for number, line in enumerate(f, 1):
                if not line.strip():
                    continue
                try:
                    record = json.loads(line)
                    text = record[text_field]
                except (json.JSONDecodeError, KeyError, TypeError) as e:
                    raise ValueError(f"{path}:{number}: expected a JSON object with a "
                                     f"{text_field!r} string ({e})") from None
                if not isinstance(text, str):
                    raise ValueError(f"{path}:{number}: {text_field!r} is not a string")
                sentences = split_sentences(text)
                if sentences:
                    yield sentences


def guess_format(path: str) -> str:
    """`jsonl` for `.jsonl`/`.json` files; `sentences` when every non-blank block of the
    first lines has one sentence per line; otherwise `prose`."""
    if path.endswith((".jsonl", ".json")):
        return "jsonl"
    for index, block in enumerate(_blocks(path)):
        if any(len(split_sentences(line)) > 2 for line in block):
            return "prose"
        if index >= 20:
            break
    return "sentences"
