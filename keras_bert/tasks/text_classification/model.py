"""`TextClassifier` and `TextRegressor`: sentence (pair) models that take raw strings.

    clf = keras_bert.TextClassifier.from_pretrained("models/minilm", labels=["neg", "pos"])
    clf.fit(texts, labels, epochs=3, validation_data=(dev_texts, dev_labels))
    clf.evaluate(dev_texts, dev_labels)   # {"accuracy": ..., "majority_baseline": ...}
    clf.predict(["a fine film"])["label"]  # array(['pos'])
    clf.save("runs/cls/model"); clf.export("models/cls")   # as keras-bert export

Targets: label names or ids (classifier), numbers (regressor). Sentence pairs: build with
`pair=True` and pass `(text, text_b)` tuples or `(texts, texts_b)`. Files (`keras-bert
finetune --task classify|regress`): CSV, TSV or JSONL rows (`readers.read_examples`),
featurised by the model's `BertPreprocessor` in the `tf.data` pipeline. A text longer than
the sequence length is truncated, or read in windows whose logits are aggregated
(`reading`), in training, `evaluate`, `predict` and the export alike.
"""

from __future__ import annotations

import abc
import dataclasses

import keras
import numpy as np
import tensorflow as tf

from keras_bert.config import DEFAULT_SEQ_LENGTH, LongTextReading
from keras_bert.tasks.batches import examples_dataset, featurise_in_chunks
from keras_bert.tasks.in_process import PREDICT_BATCH, run_in_batches, text_of
from keras_bert.tasks.inputs import class_ids, label_names, scores, text_examples
from keras_bert.tasks.readers import TextExample, read_stdin_examples
from keras_bert.tasks.serving import SentenceServing
from keras_bert.tasks.task_model import TextTaskModel
from keras_bert.tasks.text_classification import metrics, readers
from keras_bert.tasks.text_classification.config import TextClassificationConfig
from keras_bert.tasks.text_classification.network import BertClassifier
from keras_bert.tasks.text_classification.serving import (
    classification_outputs,
    regression_outputs,
    sentence_serving,
    what_was_read,
)
from keras_bert.text.sentence_windows import read_windows
from keras_bert.training.distribution import distributed_builder

FEATURE_CHUNK = 256  # texts featurised at once


