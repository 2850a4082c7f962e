"""`MultiLabelClassifier`: any number of labels per text (pair), from raw strings.

    clf = keras_bert.MultiLabelClassifier.from_pretrained("models/minilm",
                                                          labels=["sea", "ship", "whale"])
    clf.fit(texts, [["sea"], [], ["ship", "whale"], ...],
            validation_data=(dev_texts, dev_label_lists))   # tunes each label's threshold
    clf.evaluate(test_texts, test_label_lists)  # micro / macro / per-label F1, baselines
    clf.predict(["a whale breached"])["labels"]   # [["whale", ""]]: chosen labels, padded

Targets: per text a list of label names or ids (`[]`: no label), or a 0/1 matrix
`[texts, labels]` (a NumPy array or DataFrame). It runs `keras-bert finetune --task
multilabel`'s task kind (`keras_bert.tasks.multilabel`): the same features, loss, metrics,
threshold choice and export.
"""

from __future__ import annotations

import dataclasses

import keras
import numpy as np

from keras_bert.task_models.text_classifier import SentenceModel
from keras_bert.task_models.text_inputs import label_names, label_sets, text_examples
from keras_bert.task_models.text_task_model import DEFAULT_BATCH_SIZE
from keras_bert.tasks.multilabel_metrics import DEFAULT_THRESHOLD
from keras_bert.tasks.readers import TextExample
from keras_bert.tasks.sentence_config import MultiLabelTaskConfig
from keras_bert.tasks.task import PREDICT_BATCH


@keras.saving.register_keras_serializable(package="keras_bert")
class MultiLabelClassifier(SentenceModel):
    """Multi-label classification of texts (pairs): one sigmoid per label, each label with
    its own decision threshold (0.5 until tuned; saved with the model and its export).

    `predict` gives `labels` (`[texts, labels]`: the chosen labels' names, highest score
    first, padded with ""), `scores` (per-label probabilities) and `logits`; `evaluate`
    gives what `metrics.json` reports (F1 at thresholds chosen on the evaluated set,
    `unlearned_labels`, the same at 0.5, text-blind `baselines`).
    """

    kind = "multilabel"
    config_class = MultiLabelTaskConfig

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self._train_rows = None  # the last fit's rows: its most frequent label set

    @classmethod
    def label_vocab(cls, labels):
        """Label names (a list) or a number of labels (names "0", "1", ...); at least one."""
        if labels is None:
            raise ValueError("a MultiLabelClassifier needs labels=: the label names, or their "
                             "count")
        return label_names(labels, minimum=1)

    @property
    def thresholds(self) -> np.ndarray:
        """Each label's decision threshold, in label order (a label is chosen when its score
        reaches it; 0: every text, as for a label found unlearned)."""
        values = self.config.thresholds or (DEFAULT_THRESHOLD,) * len(self.labels)
        return np.asarray(values, np.float32)

    def rows(self, x, y) -> list[TextExample]:
        """The rows of `x`, labelled with the label-name tuples of `y`."""
        examples = text_examples(x, self.pair)
        sets = label_sets(y, self.labels, len(examples))
        return [dataclasses.replace(ex, label=labels)
                for ex, labels in zip(examples, sets, strict=True)]

    def score(self, rows, batch_size, train=None) -> dict:
        """The metrics of `metrics.json`; the baselines' most frequent label set is the last
        fit's (as the command line's is its training file's), else that of `rows`."""
        return super().score(rows, batch_size, self._train_rows if train is None else train)

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
        weights) and the rows are kept for the baselines of `score`."""
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
        `keras_bert.tasks.multilabel_metrics.choose_thresholds`) and keeps them for
        `predict`, `save` and `export`. Returns the metrics there (as `evaluate`)."""
        rows = self.rows(x, y)
        if not any(ex.label for ex in rows):
            raise ValueError("no text in the tuning data has a label; thresholds are tuned "
                             "on texts with labels")
        evaluation = self.score(rows, int(batch_size or PREDICT_BATCH))
        self.tune_on(evaluation)
        return evaluation
