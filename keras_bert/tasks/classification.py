"""Sentence (pair) tasks: `ClassifyTask` (class labels) and `RegressTask` (one score).

Data: CSV/TSV/JSONL rows (`keras_bert.tasks.readers`), featurised by the model's
`BertPreprocessor` in the `tf.data` pipeline. Model: `BertClassifier` (`num_classes=1` for
regression). Metrics: accuracy; Pearson, Spearman and MSE. Export: `ServingModule` with
`classification_outputs` / `regression_outputs`.
"""

from __future__ import annotations

import keras
import numpy as np
import tensorflow as tf

from keras_bert.models.classifier import BertClassifier
from keras_bert.tasks import metrics, readers
from keras_bert.tasks.labels import LabelVocab
from keras_bert.tasks.sentence_config import SentenceTaskConfig
from keras_bert.tasks.serving_module import ServingModule
from keras_bert.tasks.serving_outputs import classification_outputs, regression_outputs
from keras_bert.tasks.task import (
    PREDICT_BATCH,
    Task,
    examples_dataset,
    featurise_in_chunks,
    run_in_batches,
    text_of,
    what_was_read,
)
from keras_bert.text.sentence_windows import LongTextReading, read_windows

WINDOW_CHUNK = 256  # texts featurised at once when read in windows


class SentenceTask(Task):
    """What classification and regression share: rows of text (pairs), one target each."""

    def num_outputs(self, labels) -> int:
        """The classifier's output width."""
        raise NotImplementedError

    def targets(self, examples, labels) -> np.ndarray:
        """The training targets of `examples`."""
        raise NotImplementedError

    def scores(self, gold: np.ndarray, logits: np.ndarray, train, labels) -> dict:
        """The task metrics of predicted `logits` against `gold` targets (`train`: the
        training examples, for baselines; `labels`: the `LabelVocab` or None)."""
        raise NotImplementedError

    def label_vocab(self, train, source) -> LabelVocab | None:
        """The label vocabulary of the training examples (labelled kinds): at least two
        classes."""
        if not self.labelled:
            return None
        labels = LabelVocab.from_labels(ex.label for ex in train)
        if len(labels) < 2:
            raise ValueError(f"{source}: every row has the label {labels.names[0]!r}; a "
                             "classifier needs examples of at least two classes, this file "
                             "has one class")
        return labels

    def untuned_settings(self, labels) -> dict:
        """Settings of the task block that the evaluation may tune (`tuned_spec`)."""
        return {}

    def build_model(self, encoder, spec: dict, labels=None):
        """A `BertClassifier` (pooling and dropout from `spec`)."""
        config = SentenceTaskConfig.from_block(spec)
        return BertClassifier(encoder, self.num_outputs(labels), dropout=config.dropout,
                              pooling=config.pooling)

    def read_rows(self, path: str, job, labels=None) -> list:
        """`TextExample`s of the file `path` in `job`'s text, text-b and label columns."""
        return readers.read_examples(path, text_column=job.text_column,
                                     text_b_column=job.text_b_column,
                                     label_column=job.label_column, task=self.reader_kind,
                                     labels=labels)

    def rows_dataset(self, rows, preprocessor, labels, reading: LongTextReading,
                     batch_size: int, shuffle_seed: int | None = None,
                     drop_remainder: bool = False) -> tuple[tf.data.Dataset, int]:
        """`(features, targets)` batches of `rows` (with `shuffle_seed`: endless epochs,
        each shuffled by `(seed, epoch)`) and the examples they hold: one per row, or, read
        in windows, one per window, each carrying its text's target."""
        targets = self.targets(rows, labels)
        if not reading.windowed:
            return readers.text_dataset(rows, preprocessor, targets, batch_size=batch_size,
                                        shuffle_seed=shuffle_seed,
                                        drop_remainder=drop_remainder), len(rows)
        pair = rows[0].text_b is not None

        def featurise(chunk):
            texts = [tf.constant([getattr(r, f) for r in chunk], tf.string)
                     for f in (("text", "text_b") if pair else ("text",))]
            packed, batch = read_windows(preprocessor, reading, *texts)
            return {**packed, "num_windows": batch.num_windows}

        features = featurise_in_chunks(rows, WINDOW_CHUNK, featurise)
        text_index = np.repeat(np.arange(len(rows)), features.pop("num_windows"))
        return examples_dataset(features, np.asarray(targets)[text_index], batch_size,
                                shuffle_seed, drop_remainder), len(text_index)

    def score_rows(self, model, preprocessor, reading: LongTextReading, rows, labels, train,
                   batch_size: int) -> dict:
        """The task metrics of `model` (the network) on `rows` against their targets
        (`train`: the training rows, for baselines): on the logits of one packed row per
        text, or, read in windows, on the windows' logits aggregated as `predict` and the
        export aggregate them."""
        gold = self.targets(rows, labels)
        if not reading.windowed:
            stream, _ = self.rows_dataset(rows, preprocessor, labels, reading, batch_size)
            logits = np.asarray(model.predict(stream.map(lambda x, y: x), verbose=0))
        else:
            module = ServingModule(model, preprocessor, lambda outputs, _: {"logits": outputs},
                                   pair=rows[0].text_b is not None, reading=reading,
                                   aggregate=self.window_aggregate(reading))
            logits = run_in_batches(module.traced("serving_default"), self.requests(rows),
                                    batch_size)["logits"]
        return self.scores(gold, logits, train, labels)

    def window_aggregate(self, reading: LongTextReading) -> str:
        """How this kind aggregates its windows' logits (the reading's choice)."""
        return reading.aggregate

    def sentence_module(self, model, preprocessor, spec: dict, outputs_fn, **options):
        """The `ServingModule` of a sentence-level kind: single texts or pairs, read as the
        task block's `long_text` says, windows aggregated by `window_aggregate`."""
        reading = SentenceTaskConfig.from_block(spec).reading
        return ServingModule(model, preprocessor, outputs_fn, pair=bool(spec.get("pair", False)),
                             reading=reading, aggregate=self.window_aggregate(reading),
                             **options)

    def read_inputs(self, source: str, spec: dict, text_column: str | None = None,
                    text_b_column: str | None = None) -> list:
        """`TextExample`s: the trained text column(s) of a CSV/TSV/JSONL file, or stdin
        lines (`text<TAB>text_b` for pair models)."""
        pair = bool(spec.get("pair"))
        if source == "-":
            return readers.read_stdin_examples(pair)
        text_b = text_b_column or (spec.get("text_b_column") if pair else None)
        return readers.read_examples(source, text_column=text_column or spec.get(
            "text_column") or "text", text_b_column=text_b, label_column=None)

    def requests(self, examples) -> dict[str, list[str]]:
        """The `serving_default` inputs of `examples`."""
        requests = {"text": [ex.text for ex in examples]}
        if examples and examples[0].text_b is not None:
            requests["text_b"] = [ex.text_b for ex in examples]
        return requests


