"""Sentence (pair) classification, multi-label and regression data: CSV / TSV / JSONL rows ->
examples.

Files:
  * `.csv`: comma-separated with a header row, RFC 4180 quoting (a quoted field may hold
    commas, quotes written `""` and line breaks).
  * `.tsv`: tab-separated with a header row and NO quoting, like the GLUE files read by
    the original BERT `_read_tsv` (`quotechar=None`): a `"` is an ordinary character.
  * `.jsonl` (or `.ndjson`): one JSON object per line; blank lines are skipped.

Files are UTF-8 (a leading byte-order mark, as spreadsheet exports write, is skipped).
Columns are chosen by name (`text`, optional `text_b`, `label`). A multi-label row's labels
are `|`-separated in CSV/TSV (an empty field: no label) and a JSON list of strings (or such a
`|`-separated string) in JSONL. Every problem is a
`ValueError` that names the file, the line (1-based; for CSV the line where the record
starts) and what is wrong.

`text_dataset` turns examples into a `tf.data.Dataset` of BERT inputs: the strings are
batched first, then one map of the model's `BertPreprocessor` over each batch (the same
object its SavedModel embeds) tokenizes and packs them.
"""

from __future__ import annotations

import csv
import errno
import io
import json
import math
import os
import sys
from collections.abc import Iterator, Sequence
from dataclasses import dataclass

import numpy as np
import tensorflow as tf

from keras_bert.tasks.labels import LabelVocab
from keras_bert.tasks.task import epoch_shuffled_batches
from keras_bert.text.files import open_utf8, read_utf8

CLASSIFICATION = "classification"
REGRESSION = "regression"
MULTILABEL = "multilabel"
LABEL_SEPARATOR = "|"
_FORMATS = {".csv": "csv", ".tsv": "tsv", ".jsonl": "jsonl", ".ndjson": "jsonl"}


@dataclass(frozen=True)
class TextExample:
    """One row: `text`, optional `text_b` (pair tasks) and `label`.

    `label` is a `str` (classification), a tuple of `str` (multi-label; empty: no label), a
    `float` (regression) or `None` (no label column: data to predict on). `line` is the row's line number in its file.
    """

    text: str
    text_b: str | None = None
    label: str | tuple[str, ...] | float | None = None
    line: int = 0


def file_format(path) -> str:
    """`"csv"`, `"tsv"` or `"jsonl"` from the file name's extension."""
    ext = os.path.splitext(str(path))[1].lower()
    if ext not in _FORMATS:
        raise ValueError(f"{path}: unknown data format {ext!r}; use one of "
                         f"{sorted(_FORMATS)} (or pass format=...).")
    return _FORMATS[ext]


def read_examples(path, text_column: str = "text", text_b_column: str | None = None,
                  label_column: str | None = "label", task: str = CLASSIFICATION,
                  labels: LabelVocab | Sequence[str] | None = None,
                  format: str | None = None) -> list[TextExample]:
    """Reads classification or regression examples from a CSV, TSV or JSONL file.

    Args:
      path: the file.
      text_column, text_b_column: names of the first and (pair tasks) second text column.
      label_column: name of the label column; `None` for unlabeled data.
      task: `"classification"` (labels kept as strings), `"multilabel"` (tuples of label
        strings; see the module docstring) or `"regression"` (labels parsed as floats; a
        non-numeric or non-finite one is an error).
      labels: for classification and multi-label, the allowed labels (e.g. the training `LabelVocab` at
        evaluation time); a row with another label is an error. `None` allows any.
      format: `"csv"`, `"tsv"` or `"jsonl"`; default from the extension.

    Returns:
      The examples in file order.

    Raises:
      ValueError: naming the file and line, for an empty file, a missing column (the
        available ones are listed), a row of the wrong width, invalid JSON, a label not in
        `labels`, or a non-numeric regression target.
    """
    if task not in _LABEL_PARSERS:
        raise ValueError(f"task must be one of {tuple(_LABEL_PARSERS)}, got {task!r}")
    if os.path.isdir(path):
        raise IsADirectoryError(errno.EISDIR, "a directory, not a CSV/TSV/JSONL file", str(path))
    fmt = format or file_format(path)
    rows = _jsonl_rows(path) if fmt == "jsonl" else _delimited_rows(path, fmt)
    allowed = None if labels is None else {str(name) for name in labels}
    examples = []
    for line, row in rows:
        text = _field(row, text_column, path, line)
        text_b = None if text_b_column is None else _field(row, text_b_column, path, line)
        label = None
        if label_column is not None:
            raw = row.get(label_column, _MISSING)
            if raw is _MISSING:
                _missing_column(label_column, row, path, line)
            label = _LABEL_PARSERS[task](raw, allowed, path, line)
        examples.append(TextExample(text, text_b, label, line))
    if not examples:
        raise ValueError(f"{path}: the file has no data rows (it is empty or holds only a "
                         "header).")
    return examples