class SentenceModel(TextTaskModel):
    """What the classifiers and the regressor share: a `TextClassificationConfig` (or a
    subclass), rows of text (pairs) with one target each (a label set, multi-label).

    It implements every hook of `TaskHooks` but `_default_loss` and `_rows`, and the "may"
    ones; its kinds implement those two and its own hooks: `_num_outputs`, `_label_vocab`,
    `_targets`, `_task_metrics`, `_outputs`, `_answer` (must), `_labels_of_rows` and
    `_window_aggregate` (may).
    """

    config_class = TextClassificationConfig
    _reader_task = readers.CLASSIFICATION  # how `read_examples` parses the label column

    @property
    def pair(self) -> bool:
        """Whether the model reads `(text, text_b)` pairs."""
        return self.config.pair

    @classmethod
    @distributed_builder
    def from_pretrained(cls, source: str, labels=None, *, pair: bool = False,
                        pooling: str = "pooled", dropout: float | None = None,
                        seq_length: int = DEFAULT_SEQ_LENGTH,
                        reading: LongTextReading | str = "truncate", rules: str | None = None,
                        precision: str | None = None, seed: int | None = None,
                        new_head: bool = False):
        """A model on the encoder of `source` with a new head (a keras_bert model directory,
        any checkpoint `keras-bert convert` reads, local or by hub id such as
        `hf://sentence-transformers/all-MiniLM-L6-v2`, or `random-NAME`: random weights of a
        preset size such as `random-tiny`; a fine-tuned model of this kind loads whole).
        `labels`: the classifier's label names or their count; `pair`: reads `(text, text_b)`;
        `pooling`: `pooled`, `cls` or `mean`; `seq_length`: the training length;
        `reading`: texts longer than it are `"truncate"`d or read in `"windows"` (or a
        `LongTextReading` with the stride, window cap and aggregation); `precision`: the
        Keras dtype policy of a new head's model (default `auto`: for the hardware,
        printed; a fine-tuned model loads in its recorded one); `seed`: the new head's
        initial weights (as `keras-bert finetune --seed`); `new_head`: a new head even on
        a fine-tuned model of this kind (its encoder only)."""
        loaded, model_dir = cls._pretrained(source, rules, precision, new_head)
        if loaded is not None:
            return loaded
        vocab = cls._label_vocab(labels)
        encoder, preprocessor = cls._encoder_and_preprocessor(model_dir, seq_length,
                                                              precision, seed)
        reading = LongTextReading.at_length(reading, seq_length)
        config = cls.config_class(pair=pair, pooling=pooling, dropout=dropout, reading=reading)
        return cls(cls._build_network(encoder, config, vocab), preprocessor, vocab, config)

    @classmethod
    def _build_network(cls, encoder, config, labels):
        """A `BertClassifier` (pooling and dropout from `config`)."""
        return BertClassifier(encoder, cls._num_outputs(labels), dropout=config.dropout,
                              pooling=config.pooling)

    @classmethod
    @abc.abstractmethod
    def _num_outputs(cls, labels) -> int:
        """The network's output width."""

    @classmethod
    @abc.abstractmethod
    def _label_vocab(cls, labels):
        """The label vocabulary from the `labels` argument (None for the regressor)."""

    # ----- data and metrics ---------------------------------------------------------------

    @abc.abstractmethod
    def _targets(self, rows) -> np.ndarray:
        """The training targets of `rows`."""

    @abc.abstractmethod
    def _task_metrics(self, gold: np.ndarray, logits: np.ndarray, train) -> dict:
        """The kind's metrics of predicted `logits` against `gold` (`train`: the training
        rows, for baselines)."""

    def _window_aggregate(self) -> str:
        """How this kind aggregates its windows' logits (the reading's choice)."""
        return self.config.reading.aggregate

    @abc.abstractmethod
    def _outputs(self):
        """The postprocessing of the export's outputs (`serving.py`)."""

    def _stream(self, rows, batch_size, seed=None, drop_remainder=False, batching=None):
        """`(features, targets)` batches of `rows` and the examples they hold: one per row,
        or, read in windows, one per window, each carrying its text's target. The rows
        are packed once, up front (not again each epoch), so that each batch can be cut
        to its rows' length (`Batching`)."""
        features, targets = self._examples(rows)
        return examples_dataset(features, targets, batch_size, seed, drop_remainder,
                                batching), len(targets)

    def _examples(self, rows) -> tuple[dict, np.ndarray]:
        """`(features, targets)` of `rows`, packed: `[examples, seq_length]` arrays and one
        target per example (per window where the reading has windows)."""
        targets = np.asarray(self._targets(rows))
        pair = readers.are_pairs(rows)
        reading = self.config.reading

        def featurise(chunk):
            texts = [tf.constant([getattr(r, f) for r in chunk], tf.string)
                     for f in (("text", "text_b") if pair else ("text",))]
            if not reading.windowed:
                return self.preprocessor(tuple(texts) if pair else texts[0])
            packed, batch = read_windows(self.preprocessor, reading, *texts)
            return {**packed, "num_windows": batch.num_windows}

        features = featurise_in_chunks(rows, FEATURE_CHUNK, featurise)
        if reading.windowed:
            targets = targets[np.repeat(np.arange(len(rows)), features.pop("num_windows"))]
        return features, targets

    def _score(self, rows, batch_size, train=None) -> dict:
        """The kind's metrics on the network's logits: one packed row per text, or, read in
        windows, the windows' logits aggregated as `predict` and the export aggregate them."""
        gold = self._targets(rows)
        if not self.config.reading.windowed:
            stream, _ = self._stream(rows, batch_size)
            logits = np.asarray(self.network.predict(stream.map(lambda x, y: x), verbose=0))
        else:
            module = SentenceServing(self.network, self.preprocessor,
                                     lambda outputs, _: {"logits": outputs},
                                     pair=rows[0].text_b is not None,
                                     reading=self.config.reading,
                                     aggregate=self._window_aggregate())
            logits = run_in_batches(module.text_function(), _requests_of(rows),
                                    batch_size)["logits"]
        return self._task_metrics(gold, logits, train)

    def _requests(self, x) -> dict[str, list[str]]:
        """`text` (and `text_b`) of the texts `x`."""
        return _requests_of(text_examples(x, self.pair, "x"))

    def _build_serving(self, preprocessor, options=None):
        """The export's functions: the kind's outputs, windows aggregated as it says (no
        export options)."""
        return sentence_serving(self.network, preprocessor, self.config, self._outputs(),
                                self._window_aggregate())

    # ----- the job layer ------------------------------------------------------------------

    @classmethod
    def _from_settings(cls, settings, train: list, train_file: str):
        """`keras-bert finetune`'s sentence model: the labels of `train` (the labelled
        kinds), the settings' columns (a pair model with a second text column), pooling,
        dropout and long-text reading."""
        labels = cls._labels_of_rows(train, train_file)
        columns = settings.columns
        model = cls.from_pretrained(
            settings.source, None if labels is None else labels.names,
            pair=columns.text_b is not None, pooling=settings.pooling,
            dropout=settings.dropout, seq_length=settings.seq_length,
            reading=settings.reading, rules=settings.rules, precision=settings.precision,
            seed=settings.seed, new_head=True)
        model.config = dataclasses.replace(model.config, text_column=columns.text,
                                           text_b_column=columns.text_b)
        return model

    @classmethod
    def _labels_of_rows(cls, rows, source):
        """The label vocabulary of training rows (None for the regressor)."""
        return None

    @classmethod
    def _read_rows(cls, path, columns, labels=None) -> list:
        """`TextExample`s of the file `path` in the text, text-b and label `columns`."""
        return readers.read_examples(path, text_column=columns.text,
                                     text_b_column=columns.text_b, label_column=columns.label,
                                     task=cls._reader_task, labels=labels)

    def _answers(self, source, batch_size=PREDICT_BATCH, text_column=None,
                 text_b_column=None) -> list[dict]:
        """One answer per row of a CSV/TSV/JSONL file (its trained text columns) or stdin
        line (`text<TAB>text_b` for pair models), with what was read of it."""
        if source == "-":
            rows = read_stdin_examples(self.pair)
        else:
            text_b = text_b_column or (self.config.text_b_column if self.pair else None)
            rows = readers.read_examples(source, text_column=text_column
                                         or self.config.text_column, text_b_column=text_b,
                                         label_column=None)
        out = run_in_batches(self._served().text_function(), _requests_of(rows), batch_size)
        return [{**self._answer(out, i), **what_was_read(out, i)} for i in range(len(rows))]

    @abc.abstractmethod
    def _answer(self, outputs: dict, row: int) -> dict:
        """The JSON answer of row `row` of the export's outputs."""


