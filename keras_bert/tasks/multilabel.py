"""`MultiLabelTask`: texts (or pairs) with any number of labels, toxic-comment style.

Data: CSV/TSV rows whose label column holds `|`-separated labels (empty: none), or JSONL
rows with a list of labels (`keras_bert.tasks.readers`, kind `multilabel`). The label
vocabulary is the sorted set of labels seen in training. Model: `BertClassifier` with one
logit per label; loss: binary cross-entropy on each label's sigmoid.

Decisions: each label has its own threshold. With an evaluation file they are tuned there
after training (`choose_thresholds`: the cut that maximises each label's F1, unless that F1
does not beat the text-blind answers by more than chance would: then the label is named in
`unlearned_labels` and its threshold is 0, every text) and saved in the model directory's
task block (`thresholds`, in label order); without one they stay 0.5. Metrics
(`metrics.json`): micro / macro / per-label F1 and subset accuracy at the chosen thresholds
and at 0.5, the unlearned labels, and the text-blind baselines (no label; the most frequent
label set of the training data). Tuned thresholds are fitted on the evaluation set, so its scores at
them are optimistic: measure on a third, held-out file (as `examples/multilabel.py` does).

Export: `scores` (`[batch, labels]` sigmoid probabilities), `labels` (`[batch, labels]`
the chosen labels' names, highest score first, padded with ""), `logits`.
`keras-bert predict` writes `{"labels": [...], "scores": {label: probability}}` per row.
"""

from __future__ import annotations

import keras
import numpy as np

from keras_bert.tasks import readers
from keras_bert.tasks.classification import SentenceTask
from keras_bert.tasks.labels import LabelVocab
from keras_bert.tasks.multilabel_metrics import (
    DEFAULT_THRESHOLD,
    choose_thresholds,
    multilabel_baselines,
    multilabel_f1,
)
from keras_bert.tasks.serving_outputs import multilabel_outputs
from keras_bert.tasks.task import PREDICT_BATCH, run_in_batches, text_of, what_was_read


def sigmoid(logits) -> np.ndarray:
    """Element-wise logistic function, computed stably in float64."""
    logits = np.asarray(logits, np.float64)
    return np.exp(-np.logaddexp(0.0, -logits))


class MultiLabelTask(SentenceTask):
    """Multi-label classification of a text (pair); metrics: micro / macro / per-label F1."""

    name = "multilabel"
    labelled = True
    reader_kind = readers.MULTILABEL

    def label_vocab(self, train, source) -> LabelVocab:
        """Every label seen in training, sorted; at least one."""
        names = {label for ex in train for label in ex.label}
        if not names:
            raise ValueError(f"{source}: no row has a label; a multi-label classifier needs "
                             "rows with labels ('|'-separated in CSV/TSV, a list in JSONL)")
        return LabelVocab.from_labels(names)

    def untuned_settings(self, labels) -> dict:
        """Thresholds of 0.5 until an evaluation tunes them."""
        return {"thresholds": [DEFAULT_THRESHOLD] * len(labels)}

    def num_outputs(self, labels) -> int:
        """One logit per label."""
        if labels is None:
            raise ValueError("a multilabel model needs its labels")
        return len(labels)

    def targets(self, examples, labels) -> np.ndarray:
        """float32 multi-hot `[rows, labels]`."""
        return readers.multi_hot(examples, labels)

    def scores(self, gold, logits, train=None, labels=None) -> dict:
        """F1 at thresholds chosen on this set (`thresholds` by label, micro / macro /
        per-label F1, subset accuracy; `unlearned_labels`: those left at a text-blind
        threshold), the same at 0.5 (`at_0.5`), and the text-blind `baselines` (the most
        frequent label set of `train`, the training examples; without them, of `gold`)."""
        names = labels.names
        probabilities = sigmoid(logits)
        thresholds, unlearned = choose_thresholds(gold, probabilities)
        result = multilabel_f1(gold, probabilities >= thresholds, names)
        result["thresholds"] = {name: float(t) for name, t in zip(names, thresholds,
                                                                   strict=True)}
        result["unlearned_labels"] = [name for name, u in zip(names, unlearned, strict=True)
                                      if u]
        at_default = multilabel_f1(gold, probabilities >= DEFAULT_THRESHOLD, names)
        result["at_0.5"] = {k: at_default[k] for k in ("micro_f1", "macro_f1",
                                                       "subset_accuracy")}
        label_sets = ([ex.label for ex in train] if train is not None else
                      [[names[j] for j in np.flatnonzero(row)] for row in np.asarray(gold)])
        result["baselines"] = multilabel_baselines(gold, label_sets, names)
        return result

    def tuned_spec(self, spec: dict, evaluation: dict | None) -> dict:
        """`spec` with the thresholds tuned on the evaluation set (in label order)."""
        if not evaluation or "thresholds" not in evaluation:
            return spec
        thresholds = [float(t) for t in evaluation["thresholds"].values()]
        if len(thresholds) != spec["num_classes"]:
            raise ValueError(f"{len(thresholds)} tuned thresholds for "
                             f"{spec['num_classes']} labels")
        return {**spec, "thresholds": thresholds}

    def compile(self, model, optimizer) -> None:
        """Binary cross-entropy on each label's logit; binary accuracy."""
        model.compile(optimizer=optimizer,
                      loss=keras.losses.BinaryCrossentropy(from_logits=True),
                      metrics=[keras.metrics.BinaryAccuracy(name="binary_accuracy",
                                                            threshold=0.0)],
                      jit_compile=False)

    def serving_module(self, model, preprocessor, labels, spec: dict, **options):
        """`logits`, `scores`, `labels`."""
        thresholds = spec.get("thresholds") or [DEFAULT_THRESHOLD] * len(labels)
        return self.sentence_module(model, preprocessor, spec,
                                    multilabel_outputs(list(labels.names), list(thresholds)),
                                    label_names=labels.names)

    def predict(self, module, inputs, batch_size: int = PREDICT_BATCH) -> list[dict]:
        """`{"labels": [chosen labels, highest score first], "scores": {label: p}}` per row."""
        out = run_in_batches(module.text_function(), self.requests(inputs), batch_size)
        names = module.label_names
        return [{"labels": [text_of(label) for label in row_labels if text_of(label)],
                 "scores": {name: float(p) for name, p in zip(names, row_scores, strict=True)},
                 **what_was_read(out, i)}
                for i, (row_labels, row_scores) in enumerate(
                    zip(out["labels"], out["scores"], strict=True))]