_MISSING = object()


def stdin_lines() -> list[tuple[int, str]]:
    """`(line number, text)` of every stdin line, line breaks removed; a line that is not
    UTF-8 is a `ValueError` naming it."""
    source = getattr(sys.stdin, "buffer", None)
    if source is None:  # a text stream (tests, embedding)
        return [(n, line.rstrip("\r\n")) for n, line in enumerate(sys.stdin, start=1)]
    lines = []
    for n, raw in enumerate(source, start=1):
        try:
            lines.append((n, raw.decode("utf-8").rstrip("\r\n")))
        except UnicodeDecodeError as e:
            raise ValueError(f"stdin: line {n}: invalid UTF-8 (byte 0x{raw[e.start]:02x} at "
                             f"byte column {e.start + 1})") from None
    return lines


def no_rows(source: str):
    """The error for an input without rows."""
    raise ValueError(f"{source}: no input rows (the input is empty)")


def read_stdin_examples(pair: bool = False) -> list[TextExample]:
    """One `TextExample` per stdin line (`text<TAB>text_b` for a pair model)."""
    examples = []
    for number, line in stdin_lines():
        if not pair:
            examples.append(TextExample(line, None, None, number))
            continue
        parts = line.split("\t")
        if len(parts) != 2:
            raise ValueError(f"stdin: line {number}: a pair model needs 'text<TAB>text_b', "
                             f"got {len(parts)} field(s)")
        examples.append(TextExample(parts[0], parts[1], None, number))
    return examples or no_rows("stdin")


def _delimited_rows(path, fmt: str) -> Iterator[tuple[int, dict]]:
    """`(line, {column: value})` for each data row of a CSV or TSV file."""
    with io.StringIO(read_utf8(path), newline="") as f:
        if fmt == "tsv":
            reader = csv.reader(f, delimiter="\t", quoting=csv.QUOTE_NONE)
        else:
            reader = csv.reader(f)
        header, start = None, 1
        try:
            for fields in reader:
                line, start = start, reader.line_num + 1
                if not fields or (len(fields) == 1 and not fields[0].strip()):
                    continue  # blank line
                if header is None:
                    header = [h.strip() for h in fields]
                    continue
                if len(fields) != len(header):
                    raise ValueError(
                        f"{path}: line {line}: the row has {len(fields)} fields but the header "
                        f"has {len(header)} ({', '.join(header)}).")
                yield line, dict(zip(header, fields, strict=True))
        except csv.Error as e:
            raise ValueError(f"{path}: line {reader.line_num}: malformed {fmt.upper()}: {e}") \
                from None
    if header is None:
        raise ValueError(f"{path}: the file is empty (no header row).")


def _jsonl_rows(path) -> Iterator[tuple[int, dict]]:
    """`(line, object)` for each non-blank line of a JSON Lines file."""
    with open_utf8(path) as f:
        yield from json_objects(enumerate(f, start=1), path)


