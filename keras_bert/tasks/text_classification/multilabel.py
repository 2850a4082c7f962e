"""`MultiLabelClassifier`: any number of labels per text (pair), from raw strings.

    clf = keras_bert.MultiLabelClassifier.from_pretrained("models/minilm",
                                                          labels=["sea", "ship", "whale"])
    clf.fit(texts, [["sea"], [], ["ship", "whale"], ...],
            validation_data=(dev_texts, dev_label_lists))   # tunes each label's threshold
    clf.evaluate(test_texts, test_label_lists)  # micro / macro / per-label F1, baselines
    clf.predict(["a whale breached"])["labels"]   # [["whale", ""]]: chosen labels, padded

Targets: per text a list of label names or ids (`[]`: no label), or a 0/1 matrix
`[texts, labels]` (a NumPy array or DataFrame). Files (`keras-bert finetune --task
multilabel`): CSV/TSV rows whose label column holds `|`-separated labels (empty: none), or
JSONL rows with a list of labels; the label vocabulary is the sorted set of labels seen in
training. Network: `BertClassifier` with one logit per label; loss: binary cross-entropy on
each label's sigmoid.

Decisions: each label has its own threshold. With evaluation data they are tuned there
after training (`multilabel_metrics.choose_thresholds`: the cut that maximises each label's
F1, unless that F1 does not beat the text-blind answers by more than chance would: then the
label is named in `unlearned_labels` and its threshold is 0, every text) and saved with the
model and its export; without, they stay 0.5. Metrics: micro / macro / per-label F1 and
subset accuracy at the chosen thresholds and at 0.5, the unlearned labels, and the
text-blind baselines (no label; the most frequent label set of the training data). Tuned
thresholds are fitted on the evaluation set, so its scores at them are optimistic: measure
on a third, held-out set (as `examples/multilabel.py` does).
"""

from __future__ import annotations

import dataclasses

import keras
import numpy as np

from keras_bert.tasks.in_process import PREDICT_BATCH, text_of
from keras_bert.tasks.inputs import label_names, label_sets, text_examples
from keras_bert.tasks.labels import LabelVocab
from keras_bert.tasks.readers import TextExample
from keras_bert.tasks.task_model import DEFAULT_BATCH_SIZE
from keras_bert.tasks.text_classification import readers
from keras_bert.tasks.text_classification.config import MultiLabelConfig
from keras_bert.tasks.text_classification.model import SentenceModel
from keras_bert.tasks.text_classification.multilabel_metrics import (
    DEFAULT_THRESHOLD,
    choose_thresholds,
    multilabel_baselines,
    multilabel_f1,
)
from keras_bert.tasks.text_classification.serving import multilabel_outputs