@keras.saving.register_keras_serializable(package="keras_bert")
class TextClassifier(SentenceModel):
    """Sentence (pair) classification from raw strings; targets are label names or ids.

    `predict` gives `label` (names), `label_id`, `probabilities` and `logits`;
    `evaluate` gives `accuracy` and `majority_baseline`. Hooks: `SentenceModel`'s "must"
    ones, and `_labels_of_rows` (its training file's label set).
    """

    kind = "classify"
    labelled = True

    @classmethod
    def _label_vocab(cls, labels):
        """Label names (a list) or a number of classes (names "0", "1", ...)."""
        if labels is None:
            raise ValueError("a TextClassifier needs labels=: the label names, or their count")
        return label_names(labels)

    @classmethod
    def _labels_of_rows(cls, rows, source):
        """The sorted label set of the training rows: at least two classes."""
        labels = readers.label_vocab_of(rows)
        if len(labels) < 2:
            raise ValueError(f"{source}: every row has the label {labels.names[0]!r}; a "
                             "classifier needs examples of at least two classes, this file "
                             "has one class")
        return labels

    @classmethod
    def _num_outputs(cls, labels) -> int:
        """One logit per class."""
        return len(labels)

    def _default_loss(self):
        """Cross-entropy on logits; accuracy."""
        return (keras.losses.SparseCategoricalCrossentropy(from_logits=True),
                [keras.metrics.SparseCategoricalAccuracy(name="accuracy")])

    def _rows(self, x, y) -> list[TextExample]:
        """The rows of `x`, labelled with the names of `y`."""
        examples = text_examples(x, self.pair)
        ids = class_ids(y, self.labels, len(examples))
        return [dataclasses.replace(ex, label=self.labels.name(int(i)))
                for ex, i in zip(examples, ids, strict=True)]

    def _targets(self, rows) -> np.ndarray:
        """int32 class ids."""
        return readers.encode_labels(rows, self.labels)

    def _task_metrics(self, gold, logits, train=None) -> dict:
        """`accuracy`, and `majority_baseline`: the accuracy of always answering the most
        frequent gold label (what a model that learned nothing about the text scores)."""
        majority = float(np.bincount(gold).max() / len(gold)) if len(gold) else float("nan")
        return {"accuracy": metrics.accuracy(gold, np.argmax(logits, axis=-1)),
                "majority_baseline": majority}

    def _outputs(self):
        """`logits`, `probabilities`, `label_id`, `label`."""
        return classification_outputs(list(self.labels.names))

    def _answer(self, outputs, row) -> dict:
        """`{"label", "probabilities"}`."""
        return {"label": text_of(outputs["label"][row]),
                "probabilities": [float(p) for p in outputs["probabilities"][row]]}