def json_objects(lines, source) -> Iterator[tuple[int, dict]]:
    """`(line, object)` for each non-blank `(line number, text)` of JSON Lines; a line that
    is not a JSON object is a `ValueError` naming `source` and the line."""
    for line, text in lines:
        if not text.strip():
            continue
        try:
            row = json.loads(text)
        except json.JSONDecodeError as e:
            raise ValueError(f"{source}: line {line}: invalid JSON: {e}") from None
        if not isinstance(row, dict):
            raise ValueError(f"{source}: line {line}: expected a JSON object, got "
                             f"{type(row).__name__}.")
        yield line, row


def _missing_column(column: str, row: dict, path, line: int):
    raise ValueError(f"{path}: line {line}: no column {column!r}; the available columns are "
                     f"{', '.join(map(repr, row))}.")


def _field(row: dict, column: str, path, line: int) -> str:
    """A text field, which must be present and a string."""
    value = row.get(column, _MISSING)
    if value is _MISSING:
        _missing_column(column, row, path, line)
    if not isinstance(value, str):
        raise ValueError(f"{path}: line {line}: column {column!r} must be text, got "
                         f"{type(value).__name__} {value!r}.")
    return value


def _class_label(raw, allowed: set[str] | None, path, line: int) -> str:
    """A classification label as a string, checked against the allowed set."""
    if raw is None or isinstance(raw, (dict, list)):
        raise ValueError(f"{path}: line {line}: the label must be a string or number, got "
                         f"{raw!r}.")
    label = raw.strip() if isinstance(raw, str) else str(raw)
    if not label:
        raise ValueError(f"{path}: line {line}: the label is empty.")
    if allowed is not None and label not in allowed:
        raise ValueError(f"{path}: line {line}: label {label!r} is not in the label set "
                         f"{sorted(allowed)}.")
    return label


def _label_set(raw, allowed: set[str] | None, path, line: int) -> tuple[str, ...]:
    """Multi-label labels: a `|`-separated string or a list of strings; none repeated."""
    if isinstance(raw, str):
        parts = raw.split(LABEL_SEPARATOR) if raw.strip() else []
    elif isinstance(raw, list) and all(isinstance(p, str) for p in raw):
        parts = raw
    else:
        raise ValueError(f"{path}: line {line}: multi-label labels must be a "
                         f"'{LABEL_SEPARATOR}'-separated string or a list of strings, got "
                         f"{raw!r}.")
    labels = []
    for part in parts:
        label = part.strip()
        if not label:
            raise ValueError(f"{path}: line {line}: an empty label in {raw!r} (write no "
                             "label as an empty field or an empty list).")
        if LABEL_SEPARATOR in label:
            raise ValueError(f"{path}: line {line}: label {label!r} contains "
                             f"'{LABEL_SEPARATOR}', the separator of multi-label labels.")
        if label in labels:
            raise ValueError(f"{path}: line {line}: label {label!r} is repeated in {raw!r}.")
        if allowed is not None and label not in allowed:
            raise ValueError(f"{path}: line {line}: label {label!r} is not in the label set "
                             f"{sorted(allowed)}.")
        labels.append(label)
    return tuple(labels)


def _regression_target(raw, allowed, path, line: int) -> float:
    """A regression target as a finite float."""
    value = None
    if isinstance(raw, (int, float)) and not isinstance(raw, bool):
        value = float(raw)
    elif isinstance(raw, str):
        try:
            value = float(raw.strip())
        except ValueError:
            value = None
    if value is None or not math.isfinite(value):
        raise ValueError(f"{path}: line {line}: the regression target {raw!r} is not a finite "
                         "number.")
    return value


_LABEL_PARSERS = {CLASSIFICATION: _class_label, MULTILABEL: _label_set,
                  REGRESSION: _regression_target}


