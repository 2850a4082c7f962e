"""What a Python user hands a task model, as the rows the package's data pipeline reads.

`fit`, `evaluate` and `predict` of the task models take texts as a list, a tuple, a
NumPy array or a pandas Series of strings; sentence pairs as a list of `(text, text_b)`
tuples, a `(texts, texts_b)` tuple of two such sequences, or a dict with `text` and
`text_b`; multi-label targets as a list of labels per text, or a 0/1 matrix. They become
`keras_bert.tasks.readers.TextExample` rows, the rows `keras-bert finetune` reads from a
file, so both paths share one data pipeline. Each kind's own targets (tags, answers) are
read in its folder.
Every problem is one `ValueError` (or `TypeError`) that names it.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from keras_bert.tasks.labels import LabelVocab
from keras_bert.tasks.readers import TextExample


def as_list(values, what: str) -> list:
    """`values` (list, tuple, array, pandas Series) as a list; refuses a lone string."""
    if isinstance(values, (str, bytes)):
        raise TypeError(f"{what} is a single string; pass a list of strings (e.g. [text])")
    if hasattr(values, "tolist") and not isinstance(values, np.ndarray):  # pandas Series
        values = values.tolist()
    if isinstance(values, np.ndarray):
        if values.ndim != 1 and not (values.ndim == 2 and values.shape[1] == 2):
            raise ValueError(f"{what} has shape {values.shape}; expected [texts] or "
                             "[texts, 2] (pairs)")
        values = values.tolist()
    if not isinstance(values, (list, tuple)):
        raise TypeError(f"{what} must be a list, tuple, NumPy array or pandas Series of "
                        f"strings, got {type(values).__name__}")
    if not values:
        raise ValueError(f"{what} is empty")
    return list(values)


def as_text(value, what: str, index: int) -> str:
    if isinstance(value, bytes):
        return value.decode("utf-8")
    if not isinstance(value, str):
        raise TypeError(f"{what}[{index}] is a {type(value).__name__} ({value!r}), not a "
                        "string")
    return value


def text_examples(x, pair: bool, what: str = "x") -> list[TextExample]:
    """The rows of `x` (see the module docstring) for a model that reads pairs or not."""
    if isinstance(x, dict):
        unknown = sorted(set(x) - {"text", "text_b"})
        if "text" not in x or unknown:
            raise ValueError(f"{what} as a dict holds 'text' and optionally 'text_b', got "
                             f"keys {sorted(x)}")
        firsts = as_list(x["text"], f"{what}['text']")
        seconds = as_list(x["text_b"], f"{what}['text_b']") if "text_b" in x else None
    elif (isinstance(x, tuple) and len(x) == 2
          and not any(isinstance(part, (str, bytes)) for part in x)):
        firsts = as_list(x[0], f"{what}[0]")
        seconds = as_list(x[1], f"{what}[1]")
    else:
        rows = as_list(x, what)
        if all(isinstance(row, (tuple, list)) for row in rows):
            if any(len(row) != 2 for row in rows):
                raise ValueError(f"{what}: a pair is (text, text_b); a row has "
                                 f"{next(len(r) for r in rows if len(r) != 2)} parts")
            firsts, seconds = [row[0] for row in rows], [row[1] for row in rows]
        elif any(isinstance(row, (tuple, list)) for row in rows):
            index = next(i for i, r in enumerate(rows) if isinstance(r, (tuple, list))
                         != isinstance(rows[0], (tuple, list)))
            raise TypeError(f"{what} mixes single texts and pairs (row {index})")
        else:
            firsts, seconds = rows, None
    if seconds is not None and len(seconds) != len(firsts):
        raise ValueError(f"{what}: {len(firsts)} texts but {len(seconds)} second texts")
    if pair and seconds is None:
        raise ValueError(f"this model reads sentence pairs; {what} holds single texts (pass "
                         "(text, text_b) tuples or (texts, texts_b))")
    if not pair and seconds is not None:
        raise ValueError(f"this model reads single texts; {what} holds pairs")
    texts = [as_text(v, what, i) for i, v in enumerate(firsts)]
    texts_b = None if seconds is None else [as_text(v, f"{what} text_b", i)
                                            for i, v in enumerate(seconds)]
    return [TextExample(text, None if texts_b is None else texts_b[i], None, i)
            for i, text in enumerate(texts)]


def class_ids(y, labels: LabelVocab, count: int, what: str = "y") -> np.ndarray:
    """int32 class ids of `y`: label names (`str`) or ids (`int`), one per text."""
    values = as_list(y, what)
    if len(values) != count:
        raise ValueError(f"{what} has {len(values)} targets for {count} texts")
    ids = []
    for i, value in enumerate(values):
        if isinstance(value, (bool, np.bool_)) or isinstance(value, (list, tuple, np.ndarray)):
            raise ValueError(f"{what}[{i}] is {value!r}: one label (a name or an id) per text")
        if isinstance(value, (int, np.integer)):
            if not 0 <= int(value) < len(labels):
                raise ValueError(f"{what}[{i}] is the id {int(value)}; ids run from 0 to "
                                 f"{len(labels) - 1} ({labels.names})")
            ids.append(int(value))
        elif isinstance(value, (str, bytes)):
            name = value.decode("utf-8") if isinstance(value, bytes) else value
            if name not in labels:
                raise ValueError(f"{what}[{i}] is {name!r}, which is not one of the model's "
                                 f"labels {labels.names}")
            ids.append(labels.id(name))
        else:
            raise TypeError(f"{what}[{i}] is a {type(value).__name__} ({value!r}); a label "
                            "is a name or an id")
    return np.asarray(ids, np.int32)


def scores(y, count: int, what: str = "y") -> np.ndarray:
    """float32 regression targets of `y`, one finite number per text."""
    values = as_list(y, what)
    if len(values) != count:
        raise ValueError(f"{what} has {len(values)} targets for {count} texts")
    out = []
    for i, value in enumerate(values):
        if isinstance(value, (str, bytes, bool, np.bool_, list, tuple, np.ndarray)):
            raise TypeError(f"{what}[{i}] is {value!r}; a regression target is one number")
        number = float(value)
        if not np.isfinite(number):
            raise ValueError(f"{what}[{i}] is {number}; targets must be finite")
        out.append(number)
    return np.asarray(out, np.float32)


def label_names(labels: Sequence[str] | int, minimum: int = 2) -> LabelVocab:
    """A `LabelVocab` from label names, or from a class count (names "0", "1", ...), of at
    least `minimum` labels."""
    if isinstance(labels, (int, np.integer)) and not isinstance(labels, bool):
        if labels < minimum:
            raise ValueError(f"a classifier needs at least {minimum} label"
                             f"{'s' if minimum > 1 else ''}, got {labels}")
        return LabelVocab([str(i) for i in range(int(labels))])
    if isinstance(labels, (str, bytes)):
        raise TypeError("labels is a single string; pass the list of label names")
    vocab = LabelVocab(list(labels))
    if len(vocab) < minimum:
        raise ValueError(f"a classifier needs at least {minimum} label"
                         f"{'s' if minimum > 1 else ''}, got {vocab.names}")
    return vocab


def label_sets(y, labels: LabelVocab, count: int, what: str = "y") -> list[tuple[str, ...]]:
    """Each text's labels as names: per text a list of label names or ids (`[]`: none), or
    a 0/1 matrix `[texts, labels]` (a NumPy array or pandas DataFrame; a list of lists is
    read as label lists)."""
    if hasattr(y, "to_numpy") and getattr(y, "ndim", 1) == 2:  # pandas DataFrame
        y = y.to_numpy()
    if isinstance(y, np.ndarray) and y.ndim == 2 and y.dtype.kind in "biuf":
        if y.shape != (count, len(labels)):
            raise ValueError(f"{what} has shape {y.shape}; a 0/1 matrix is [texts, labels] = "
                             f"({count}, {len(labels)})")
        if not np.isin(y, (0, 1)).all():
            raise ValueError(f"{what} holds values other than 0 and 1; a 0/1 matrix marks "
                             "each text's labels")
        return [tuple(labels.name(j) for j in np.flatnonzero(row)) for row in y]
    rows = y.tolist() if isinstance(y, np.ndarray) and y.ndim == 2 else as_list(y, what)
    if len(rows) != count:
        raise ValueError(f"{what} has {len(rows)} label lists for {count} texts")
    out = []
    for i, row in enumerate(rows):
        if isinstance(row, (set, frozenset)):
            row = sorted(row, key=str)
        if not isinstance(row, (list, tuple, np.ndarray)):
            raise TypeError(f"{what}[{i}] is {row!r}: one list of labels per text (names or "
                            "ids; [] for none)")
        row = list(row)
        names = [labels.name(int(k)) for k in class_ids(row, labels, len(row), f"{what}[{i}]")
                 ] if row else []
        repeated = next((name for name in names if names.count(name) > 1), None)
        if repeated is not None:
            raise ValueError(f"{what}[{i}] names the label {repeated!r} twice")
        out.append(tuple(names))
    return out
