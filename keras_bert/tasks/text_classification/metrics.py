"""Metrics of text classification and regression, in plain Python/NumPy: `accuracy`,
`pearson` and `spearman` (regression, e.g. STS-B)."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np


def accuracy(y_true: Sequence, y_pred: Sequence) -> float:
    """Fraction of positions where `y_pred` equals `y_true`."""
    y_true, y_pred = _paired(y_true, y_pred)
    return float(np.mean(y_true == y_pred))


def pearson(x: Sequence[float], y: Sequence[float]) -> float:
    """Pearson correlation; NaN when either input is constant (no correlation defined)."""
    x, y = _paired(x, y, np.float64)
    if len(x) < 2:
        raise ValueError("Correlation needs at least 2 values.")
    dx, dy = x - x.mean(), y - y.mean()
    denominator = np.sqrt(np.sum(dx * dx) * np.sum(dy * dy))
    return float(np.sum(dx * dy) / denominator) if denominator > 0 else float("nan")


def average_ranks(values: Sequence[float]) -> np.ndarray:
    """1-based ranks; tied values share the mean of the ranks they span."""
    values = np.asarray(values, np.float64)
    order = np.argsort(values, kind="stable")
    ranks = np.empty(len(values), np.float64)
    sorted_values = values[order]
    i = 0
    while i < len(values):
        j = i
        while j + 1 < len(values) and sorted_values[j + 1] == sorted_values[i]:
            j += 1
        ranks[order[i:j + 1]] = (i + j) / 2 + 1  # mean of ranks i+1 .. j+1
        i = j + 1
    return ranks


def spearman(x: Sequence[float], y: Sequence[float]) -> float:
    """Spearman rank correlation: Pearson of the average ranks (ties share their mean)."""
    x, y = _paired(x, y, np.float64)
    return pearson(average_ranks(x), average_ranks(y))


def _paired(a, b, dtype=None):
    a, b = np.asarray(a, dtype), np.asarray(b, dtype)
    if a.shape != b.shape:
        raise ValueError(f"Inputs of different shapes {a.shape} and {b.shape}.")
    if a.size == 0:
        raise ValueError("Empty inputs.")
    return a, b