class ClassifyTask(SentenceTask):
    """Sentence (pair) classification; metric: accuracy."""

    name = "classify"
    labelled = True
    reader_kind = readers.CLASSIFICATION

    def num_outputs(self, labels) -> int:
        """One logit per class."""
        if labels is None:
            raise ValueError("a classify model needs its labels")
        return len(labels)

    def targets(self, examples, labels) -> np.ndarray:
        """int32 class ids."""
        return readers.encode_labels(examples, labels)

    def scores(self, gold, logits, train=None, labels=None) -> dict:
        """`accuracy`, and `majority_baseline`: the accuracy of always answering the most
        frequent gold label (what a model that learned nothing about the text scores)."""
        majority = float(np.bincount(gold).max() / len(gold)) if len(gold) else float("nan")
        return {"accuracy": metrics.accuracy(gold, np.argmax(logits, axis=-1)),
                "majority_baseline": majority}

    def compile(self, model, optimizer) -> None:
        """Cross-entropy on logits; accuracy."""
        model.compile(optimizer=optimizer,
                      loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True),
                      metrics=[keras.metrics.SparseCategoricalAccuracy(name="accuracy")],
                      jit_compile=False)

    def serving_module(self, model, preprocessor, labels, spec: dict, **options):
        """`logits`, `probabilities`, `label_id`, `label`."""
        return self.sentence_module(model, preprocessor, spec,
                                    classification_outputs(list(labels.names)))

    def predict(self, module, inputs, batch_size: int = PREDICT_BATCH) -> list[dict]:
        """`{"label", "probabilities"}` per row."""
        out = run_in_batches(module.text_function(), self.requests(inputs), batch_size)
        return [{"label": text_of(label), "probabilities": [float(p) for p in probs],
                 **what_was_read(out, i)}
                for i, (label, probs) in enumerate(zip(out["label"], out["probabilities"],
                                                       strict=True))]


class RegressTask(SentenceTask):
    """Sentence (pair) regression; metrics: Pearson, Spearman, MSE."""

    name = "regress"
    reader_kind = readers.REGRESSION

    def num_outputs(self, labels) -> int:
        """One score."""
        return 1

    def targets(self, examples, labels) -> np.ndarray:
        """float32 targets."""
        return readers.regression_targets(examples)

    def scores(self, gold, logits, train=None, labels=None) -> dict:
        """`pearson`, `spearman`, `mse`."""
        gold = gold.astype(np.float64)
        predicted = np.asarray(logits, np.float64).reshape(-1)
        return {"pearson": metrics.pearson(gold, predicted),
                "spearman": metrics.spearman(gold, predicted),
                "mse": float(np.mean((gold - predicted) ** 2))}

    def compile(self, model, optimizer) -> None:
        """Mean squared error."""
        model.compile(optimizer=optimizer, loss=keras.losses.MeanSquaredError(),
                      jit_compile=False)

    def serving_module(self, model, preprocessor, labels, spec: dict, **options):
        """`score` (windows: their mean)."""
        return self.sentence_module(model, preprocessor, spec, regression_outputs())

    def window_aggregate(self, reading: LongTextReading) -> str:
        """A score is the mean of its windows' scores."""
        return "mean"

    def predict(self, module, inputs, batch_size: int = PREDICT_BATCH) -> list[dict]:
        """`{"score"}` per row."""
        out = run_in_batches(module.text_function(), self.requests(inputs), batch_size)
        return [{"score": float(s), **what_was_read(out, i)} for i, s in enumerate(out["score"])]
