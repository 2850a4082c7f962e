"""`keras-bert finetune --task multilabel`, `predict` and the export, end to end on tiny data.

Data rule (generated here, seeded): sentences of 4-8 filler words; `whale` is inserted with
probability 1/2 and `capital` with probability 2/5, independently; a sentence's labels are
the inserted words (`whale`, `capital`, both or none).

`metrics.json` is checked against `keras-bert predict` on the same file, scored here by a
NumPy computation of micro F1; the export, loaded the way TF Serving loads it, answers as
`predict` does.
"""

from __future__ import annotations

import csv
import json

import numpy as np
import pytest

from keras_bert.export.session_bundle import SessionBundle
from keras_bert.jobs.finetune import eval_line
from keras_bert.tasks.task_dir import export_model, read_task_dir
from keras_bert.tasks.task_model import TextTaskModel
from tests.jobs.test_finetune import FAST, FILLER, _json_lines, _run, _write_csv

LABELS = ["capital", "whale"]


def _rows(rng, n):
    rows = []
    for _ in range(n):
        words = list(rng.choice(FILLER[:14], size=rng.integers(4, 9)))
        labels = []
        for label, p in (("whale", 0.5), ("capital", 0.4)):
            if rng.random() < p:
                words.insert(int(rng.integers(len(words) + 1)), label)
                labels.append(label)
        rows.append((" ".join(words), "|".join(labels)))
    return rows


def _micro_f1(gold, predicted):
    tp = sum(len(set(g) & set(p)) for g, p in zip(gold, predicted, strict=True))
    total = sum(len(g) for g in gold) + sum(len(p) for p in predicted)
    return 2 * tp / total if total else 0.0


@pytest.mark.slow
def test_finetune_multilabel_then_predict_and_serve(model_dir, tmp_path, rng, capsys):
    train = _write_csv(tmp_path / "train.csv", ["text", "label"], _rows(rng, 128))
    evaluation = _write_csv(tmp_path / "eval.csv", ["text", "label"], _rows(rng, 48))
    out = tmp_path / "run"
    code, _, err = _run(["finetune", "--task", "multilabel", "--model", model_dir, "--train",
                         train, "--eval", evaluation, "--out", str(out), *FAST], capsys)
    assert code == 0, err
    metrics = json.loads((out / "metrics.json").read_text())["eval"]
    assert set(metrics["per_label"]) == set(LABELS)
    assert set(metrics["baselines"]) == {"all_negative", "all_labels",
                                           "most_frequent_set"}
    loaded = TextTaskModel.load(str(out / "model"))
    loaded_block = read_task_dir(str(out / "model")).block
    assert loaded.kind == "multilabel" and loaded.labels.names == LABELS
    thresholds = loaded_block["thresholds"]
    assert thresholds == pytest.approx([metrics["thresholds"][n] for n in LABELS])
    # FAST's 2 epochs may leave a label unlearned: named, and at threshold 0 (every text)
    assert set(metrics["unlearned_labels"]) <= set(LABELS)
    for name, t in zip(LABELS, thresholds, strict=True):
        assert t == 0.0 if name in metrics["unlearned_labels"] else 0 < t <= 1

    code, stdout, err = _run(["predict", str(out / "model"), "--input", evaluation], capsys)
    assert code == 0, err
    answers = _json_lines(stdout)
    assert len(answers) == 48
    for answer in answers:
        scores = answer["scores"]
        assert set(scores) == set(LABELS) and all(0 <= p <= 1 for p in scores.values())
        chosen = sorted((n for n, t in zip(LABELS, thresholds, strict=True)
                         if scores[n] >= t), key=lambda n: -scores[n])
        assert answer["labels"] == chosen
    with open(evaluation, encoding="utf-8") as f:
        gold = [[x for x in row["label"].split("|") if x] for row in csv.DictReader(f)]
    assert _micro_f1(gold, [a["labels"] for a in answers]) == pytest.approx(
        metrics["micro_f1"])

    exported = export_model(str(out / "model"), str(tmp_path / "export"))
    texts = [row["text"] for row in csv.DictReader(open(evaluation, encoding="utf-8"))][:8]
    with SessionBundle(exported.path) as bundle:
        served = bundle.run("serving_default", {"text": np.array(texts, dtype=object)})
    assert served["scores"].shape == served["labels"].shape == (8, 2)
    for row, answer in zip(range(8), answers, strict=False):
        np.testing.assert_allclose(served["scores"][row],
                                   [answer["scores"][n] for n in LABELS], atol=1e-5)
        names = [x.decode() for x in served["labels"][row]]
        assert names == answer["labels"] + [""] * (2 - len(answer["labels"]))


def test_multilabel_needs_labels(model_dir, tmp_path, rng, capsys):
    train = _write_csv(tmp_path / "none.csv", ["text", "label"], [("a whale", "")] * 4)
    code, _, err = _run(["finetune", "--task", "multilabel", "--model", model_dir, "--train",
                         train, "--out", str(tmp_path / "x"), *FAST], capsys)
    assert code == 2
    assert "no row has a label" in err and err.count("\n") == 1, err


def test_the_eval_line_names_unlearned_labels():
    evaluation = {"micro_f1": 0.5, "macro_f1": 0.25, "unlearned_labels": ["capital"],
                  "thresholds": {"capital": 0.0, "whale": 0.5}}
    assert eval_line("multilabel", evaluation) == (
        "eval multilabel: micro_f1=0.5000, macro_f1=0.2500; unlearned labels (F1 no better "
        "than text-blind, now predicted for every text): capital")
    assert eval_line("multilabel", {**evaluation, "unlearned_labels": []}) == (
        "eval multilabel: micro_f1=0.5000, macro_f1=0.2500")
