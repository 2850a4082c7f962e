"""Pretraining corpora: documents as lists of sentences, in three file formats.

- `sentences`: the original BERT format: one sentence per line, a blank line between
  documents.
- `prose`: running text split into sentences by `split_sentences`: paragraphs separated by
  a blank line, documents by two or more blank lines (a file that never has two blank lines
  in a row has one document per paragraph). The embedded corpus is in this format: one
  document per Moby Dick chapter and per State of the Union address.
- `jsonl`: one JSON object per line, the document's text under `text_field`, split into
  sentences.
"""

from __future__ import annotations

import glob
import json
import os
from collections.abc import Iterator

from keras_bert.data.sentences import split_sentences
from keras_bert.text.files import open_utf8

FORMATS = ("sentences", "prose", "jsonl")
CORPUS_DIR = os.path.join(os.path.dirname(__file__), "corpus")
# The 8k uncased WordPiece vocabulary learned from the embedded corpus (`keras-bert
# build-vocab`): what the presets and `keras-bert pretrain` read when given no vocabulary.
DEFAULT_VOCAB = os.path.join(os.path.dirname(__file__), "vocab", "corpus_uncased_8k.txt")


def default_corpus_files() -> list[str]:
    """The embedded public-domain corpus (see `keras_bert/data/corpus/SOURCE.md`)."""
    return sorted(glob.glob(os.path.join(CORPUS_DIR, "*.txt")))


def _blocks(path: str, with_breaks: bool = False) -> Iterator:
    """Blocks of non-blank lines; with `with_breaks`, (block, blank lines before it)."""
    block: list[str] = []
    blanks = 0
    with open(path, encoding="utf-8", errors="replace") as f:
        for line in f:
            line = line.strip()
            if line:
                if not block:
                    gap = blanks
                block.append(line)
                blanks = 0
            else:
                if block:
                    yield (block, gap) if with_breaks else block
                    block = []
                blanks += 1
    if block:
        yield (block, gap) if with_breaks else block


def _prose_documents(path: str) -> Iterator[list[str]]:
    paragraphs = list(_blocks(path, with_breaks=True))
    per_paragraph = not any(gap >= 2 for _, gap in paragraphs[1:])
    document: list[str] = []
    for block, gap in paragraphs:
        if document and (per_paragraph or gap >= 2):
            yield document
            document = []
        document.extend(split_sentences(" ".join(block)))
    if document:
        yield document


def read_documents(path: str, fmt: str = "sentences",
                   text_field: str = "text") -> Iterator[list[str]]:
    """Yields the documents of one file, each a non-empty list of sentences."""
    if fmt not in FORMATS:
        raise ValueError(f"Unknown corpus format {fmt!r}; choose one of {FORMATS}")
    if fmt == "sentences":
        yield from _blocks(path)
    elif fmt == "prose":
        yield from _prose_documents(path)
    else:
        with open_utf8(path, bom=False) as f:
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
