"""Rows of text from CSV / TSV / JSONL files and stdin: the readers every kind shares.

Files:
  * `.csv`: comma-separated with a header row, RFC 4180 quoting (a quoted field may hold
    commas, quotes written `""` and line breaks).
  * `.tsv`: tab-separated with a header row and NO quoting, like the GLUE files read by
    the original BERT `_read_tsv` (`quotechar=None`): a `"` is an ordinary character.
  * `.jsonl` (or `.ndjson`): one JSON object per line; blank lines are skipped.

Files are UTF-8 (a leading byte-order mark, as spreadsheet exports write, is skipped).
Columns are chosen by name (`text`, optional `text_b`, `label`); what a label is, each kind
says (`parse_label`: `keras_bert.tasks.text_classification.readers`). Every problem is a
`ValueError` that names the file, the line (1-based; for CSV the line where the record
starts) and what is wrong.
"""

from __future__ import annotations

import csv
import errno
import io
import json
import os
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass

from keras_bert.text.files import open_utf8, read_utf8

_FORMATS = {".csv": "csv", ".tsv": "tsv", ".jsonl": "jsonl", ".ndjson": "jsonl"}
# (raw value, file, line) -> the label; raises ValueError naming the file and line.
LabelParser = Callable[[object, object, int], object]


@dataclass(frozen=True)
class TextExample:
    """One row: `text`, optional `text_b` (pair tasks) and `label`.

    `label` is a `str` (classification), a tuple of `str` (multi-label; empty: no label), a
    `float` (regression) or `None` (no label column: data to predict on). `line` is the
    row's line number in its file.
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


def read_rows(path, text_column: str = "text", text_b_column: str | None = None,
              label_column: str | None = "label", parse_label: LabelParser | None = None,
              format: str | None = None) -> list[TextExample]:
    """The `TextExample`s of a CSV, TSV or JSONL file, in file order.

    Args:
      path: the file.
      text_column, text_b_column: names of the first and (pair tasks) second text column.
      label_column: name of the label column; `None` for unlabeled data.
      parse_label: `(raw, path, line) -> label` (the kind's rule); None keeps the raw value.
      format: `"csv"`, `"tsv"` or `"jsonl"`; default from the extension.

    Raises:
      ValueError: naming the file and line, for an empty file, a missing column (the
        available ones are listed), a row of the wrong width, invalid JSON, or a label
        `parse_label` refuses.
    """
    if os.path.isdir(path):
        raise IsADirectoryError(errno.EISDIR, "a directory, not a CSV/TSV/JSONL file", str(path))
    fmt = format or file_format(path)
    rows = _jsonl_rows(path) if fmt == "jsonl" else _delimited_rows(path, fmt)
    examples = []
    for line, row in rows:
        text = _field(row, text_column, path, line)
        text_b = None if text_b_column is None else _field(row, text_b_column, path, line)
        label = None
        if label_column is not None:
            raw = row.get(label_column, _MISSING)
            if raw is _MISSING:
                _missing_column(label_column, row, path, line)
            label = raw if parse_label is None else parse_label(raw, path, line)
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