@keras.saving.register_keras_serializable(package="keras_bert")
class TextRegressor(SentenceModel):
    """Sentence (pair) regression from raw strings (one score per text).

    `predict` gives `score`; `evaluate` gives `pearson`, `spearman` and `mse`. Hooks:
    `SentenceModel`'s "must" ones, and `_window_aggregate` (always the mean).
    """

    kind = "regress"
    _reader_task = readers.REGRESSION

    @classmethod
    def _label_vocab(cls, labels):
        """A regressor has no labels."""
        if labels is not None:
            raise ValueError("a TextRegressor has no labels")
        return None

    @classmethod
    def _num_outputs(cls, labels) -> int:
        """One score."""
        return 1

    def _default_loss(self):
        """Mean squared error."""
        return keras.losses.MeanSquaredError(), None

    def _rows(self, x, y) -> list[TextExample]:
        """The rows of `x` with the numbers of `y`."""
        examples = text_examples(x, self.pair)
        values = scores(y, len(examples))
        return [dataclasses.replace(ex, label=float(v))
                for ex, v in zip(examples, values, strict=True)]

    def _targets(self, rows) -> np.ndarray:
        """float32 targets."""
        return readers.regression_targets(rows)

    def _task_metrics(self, gold, logits, train=None) -> dict:
        """`pearson`, `spearman`, `mse`."""
        gold = gold.astype(np.float64)
        predicted = np.asarray(logits, np.float64).reshape(-1)
        return {"pearson": metrics.pearson(gold, predicted),
                "spearman": metrics.spearman(gold, predicted),
                "mse": float(np.mean((gold - predicted) ** 2))}

    def _window_aggregate(self) -> str:
        """A score is the mean of its windows' scores."""
        return "mean"

    def _outputs(self):
        """`score` (windows: their mean)."""
        return regression_outputs()

    def _answer(self, outputs, row) -> dict:
        """`{"score"}`."""
        return {"score": float(outputs["score"][row])}


def _requests_of(rows) -> dict[str, list[str]]:
    """The `serving_default` inputs of `TextExample`s."""
    requests = {"text": [ex.text for ex in rows]}
    if rows and rows[0].text_b is not None:
        requests["text_b"] = [ex.text_b for ex in rows]
    return requests