def multi_hot(examples: Sequence[TextExample], label_vocab: LabelVocab) -> np.ndarray:
    """`float32` `[rows, labels]` 0/1 targets of multi-label examples."""
    targets = np.zeros((len(examples), len(label_vocab)), np.float32)
    for row, ex in enumerate(examples):
        for label in ex.label:
            if label not in label_vocab:
                raise ValueError(f"line {ex.line}: label {label!r} is not in the label set "
                                 f"{label_vocab.names}.")
            targets[row, label_vocab.id(label)] = 1.0
    return targets


def encode_labels(examples: Sequence[TextExample], label_vocab: LabelVocab) -> np.ndarray:
    """`int32` class ids of the examples' labels (`ValueError` naming the line if unknown)."""
    ids = []
    for ex in examples:
        if ex.label not in label_vocab:
            raise ValueError(f"line {ex.line}: label {ex.label!r} is not in the label set "
                             f"{label_vocab.names}.")
        ids.append(label_vocab.id(ex.label))
    return np.asarray(ids, np.int32)


def regression_targets(examples: Sequence[TextExample]) -> np.ndarray:
    """`float32` targets of regression examples."""
    return np.asarray([float(ex.label) for ex in examples], np.float32)


def text_dataset(examples: Sequence[TextExample], preprocessor, labels=None,
                 batch_size: int = 32, shuffle_seed: int | None = None,
                 drop_remainder: bool = False) -> tf.data.Dataset:
    """A batched `tf.data.Dataset` of the model's inputs (and labels).

    Args:
      examples: the rows; either all have `text_b` or none does.
      preprocessor: the model's `keras_bert.text.BertPreprocessor` (mapped over batches).
      labels: per-example targets (class ids from `encode_labels`, floats from
        `regression_targets`), or `None` for inputs only.
      batch_size, drop_remainder: batching.
      shuffle_seed: None: one pass in order; an int: endless epochs, each shuffled by
        `(shuffle_seed, epoch)` (`keras_bert.tasks.task.epoch_shuffled_batches`).

    Returns:
      Elements `(features, labels)` (or `features` alone), `features` the dict of int32
      `[batch, length]` tensors `input_word_ids`, `input_mask`, `input_type_ids`.
    """
    if not examples:
        raise ValueError("No examples to build a dataset from.")
    has_b = [ex.text_b is not None for ex in examples]
    if any(has_b) and not all(has_b):
        first = examples[has_b.index(False)]
        raise ValueError(f"line {first.line}: the example has no text_b while others do; "
                         "a dataset is all single texts or all pairs.")
    texts = tf.constant([ex.text for ex in examples], tf.string)
    if has_b[0]:
        texts = (texts, tf.constant([ex.text_b for ex in examples], tf.string))
    if labels is not None:
        labels = np.asarray(labels)
        if len(labels) != len(examples):
            raise ValueError(f"{len(labels)} labels for {len(examples)} examples.")
    rows = texts if labels is None else (texts, labels)
    if shuffle_seed is None:
        ds = tf.data.Dataset.from_tensor_slices(rows).batch(batch_size,
                                                            drop_remainder=drop_remainder)
    else:
        ds = epoch_shuffled_batches(rows, len(examples), batch_size, shuffle_seed,
                                    drop_remainder)
    if labels is None:
        # A pair arrives as two arguments; join them back into the (text, text_b) input.
        return ds.map(lambda *x: preprocessor(x if len(x) == 2 else x[0]),
                      num_parallel_calls=tf.data.AUTOTUNE, deterministic=True)
    return ds.map(preprocessor, num_parallel_calls=tf.data.AUTOTUNE, deterministic=True)


def classification_dataset(examples: Sequence[TextExample], preprocessor,
                           label_vocab: LabelVocab, **kwargs) -> tf.data.Dataset:
    """`text_dataset` with int32 class ids from `label_vocab` as labels."""
    return text_dataset(examples, preprocessor, encode_labels(examples, label_vocab), **kwargs)


def regression_dataset(examples: Sequence[TextExample], preprocessor,
                       **kwargs) -> tf.data.Dataset:
    """`text_dataset` with float32 targets as labels."""
    return text_dataset(examples, preprocessor, regression_targets(examples), **kwargs)
