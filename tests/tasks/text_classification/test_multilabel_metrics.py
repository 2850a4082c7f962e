"""Multi-label metrics and threshold tuning against hand-computed values and a brute-force
reference (every threshold tried); the fallback of labels the scores did not learn to a
text-blind threshold."""

from __future__ import annotations

import numpy as np
import pytest

from keras_bert.tasks.text_classification.multilabel import MultiLabelClassifier
from keras_bert.tasks.text_classification.multilabel_metrics import (
    ALWAYS_THRESHOLD,
    chance_f1,
    choose_thresholds,
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


# Fallback: a label whose tuned F1 does not beat the text-blind answers by more than tuning
# reaches on chance gets the better text-blind answer, every text (threshold 0).
# SEPARABLE: 8 positives scored 0.9-0.55, above 8 negatives scored 0.45-0.1: the tuned cut
# 0.5 has F1 1; shuffled positives land exactly on top once in C(16, 8) = 12,870 draws.
SEPARABLE = (np.array([1] * 8 + [0] * 8), np.array([0.9, 0.85, 0.8, 0.75, 0.7, 0.65, 0.6, 0.55,
                                                    0.45, 0.4, 0.35, 0.3, 0.25, 0.2, 0.15, 0.1]))
# LUCKY: 12 rows by descending score 0.95, 0.9, ..., 0.4; positives at ranks 1 3 4 6 8 11.
# Every text: tp 6 of 12 predicted -> F1 2 * 6 / (12 + 6) = 2/3. The best cut, top 8 (tp 5),
# F1 2 * 5 / (8 + 6) = 5/7 > 2/3, at (0.6 + 0.55) / 2 = 0.575; but shuffled positives reach
# more than 5/7 at some cut in well over 1% of draws (6 of 12 is a coin's worth of luck).
LUCKY = (np.array([1, 0, 1, 1, 0, 1, 0, 1, 0, 0, 1, 0]), np.linspace(0.95, 0.4, 12))


def _column(pair):
    gold, scores = pair
    return gold[:, None], scores[:, None]


def test_a_separable_label_keeps_its_tuned_threshold():
    gold, scores = _column(SEPARABLE)
    thresholds, unlearned = choose_thresholds(gold, scores)
    assert thresholds[0] == pytest.approx(0.5) and not unlearned[0]
    assert chance_f1(*SEPARABLE) < 1.0


def test_constant_scores_fall_back_to_every_text():
    # One cut only (every row ties): the tuned F1 is every text's, 2 * 4 / (8 + 4) = 2/3.
    gold = np.array([[1], [0], [1], [0], [1], [0], [1], [0]])
    thresholds, unlearned = choose_thresholds(gold, np.full((8, 1), 0.3))
    assert thresholds[0] == ALWAYS_THRESHOLD == 0.0 and unlearned[0]
    assert chance_f1(gold[:, 0], np.full(8, 0.3)) == pytest.approx(2 / 3)


def test_a_lucky_cut_on_noise_falls_back():
    gold, scores = _column(LUCKY)
    assert tune_thresholds(gold, scores)[0] == pytest.approx(0.575)
    assert _f1(gold[:, 0].astype(bool), scores[:, 0] >= 0.575) == pytest.approx(5 / 7)
    assert 5 / 7 < chance_f1(*LUCKY) <= 1.0
    thresholds, unlearned = choose_thresholds(gold, scores)
    assert thresholds[0] == 0.0 and unlearned[0]


@pytest.mark.parametrize("seed", range(5))
def test_pure_noise_scores_fall_back_and_learned_scores_do_not(seed):
    rng = np.random.default_rng(seed)
    gold = rng.random((400, 1)) < 0.3
    noise = rng.random((400, 1))
    learned = np.clip(0.5 * gold + 0.6 * rng.random((400, 1)), 0, 1)  # overlapping classes
    thresholds, unlearned = choose_thresholds(np.hstack([gold, gold]),
                                              np.hstack([noise, learned]))
    assert list(unlearned) == [True, False]
    assert thresholds[0] == 0.0
    assert thresholds[1] == tune_thresholds(gold, learned)[0]


def test_chance_f1_is_seeded_and_at_least_every_text():
    gold, scores = SEPARABLE
    assert chance_f1(gold, scores) == chance_f1(gold, scores)
    assert chance_f1(gold, scores) >= 2 * 0.5 / 1.5
    assert chance_f1(np.zeros(4), np.ones(4)) == 0.0


def test_scores_name_the_unlearned_labels_and_save_their_thresholds():
    # Label "noise": constant logits; "rule": SEPARABLE's scores; "absent": no positive row
    # (cannot be judged: keeps 0.5, not named).
    gold_rule, scores = SEPARABLE
    gold = np.stack([np.zeros(16), np.tile([1, 0], 8), gold_rule], axis=1)
    logits = np.stack([np.zeros(16), np.zeros(16), np.log(scores / (1 - scores))], axis=1)
    model = MultiLabelClassifier.from_pretrained("random-tiny", labels=["absent", "noise", "rule"],
                                                 seq_length=8, precision="float32")
    result = model._task_metrics(gold, logits)
    assert result["unlearned_labels"] == ["noise"]
    assert result["thresholds"] == pytest.approx({"absent": 0.5, "noise": 0.0, "rule": 0.5})
    assert result["per_label"]["noise"]["f1"] == pytest.approx(2 / 3)  # every text, p = 1/2
    assert result["per_label"]["rule"]["f1"] == 1.0
    # the baselines' most frequent set comes from gold when no training rows are given
    assert result["baselines"]["most_frequent_set"]["labels"] == ["noise", "rule"]
    model.tune_on(result)
    assert model._task_block()["thresholds"] == pytest.approx([0.5, 0.0, 0.5])
