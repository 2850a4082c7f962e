"""What a text classifier's, multi-label classifier's and regressor's files hold: labels,
label sets and scores (`read_examples`), and the `tf.data` batches of their rows.

A multi-label row's labels are `|`-separated in CSV/TSV (an empty field: no label) and a
JSON list of strings (or such a `|`-separated string) in JSONL. `text_dataset` turns
examples into a `tf.data.Dataset` of BERT inputs: the strings are batched first, then one
map of the model's `BertPreprocessor` over each batch (the same object its SavedModel
embeds) tokenizes and packs them.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Sequence

import numpy as np
import tensorflow as tf

from keras_bert.tasks.batches import epoch_shuffled_batches
from keras_bert.tasks.labels import LabelVocab
from keras_bert.tasks.readers import TextExample, read_rows
from keras_bert.training.stream_options import fit_stream

CLASSIFICATION = "classification"
REGRESSION = "regression"
MULTILABEL = "multilabel"
LABEL_SEPARATOR = "|"


def read_examples(path, text_column: str = "text", text_b_column: str | None = None,
                  label_column: str | None = "label", task: str = CLASSIFICATION,
                  labels: LabelVocab | Sequence[str] | None = None,
                  format: str | None = None) -> list[TextExample]:
    """Reads classification, multi-label or regression examples from a CSV, TSV or JSONL
    file (`keras_bert.tasks.readers.read_rows`).

    `task`: `"classification"` (labels kept as strings), `"multilabel"` (tuples of label
    strings; see the module docstring) or `"regression"` (labels parsed as floats; a
    non-numeric or non-finite one is an error). `labels`: for classification and
    multi-label, the allowed labels (e.g. the training `LabelVocab` at evaluation time); a
    row with another label is an error. `None` allows any.
    """
    if task not in _LABEL_PARSERS:
        raise ValueError(f"task must be one of {tuple(_LABEL_PARSERS)}, got {task!r}")
    allowed = None if labels is None else {str(name) for name in labels}
    return read_rows(path, text_column, text_b_column, label_column,
                     functools.partial(_LABEL_PARSERS[task], allowed=allowed), format)


def _class_label(raw, path, line: int, allowed: set[str] | None = None) -> str:
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


def _label_set(raw, path, line: int, allowed: set[str] | None = None) -> tuple[str, ...]:
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


def _regression_target(raw, path, line: int, allowed=None) -> float:
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


def label_vocab_of(examples: Sequence[TextExample]) -> LabelVocab:
    """The sorted label set of classification examples."""
    return LabelVocab.from_labels(ex.label for ex in examples)


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


def are_pairs(examples: Sequence[TextExample]) -> bool:
    """Whether `examples` are sentence pairs: all of them, or none (else an error naming
    the first one without a `text_b`)."""
    if not examples:
        raise ValueError("No examples to build a dataset from.")
    has_b = [ex.text_b is not None for ex in examples]
    if any(has_b) and not all(has_b):
        first = examples[has_b.index(False)]
        raise ValueError(f"line {first.line}: the example has no text_b while others do; "
                         "a dataset is all single texts or all pairs.")
    return has_b[0]


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
        `(shuffle_seed, epoch)` (`keras_bert.tasks.batches.epoch_shuffled_batches`).

    Returns:
      Elements `(features, labels)` (or `features` alone), `features` the dict of int32
      `[batch, length]` tensors `input_word_ids`, `input_mask`, `input_type_ids`.
    """
    pair = are_pairs(examples)
    texts = tf.constant([ex.text for ex in examples], tf.string)
    if pair:
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
        return fit_stream(ds.map(lambda *x: preprocessor(x if len(x) == 2 else x[0]),
                                 num_parallel_calls=tf.data.AUTOTUNE, deterministic=True))
    return fit_stream(ds.map(preprocessor, num_parallel_calls=tf.data.AUTOTUNE,
                             deterministic=True))


def classification_dataset(examples: Sequence[TextExample], preprocessor,
                           label_vocab: LabelVocab, **kwargs) -> tf.data.Dataset:
    """`text_dataset` with int32 class ids from `label_vocab` as labels."""
    return text_dataset(examples, preprocessor, encode_labels(examples, label_vocab), **kwargs)


def regression_dataset(examples: Sequence[TextExample], preprocessor,
                       **kwargs) -> tf.data.Dataset:
    """`text_dataset` with float32 targets as labels."""
    return text_dataset(examples, preprocessor, regression_targets(examples), **kwargs)
