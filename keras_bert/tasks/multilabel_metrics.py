"""Multi-label metrics and decision thresholds, in NumPy.

* `multilabel_f1`: micro / macro F1, per-label precision, recall, F1 and support, and
  exact-set (subset) accuracy of 0/1 predictions against 0/1 gold, `[rows, labels]`.
* `tune_thresholds`: per label, the probability cut that maximises that label's F1 on a
  labelled set (a row is predicted positive when its probability is >= the cut).
* `multilabel_baselines`: what a model that ignores the text scores: predicting no label
  (micro F1 0 whenever gold has a positive), every label, and the most frequent label set
  of the training data, for every row.

Conventions follow scikit-learn's `f1_score(average=...)` with `zero_division=0`: a ratio
with a zero denominator is 0; macro F1 is the unweighted mean over all labels.
"""

from __future__ import annotations

import collections
from collections.abc import Sequence

import numpy as np

DEFAULT_THRESHOLD = 0.5


def _prf(tp: float, fp: float, fn: float) -> tuple[float, float, float]:
    precision = tp / (tp + fp) if tp + fp else 0.0
    recall = tp / (tp + fn) if tp + fn else 0.0
    f1 = 2 * precision * recall / (precision + recall) if precision + recall else 0.0
    return precision, recall, f1


def _binary(name: str, value) -> np.ndarray:
    array = np.asarray(value)
    if array.ndim != 2:
        raise ValueError(f"{name} must be [rows, labels], got shape {array.shape}")
    if not np.isin(array, (0, 1)).all():
        raise ValueError(f"{name} must hold only 0 and 1")
    return array.astype(bool)


def multilabel_f1(gold, predicted, label_names: Sequence[str] | None = None) -> dict:
    """Micro / macro F1, per-label scores and subset accuracy.

    Args:
      gold, predicted: 0/1 arrays `[rows, labels]` of one shape.
      label_names: names for `per_label` (default "0", "1", ...).

    Returns:
      `{"micro_f1", "micro_precision", "micro_recall", "macro_f1", "subset_accuracy",
      "per_label": {name: {"precision", "recall", "f1", "support"}}}`.
    """
    gold, predicted = _binary("gold", gold), _binary("predicted", predicted)
    if gold.shape != predicted.shape:
        raise ValueError(f"gold {gold.shape} and predicted {predicted.shape} differ in shape")
    if not gold.size:
        raise ValueError("no rows to score")
    names = list(label_names) if label_names is not None else [str(i)
                                                               for i in range(gold.shape[1])]
    if len(names) != gold.shape[1]:
        raise ValueError(f"{len(names)} label names for {gold.shape[1]} labels")
    tp = (gold & predicted).sum(axis=0)
    fp = (~gold & predicted).sum(axis=0)
    fn = (gold & ~predicted).sum(axis=0)
    per_label = {}
    for j, name in enumerate(names):
        precision, recall, f1 = _prf(tp[j], fp[j], fn[j])
        per_label[name] = {"precision": precision, "recall": recall, "f1": f1,
                           "support": int(gold[:, j].sum())}
    precision, recall, f1 = _prf(tp.sum(), fp.sum(), fn.sum())
    return {"micro_f1": f1, "micro_precision": precision, "micro_recall": recall,
            "macro_f1": float(np.mean([s["f1"] for s in per_label.values()])),
            "subset_accuracy": float(np.mean((gold == predicted).all(axis=1))),
            "per_label": per_label}


def tune_thresholds(gold, probabilities) -> np.ndarray:
    """Per-label decision thresholds that maximise each label's F1 on `(gold, probabilities)`.

    For each label the rows are ranked by probability; predicting the top k positive for
    each k where the probability changes gives every reachable F1. The best k wins (ties:
    the threshold nearest `DEFAULT_THRESHOLD`), and the cut is placed halfway between the
    k-th probability and the next lower one, so that nearby probabilities on new data fall
    on the side they fell on here. A label without a positive row keeps
    `DEFAULT_THRESHOLD` (no F1 to maximise).

    Returns float32 thresholds `[labels]`, each in (0, 1].
    """
    gold = _binary("gold", gold)
    probabilities = np.asarray(probabilities, np.float64)
    if probabilities.shape != gold.shape:
        raise ValueError(f"probabilities {probabilities.shape} and gold {gold.shape} differ "
                         "in shape")
    thresholds = np.full(gold.shape[1], DEFAULT_THRESHOLD, np.float64)
    for j in range(gold.shape[1]):
        positives = gold[:, j].sum()
        if not positives:
            continue
        order = np.argsort(-probabilities[:, j], kind="stable")
        p, g = probabilities[order, j], gold[order, j]
        true_positives = np.cumsum(g)
        # Cut after row i only where the next probability is lower (ties go together).
        cuts = np.flatnonzero(np.append(p[1:] < p[:-1], True))
        f1 = 2 * true_positives[cuts] / (cuts + 1 + positives)
        lower = np.append(p[cuts[:-1] + 1], 0.0)  # the next lower probability, 0 past the end
        candidates = (p[cuts] + lower) / 2
        best = np.flatnonzero(f1 >= f1.max() - 1e-12)
        chosen = best[np.argmin(np.abs(candidates[best] - DEFAULT_THRESHOLD))]
        thresholds[j] = candidates[chosen] if candidates[chosen] > 0 else p[cuts[chosen]]
    return thresholds.astype(np.float32)


def most_frequent_set(label_sets: Sequence[Sequence[str]]) -> tuple[str, ...]:
    """The label set that occurs most often (ties: the first seen)."""
    counts = collections.Counter(tuple(sorted(s)) for s in label_sets)
    if not counts:
        raise ValueError("no label sets")
    return counts.most_common(1)[0][0]


def multilabel_baselines(gold, train_label_sets: Sequence[Sequence[str]],
                         label_names: Sequence[str]) -> dict:
    """Micro / macro F1 and subset accuracy of three text-blind answers on `gold`
    `[rows, labels]`: no label for any row (`all_negative`), every label for every row
    (`all_labels`: what thresholds at 0 give) and the training data's most frequent label
    set for every row (`most_frequent_set`, which names the set)."""
    gold = _binary("gold", gold)
    names = list(label_names)
    frequent = most_frequent_set(train_label_sets)
    row = np.array([name in frequent for name in names], bool)
    out = {}
    for key, predicted in (("all_negative", np.zeros_like(gold)),
                           ("all_labels", np.ones_like(gold)),
                           ("most_frequent_set", np.broadcast_to(row, gold.shape))):
        scores = multilabel_f1(gold, predicted, names)
        out[key] = {"micro_f1": scores["micro_f1"], "macro_f1": scores["macro_f1"],
                    "subset_accuracy": scores["subset_accuracy"]}
    out["most_frequent_set"]["labels"] = list(frequent)
    return out