@keras.saving.register_keras_serializable(package="keras_bert")
class MultiLabelClassifier(SentenceModel):
    """Multi-label classification of texts (pairs): one sigmoid per label, each label with
    its own decision threshold (0.5 until tuned; saved with the model and its export).

    `predict` gives `labels` (`[texts, labels]`: the chosen labels' names, highest score
    first, padded with ""), `scores` (per-label probabilities) and `logits`; `evaluate`
    gives what `metrics.json` reports (F1 at thresholds chosen on the evaluated set,
    `unlearned_labels`, the same at 0.5, text-blind `baselines`). Hooks: `SentenceModel`'s
    "must" ones, `_labels_of_rows`, `_score` (its baselines) and `_tune_on` (the
    thresholds); it extends `fit` and `fit_rows`.
    """

    kind = "multilabel"
    labelled = True
    config_class = MultiLabelConfig
    _reader_task = readers.MULTILABEL

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self._train_rows = None  # the last fit's rows: its most frequent label set

    @classmethod
    def _label_vocab(cls, labels):
        """Label names (a list) or a number of labels (names "0", "1", ...); at least one."""
        if labels is None:
            raise ValueError("a MultiLabelClassifier needs labels=: the label names, or their "
                             "count")
        return label_names(labels, minimum=1)

    @classmethod
    def _labels_of_rows(cls, rows, source):
        """Every label seen in training, sorted; at least one."""
        names = {label for ex in rows for label in ex.label}
        if not names:
            raise ValueError(f"{source}: no row has a label; a multi-label classifier needs "
                             "rows with labels ('|'-separated in CSV/TSV, a list in JSONL)")
        return LabelVocab.from_labels(names)

    @classmethod
    def _num_outputs(cls, labels) -> int:
        """One logit per label."""
        return len(labels)

    @property
    def thresholds(self) -> np.ndarray:
        """Each label's decision threshold, in label order (a label is chosen when its score
        reaches it; 0: every text, as for a label found unlearned)."""
        values = self.config.thresholds or (DEFAULT_THRESHOLD,) * len(self.labels)
        return np.asarray(values, np.float32)

    def _default_loss(self):
        """Binary cross-entropy on each label's logit; binary accuracy."""
        return (keras.losses.BinaryCrossentropy(from_logits=True),
                [keras.metrics.BinaryAccuracy(name="binary_accuracy", threshold=0.0)])

    def _rows(self, x, y) -> list[TextExample]:
        """The rows of `x`, labelled with the label-name tuples of `y`."""
        examples = text_examples(x, self.pair)
        sets = label_sets(y, self.labels, len(examples))
        return [dataclasses.replace(ex, label=labels)
                for ex, labels in zip(examples, sets, strict=True)]

    def _targets(self, rows) -> np.ndarray:
        """float32 multi-hot `[rows, labels]`."""
        return readers.multi_hot(rows, self.labels)

    def _task_metrics(self, gold, logits, train=None) -> dict:
        """F1 at thresholds chosen on this set (`thresholds` by label, micro / macro /
        per-label F1, subset accuracy; `unlearned_labels`: those left at a text-blind
        threshold), the same at 0.5 (`at_0.5`), and the text-blind `baselines` (the most
        frequent label set of `train`, else of `gold`)."""
        names = self.labels.names
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
        label_sets_ = ([ex.label for ex in train] if train is not None else
                       [[names[j] for j in np.flatnonzero(row)] for row in np.asarray(gold)])
        result["baselines"] = multilabel_baselines(gold, label_sets_, names)
        return result

    def _outputs(self):
        """`logits`, `scores`, `labels` (the chosen ones at each label's threshold)."""
        return multilabel_outputs(list(self.labels.names), [float(t) for t in self.thresholds])

    def _answer(self, outputs, row) -> dict:
        """`{"labels": [chosen labels, highest score first], "scores": {label: p}}`."""
        return {"labels": [text_of(label) for label in outputs["labels"][row]
                           if text_of(label)],
                "scores": {name: float(p) for name, p in zip(self.labels.names,
                                                             outputs["scores"][row],
                                                             strict=True)}}

    def _score(self, rows, batch_size, train=None) -> dict:
        """The metrics of `metrics.json`; the baselines' most frequent label set is the last
        fit's (as the command line's is its training file's), else that of `rows`."""
        return super()._score(rows, batch_size, self._train_rows if train is None else train)

    def fit(self, x=None, y=None, batch_size: int | None = None, epochs: int = 1,
            validation_data=None, **kwargs):
        """Trains on texts `x` and label lists (or a 0/1 matrix) `y`, as
        `TextTaskModel.fit`; then, with `validation_data` `(texts, label lists)`, tunes the
        thresholds there (`tune_thresholds`), as `keras-bert finetune` tunes them on
        `--eval`. Without it the thresholds are 0.5 (those tuned for the old weights go)."""
        history = super().fit(x, y, batch_size=batch_size, epochs=epochs,
                              validation_data=validation_data, **kwargs)
        if validation_data is not None:
            texts, targets = validation_data
            self.tune_thresholds(texts, targets, batch_size or DEFAULT_BATCH_SIZE)
        return history

    def fit_rows(self, rows, **kwargs) -> tuple[dict, int]:
        """`TextTaskModel.fit_rows`; the thresholds go back to 0.5 (untuned for the new
        weights) and the rows are kept for the baselines of `evaluate`."""
        if not any(ex.label for ex in rows):
            raise ValueError("no text in y has a label; a multi-label classifier learns from "
                             "texts with labels")
        result = super().fit_rows(rows, **kwargs)
        self.config = dataclasses.replace(self.config, thresholds=None)
        self._serving = None
        self._train_rows = tuple(rows)
        return result

    def tune_thresholds(self, x, y, batch_size: int | None = None) -> dict:
        """Chooses each label's threshold on texts `x` with label lists `y` (the cut that
        maximises its F1, or every text for a label found unlearned: see
        `multilabel_metrics.choose_thresholds`) and keeps them for `predict`, `save` and
        `export`. Returns the metrics there (as `evaluate`)."""
        rows = self._rows(x, y)
        if not any(ex.label for ex in rows):
            raise ValueError("no text in the tuning data has a label; thresholds are tuned "
                             "on texts with labels")
        evaluation = self._score(rows, int(batch_size or PREDICT_BATCH))
        self._tune_on(evaluation)
        return evaluation

    def _tune_on(self, evaluation: dict | None) -> None:
        """Keeps the thresholds tuned on an evaluation (in label order)."""
        if not evaluation or "thresholds" not in evaluation:
            return
        thresholds = tuple(float(t) for t in evaluation["thresholds"].values())
        if len(thresholds) != len(self.labels):
            raise ValueError(f"{len(thresholds)} tuned thresholds for {len(self.labels)} "
                             "labels")
        self.config = dataclasses.replace(self.config, thresholds=thresholds)
        self._serving = None


def sigmoid(logits) -> np.ndarray:
    """Element-wise logistic function, computed stably in float64."""
    logits = np.asarray(logits, np.float64)
    return np.exp(-np.logaddexp(0.0, -logits))
