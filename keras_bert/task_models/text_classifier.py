"""`TextClassifier` and `TextRegressor`: sentence (pair) models that take raw strings.

    clf = keras_bert.TextClassifier.from_pretrained("models/minilm", labels=["neg", "pos"])
    clf.fit(texts, labels, epochs=3, validation_data=(dev_texts, dev_labels))
    clf.evaluate(dev_texts, dev_labels)   # {"accuracy": ..., "majority_baseline": ...}
    clf.predict(["a fine film"])["label"]  # array(['pos'])
    clf.save("runs/cls/model"); clf.export("models/cls")   # as keras-bert export

Targets: label names or ids (classifier), numbers (regressor). Sentence pairs: build with
`pair=True` and pass `(text, text_b)` tuples or `(texts, texts_b)`.
"""

from __future__ import annotations

import dataclasses

import keras

from keras_bert.config import DEFAULT_SEQ_LENGTH
from keras_bert.task_models.text_inputs import class_ids, label_names, scores, text_examples
from keras_bert.task_models.text_task_model import TextTaskModel
from keras_bert.tasks.readers import TextExample
from keras_bert.tasks.registry import task_kind
from keras_bert.tasks.sentence_config import SentenceTaskConfig
from keras_bert.text.sentence_windows import LongTextReading


class SentenceModel(TextTaskModel):
    """What the classifiers and the regressor share: a `SentenceTaskConfig` (or a subclass:
    `config_class`), rows of text (pairs) with one target each (a label set, multi-label)."""

    config_class = SentenceTaskConfig

    @property
    def pair(self) -> bool:
        """Whether the model reads `(text, text_b)` pairs."""
        return self.config.pair

    def stream(self, rows, batch_size, seed=None, drop_remainder=False):
        """The batches `keras-bert finetune` fits on (one per text, or per window when the
        model reads long texts in windows: `SentenceTask.rows_dataset`)."""
        return self.task_kind.rows_dataset(rows, self.preprocessor, self.labels,
                                           self.config.reading, batch_size, seed,
                                           drop_remainder)

    def score(self, rows, batch_size, train=None) -> dict:
        """The kind's metrics on the network's logits, windows aggregated as `predict`
        aggregates them (as `keras-bert finetune` scores; `train`: the training rows, for
        baselines that need them)."""
        return self.task_kind.score_rows(self.network, self.preprocessor, self.config.reading,
                                         rows, self.labels, train, batch_size)

    def requests(self, x) -> dict[str, list[str]]:
        """`text` (and `text_b`) of the texts `x`."""
        return self.task_kind.requests(text_examples(x, self.pair, "x"))

    @classmethod
    def from_pretrained(cls, source: str, labels=None, *, pair: bool = False,
                        pooling: str = "pooled", dropout: float | None = None,
                        seq_length: int = DEFAULT_SEQ_LENGTH,
                        reading: LongTextReading | str = "truncate", rules: str | None = None,
                        precision: str | None = None, seed: int | None = None,
                        new_head: bool = False):
        """A model on the encoder of `source` with a new head (sources:
        `pretrained_source`; a model directory of this kind, a fine-tuned model, loads
        whole). `labels`: the classifier's label names or their count; `pair`: reads
        `(text, text_b)`; `pooling`: `pooled`, `cls` or `mean`; `seq_length`: the training
        length; `reading`: texts longer than it are `"truncate"`d or read in `"windows"`
        (or a `LongTextReading` with the stride, window cap and aggregation);
        `precision`: the Keras dtype policy of a new head's model (default `auto`: for
        the hardware, printed; a fine-tuned model loads in its recorded one); `seed`: the
        new head's initial weights (as `keras-bert finetune --seed`); `new_head`: a new head
        even on a fine-tuned model of this kind (its encoder only)."""
        loaded, model_dir = cls.pretrained_source(source, rules, precision, new_head)
        if loaded is not None:
            return loaded
        vocab = cls.label_vocab(labels)
        encoder, preprocessor = cls.encoder_and_preprocessor(model_dir, seq_length, precision,
                                                             seed)
        reading = LongTextReading.at_length(reading, seq_length)
        config = cls.config_class(pair=pair, pooling=pooling, dropout=dropout, reading=reading)
        block = config.block(cls.kind, seq_length, None if vocab is None else len(vocab))
        network = task_kind(cls.kind).build_model(encoder, block, vocab)
        return cls(network, preprocessor, vocab, config)

    @classmethod
    def for_job(cls, job, train: list):
        """`keras-bert finetune`'s sentence model: the labels of `train` (for the labelled
        kinds), the job's pair columns, pooling, dropout and long-text reading."""
        labels = task_kind(cls.kind).label_vocab(train, job.train)
        model = cls.from_pretrained(
            job.model, None if labels is None else labels.names,
            pair=job.text_b_column is not None, pooling=job.pooling, dropout=job.dropout,
            seq_length=job.seq_length, reading=job.reading, rules=job.rules,
            precision=job.precision, seed=job.seed, new_head=True)
        model.config = dataclasses.replace(model.config, text_column=job.text_column,
                                           text_b_column=job.text_b_column)
        return model

    @classmethod
    def label_vocab(cls, labels):
        """The label vocabulary from the `labels` argument (None for the regressor)."""
        raise NotImplementedError


@keras.saving.register_keras_serializable(package="keras_bert")
class TextClassifier(SentenceModel):
    """Sentence (pair) classification from raw strings; targets are label names or ids.

    `predict` gives `label` (names), `label_id`, `probabilities` and `logits`;
    `evaluate` gives `accuracy` and `majority_baseline`.
    """

    kind = "classify"

    @classmethod
    def label_vocab(cls, labels):
        """Label names (a list) or a number of classes (names "0", "1", ...)."""
        if labels is None:
            raise ValueError("a TextClassifier needs labels=: the label names, or their count")
        return label_names(labels)

    def rows(self, x, y) -> list[TextExample]:
        """The rows of `x`, labelled with the names of `y`."""
        examples = text_examples(x, self.pair)
        ids = class_ids(y, self.labels, len(examples))
        return [dataclasses.replace(ex, label=self.labels.name(int(i)))
                for ex, i in zip(examples, ids, strict=True)]


@keras.saving.register_keras_serializable(package="keras_bert")
class TextRegressor(SentenceModel):
    """Sentence (pair) regression from raw strings (one score per text).

    `predict` gives `score`; `evaluate` gives `pearson`, `spearman` and `mse`.
    """

    kind = "regress"

    @classmethod
    def label_vocab(cls, labels):
        """A regressor has no labels."""
        if labels is not None:
            raise ValueError("a TextRegressor has no labels")
        return None

    def rows(self, x, y) -> list[TextExample]:
        """The rows of `x` with the numbers of `y`."""
        examples = text_examples(x, self.pair)
        values = scores(y, len(examples))
        return [dataclasses.replace(ex, label=float(v))
                for ex, v in zip(examples, values, strict=True)]
