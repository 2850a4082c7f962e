"""Multi-label metrics and threshold tuning against hand-computed values and a brute-force
reference (every threshold tried)."""

from __future__ import annotations

import numpy as np
import pytest

from keras_bert.tasks.multilabel_metrics import (
    most_frequent_set,
    multilabel_baselines,
    multilabel_f1,
    tune_thresholds,
)

GOLD = np.array([[1, 0, 1],
                 [0, 1, 0],
                 [1, 1, 0],
                 [0, 0, 0]])
PRED = np.array([[1, 0, 0],
                 [0, 1, 1],
                 [1, 0, 0],
                 [0, 0, 0]])


def test_f1_by_hand():
    scores = multilabel_f1(GOLD, PRED, ["a", "b", "c"])
    # label a: tp 2 fp 0 fn 0 -> f1 1 ; b: tp 1 fp 0 fn 1 -> p 1 r .5 f1 2/3 ;
    # c: tp 0 fp 1 fn 1 -> f1 0 ; micro: tp 3 fp 1 fn 2 -> p 3/4 r 3/5 f1 = 2/3
    assert scores["per_label"]["a"] == {"precision": 1.0, "recall": 1.0, "f1": 1.0, "support": 2}
    assert scores["per_label"]["b"]["f1"] == pytest.approx(2 / 3)
    assert scores["per_label"]["c"]["f1"] == 0.0 and scores["per_label"]["c"]["support"] == 1
    assert scores["micro_precision"] == pytest.approx(0.75)
    assert scores["micro_recall"] == pytest.approx(0.6)
    assert scores["micro_f1"] == pytest.approx(2 * 0.75 * 0.6 / 1.35)
    assert scores["macro_f1"] == pytest.approx((1 + 2 / 3 + 0) / 3)


def test_subset_accuracy_counts_whole_rows():
    # rows equal: row 3 only (row 0 misses c, row 1 adds c, row 2 misses b) -> 1/4
    assert multilabel_f1(GOLD, PRED)["subset_accuracy"] == 0.25


def test_bad_shapes_and_values():
    with pytest.raises(ValueError, match="differ in shape"):
        multilabel_f1(GOLD, PRED[:, :2])
    with pytest.raises(ValueError, match="only 0 and 1"):
        multilabel_f1(GOLD, PRED * 2)


def _f1(gold, predicted):
    tp = np.sum(gold & predicted)
    return 2 * tp / (gold.sum() + predicted.sum()) if gold.sum() + predicted.sum() else 0.0


@pytest.mark.parametrize("seed", range(20))
def test_tuned_threshold_is_optimal_against_brute_force(seed):
    rng = np.random.default_rng(seed)
    rows, labels = int(rng.integers(5, 40)), 3
    gold = rng.random((rows, labels)) < rng.uniform(0.1, 0.6)
    noisy = np.clip(gold * 0.3 + rng.random((rows, labels)) * 0.7, 0, 1)
    noisy = np.round(noisy, 2)  # ties on purpose
    thresholds = tune_thresholds(gold, noisy)
    for j in range(labels):
        if not gold[:, j].any():
            assert thresholds[j] == 0.5
            continue
        grid = np.concatenate([np.unique(noisy[:, j]), [1.01]])
        best = max(_f1(gold[:, j], noisy[:, j] >= t) for t in grid)
        assert _f1(gold[:, j], noisy[:, j] >= thresholds[j]) == pytest.approx(best)
        assert 0 < thresholds[j] <= 1


def test_threshold_sits_between_the_classes():
    gold = np.array([[1], [1], [0], [0]])
    probabilities = np.array([[0.9], [0.7], [0.3], [0.1]])
    # any cut in (0.3, 0.7] is perfect; the midpoint of the gap is 0.5
    assert tune_thresholds(gold, probabilities)[0] == pytest.approx(0.5)
    probabilities = np.array([[0.2], [0.15], [0.1], [0.05]])
    assert tune_thresholds(gold, probabilities)[0] == pytest.approx(0.125)


def test_baselines():
    train = [("a",), ("a",), ("b", "a"), ()]
    assert most_frequent_set(train) == ("a",)
    result = multilabel_baselines(GOLD, train, ["a", "b", "c"])
    assert result["all_negative"]["micro_f1"] == 0.0
    assert result["all_negative"]["subset_accuracy"] == 0.25  # row 3 has no label
    # every label: tp 5 fp 7 fn 0 -> p 5/12 r 1 -> f1 10/17
    assert result["all_labels"]["micro_f1"] == pytest.approx(10 / 17)
    # always {a}: tp 2 fp 2 fn 3 -> p .5 r .4 -> f1 4/9
    assert result["most_frequent_set"]["micro_f1"] == pytest.approx(4 / 9)
    assert result["most_frequent_set"]["labels"] == ["a"]
