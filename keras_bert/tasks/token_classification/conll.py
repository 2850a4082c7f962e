"""Token classification (NER) data: CoNLL-2003 files.

File format (CoNLL-2003 style): one token per line, whitespace-separated columns, the word
in the FIRST column and its tag in the LAST (`EU NNP B-NP B-ORG`, or just `EU B-ORG`);
a blank line ends a sentence; `-DOCSTART-` lines (document separators) are skipped. Tags
must look like `O` or `<prefix>-<TYPE>` with prefix B, I, E or S.

Featurisation (the BERT paper's NER recipe: the FIRST wordpiece of a word carries its
label, every other position `IGNORE_LABEL`; windows over long sentences) is
`keras_bert.tasks.token_classification.word_windows`, in TensorFlow, shared by fine-tuning,
the export and `keras-bert predict`. A readable Python reference lives in the tests.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from keras_bert.tasks.labels import LabelVocab
from keras_bert.text.files import open_utf8

DOCSTART = "-DOCSTART-"
_TAG = re.compile(r"^(O|[BIES]-\S+)$")


@dataclass(frozen=True)
class TaggedSentence:
    """One sentence: its words, their tags, and the file line of its first word."""

    words: list[str]
    tags: list[str]
    line: int = 0


def read_conll(path) -> list[TaggedSentence]:
    """Reads a CoNLL-2003 style file (word first column, tag last column).

    Raises:
      ValueError: naming the file and line, for a row with a single column (no tag), a row
        whose column count differs from the file's first row, a malformed tag, or a file
        without any sentence.
    """
    sentences: list[TaggedSentence] = []
    words: list[str] = []
    tags: list[str] = []
    first_line = 0
    width = None

    def flush():
        if words:
            sentences.append(TaggedSentence(list(words), list(tags), first_line))
            words.clear()
            tags.clear()

    with open_utf8(path, bom=False) as f:
        for number, text in enumerate(f, start=1):
            columns = text.split()
            if not columns:
                flush()
                continue
            if columns[0] == DOCSTART:
                flush()
                continue
            if len(columns) < 2:
                raise ValueError(f"{path}: line {number}: expected a word and a tag separated "
                                 f"by whitespace, got {text.rstrip()!r}.")
            if width is None:
                width = len(columns)
            elif len(columns) != width:
                raise ValueError(f"{path}: line {number}: {len(columns)} columns where the "
                                 f"file's first row has {width}: {text.rstrip()!r}.")
            if not _TAG.match(columns[-1]):
                raise ValueError(f"{path}: line {number}: {columns[-1]!r} is not a tag (O, "
                                 "B-TYPE, I-TYPE, E-TYPE or S-TYPE).")
            if not words:
                first_line = number
            words.append(columns[0])
            tags.append(columns[-1])
    flush()
    if not sentences:
        raise ValueError(f"{path}: the file holds no sentence.")
    return sentences


def read_conll_words(path) -> list[list[str]]:
    """The sentences of a CoNLL file as word lists (first column; tags, if any, ignored)."""
    sentences, words = [], []
    with open_utf8(path, bom=False) as f:
        for line in f:
            columns = line.split()
            if not columns or columns[0] == DOCSTART:
                if words:
                    sentences.append(words)
                words = []
                continue
            words.append(columns[0])
    if words:
        sentences.append(words)
    return sentences


def tag_vocab(sentences: Sequence[TaggedSentence]) -> LabelVocab:
    """The sorted tag set of training sentences."""
    return LabelVocab.from_labels(t for s in sentences for t in s.tags)
