"""Multi-label metrics and decision thresholds, in NumPy.

* `multilabel_f1`: micro / macro F1, per-label precision, recall, F1 and support, and
  exact-set (subset) accuracy of 0/1 predictions against 0/1 gold, `[rows, labels]`.
* `tune_thresholds`: per label, the probability cut that maximises that label's F1 on a
  labelled set (a row is predicted positive when its probability is >= the cut).
* `choose_thresholds`: the tuned cuts, except for labels whose tuned F1 does not beat the
  text-blind answers by more than tuning reaches on chance (`chance_f1`): those are named
  unlearned and predicted for every text (`ALWAYS_THRESHOLD`), the better text-blind answer.
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


def _ranked(probabilities: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """`(order, cuts)` of one label's probabilities: the rows by descending probability, and
    the positions in that order after which a cut can fall (where the next probability is
    lower; ties go together). Cutting after position i predicts the top i + 1 rows."""
    order = np.argsort(-probabilities, kind="stable")
    p = probabilities[order]
    return order, np.flatnonzero(np.append(p[1:] < p[:-1], True))


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
    gold, probabilities = _gold_and_probabilities(gold, probabilities)
    thresholds = np.full(gold.shape[1], DEFAULT_THRESHOLD, np.float64)
    for j in range(gold.shape[1]):
        positives = gold[:, j].sum()
        if not positives:
            continue
        order, cuts = _ranked(probabilities[:, j])
        p, g = probabilities[order, j], gold[order, j]
        f1 = 2 * np.cumsum(g)[cuts] / (cuts + 1 + positives)
        lower = np.append(p[cuts[:-1] + 1], 0.0)  # the next lower probability, 0 past the end
        candidates = (p[cuts] + lower) / 2
        best = np.flatnonzero(f1 >= f1.max() - 1e-12)
        chosen = best[np.argmin(np.abs(candidates[best] - DEFAULT_THRESHOLD))]
        thresholds[j] = candidates[chosen] if candidates[chosen] > 0 else p[cuts[chosen]]
    return thresholds.astype(np.float32)


def _gold_and_probabilities(gold, probabilities) -> tuple[np.ndarray, np.ndarray]:
    gold = _binary("gold", gold)
    probabilities = np.asarray(probabilities, np.float64)
    if probabilities.shape != gold.shape:
        raise ValueError(f"probabilities {probabilities.shape} and gold {gold.shape} differ "
                         "in shape")
    return gold, probabilities


# Whether a label was learned. Tuning picks the best of many cuts, so on the set it was
# tuned on its F1 beats the text-blind "every text" answer (F1 2p / (1 + p), p the label's
# positive rate; "no text" scores 0) even when the scores know nothing about the label (issue
# 30's unlearned label: precision 0.06, F1 0.11, barely above every text's). How far chance
# alone lifts that maximum shrinks with the number of rows and grows as p falls (measured
# with this code, p 0.4: 0.16 F1 at 48 rows, 0.04 at 200, 0.007 at 1,000; p 0.06: 0.26 at
# 200 rows, 0.08 at 1,000, 0.013 at 5,000), so no fixed margin fits every set. It is
# measured instead:
# the label's positives are shuffled across the rows CHANCE_SHUFFLES times and the tuning's
# best F1 over the same cuts recomputed; a label counts as learned only when its tuned F1
# beats the CHANCE_QUANTILE of those (a 1% false alarm rate for a label the model did not
# learn; a learned label that falls back loses at most that margin of F1 on this set).
# The shuffles are seeded: the same scores give the same decision.
CHANCE_SHUFFLES = 200
CHANCE_QUANTILE = 0.99
ALWAYS_THRESHOLD = 0.0  # every probability (sigmoid >= 0) reaches it: predicted for every text


def chance_f1(gold, probabilities, shuffles: int = CHANCE_SHUFFLES,
              quantile: float = CHANCE_QUANTILE, seed: int = 0) -> float:
    """The F1 that threshold tuning reaches on one label by chance: the `quantile` of the
    best F1 over the cuts of `probabilities` `[rows]` when the positives of `gold` `[rows]`
    are shuffled across the rows (seeded). At least the "every text" F1, 2p / (1 + p)."""
    gold = np.asarray(gold, bool).reshape(-1)
    probabilities = np.asarray(probabilities, np.float64).reshape(-1)
    positives = int(gold.sum())
    if not positives:
        return 0.0
    _, cuts = _ranked(probabilities)
    rng = np.random.default_rng(seed)
    best = []
    chunk = max(1, (1 << 22) // gold.size)  # bounded memory: ~4M cells per chunk
    for begin in range(0, shuffles, chunk):
        rows = min(chunk, shuffles - begin)
        shuffled = rng.permuted(np.broadcast_to(gold, (rows, gold.size)), axis=1)
        true_positives = np.cumsum(shuffled, axis=1, dtype=np.int32)[:, cuts]
        best.append((2 * true_positives / (cuts + 1 + positives)).max(axis=1))
    return float(np.quantile(np.concatenate(best), quantile, method="higher"))


def choose_thresholds(gold, probabilities) -> tuple[np.ndarray, np.ndarray]:
    """`tune_thresholds`, never worse than a text-blind answer on `(gold, probabilities)`.

    Per label with a positive row: when the tuned threshold's F1 does not beat both
    text-blind answers (no text: F1 0; every text: 2p / (1 + p)) by more than tuning on
    chance does (`chance_f1`, see the comment above it), the label is unlearned and gets
    the better of the two, every text (`ALWAYS_THRESHOLD`; its F1 is above 0). A label
    without a positive row cannot be judged and keeps `DEFAULT_THRESHOLD`.

    Returns `(thresholds, unlearned)`: float32 `[labels]` in [0, 1], bool `[labels]`.
    """
    gold, probabilities = _gold_and_probabilities(gold, probabilities)
    thresholds = tune_thresholds(gold, probabilities)
    unlearned = np.zeros(gold.shape[1], bool)
    for j in range(gold.shape[1]):
        if not gold[:, j].any():
            continue
        predicted = probabilities[:, j] >= thresholds[j]
        tp = float((gold[:, j] & predicted).sum())
        _, _, tuned = _prf(tp, float(predicted.sum()) - tp, float(gold[:, j].sum()) - tp)
        if tuned <= chance_f1(gold[:, j], probabilities[:, j]):
            thresholds[j], unlearned[j] = ALWAYS_THRESHOLD, True
    return thresholds, unlearned


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
