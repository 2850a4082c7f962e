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
import os
import tempfile

import keras

from keras_bert.task_models.text_inputs import class_ids, label_names, scores, text_examples
from keras_bert.task_models.text_task_model import TextTaskModel
from keras_bert.tasks.labels import LabelVocab
from keras_bert.tasks.readers import TextExample
from keras_bert.tasks.sentence_config import SentenceTaskConfig


class SentenceModel(TextTaskModel):
    """What the classifier and the regressor share: a `SentenceTaskConfig`, the model
    directory and the pretrained sources they start from."""

    def __init__(self, network, preprocessor, labels=None,
                 config: SentenceTaskConfig | None = None, **kwargs):
        super().__init__(network, preprocessor, labels, **kwargs)
        self.config = config or SentenceTaskConfig()

    @property
    def pair(self) -> bool:
        """Whether the model reads `(text, text_b)` pairs."""
        return self.config.pair

    def task_block(self) -> dict:
        """The task block: the config, the training length, the number of outputs."""
        return self.config.block(self.kind, self.preprocessor.seq_length,
                                 None if self.labels is None else len(self.labels))

    @classmethod
    def from_pretrained(cls, source: str, labels=None, *, pair: bool = False,
                        pooling: str = "pooled", dropout: float | None = None,
                        seq_length: int = 128, rules: str | None = None,
                        precision: str = "auto"):
        """A model on the encoder of `source` with a new head: a keras_bert model
        directory, any checkpoint `keras-bert convert` reads (Google, Hugging Face,
        keras-hub preset), or a preset name (`tiny` ... `large`: random weights, the
        package's 8k uncased vocabulary). A model directory of this kind (a fine-tuned
        model) loads whole (`load`). `seq_length`: the training length; `precision`: a
        Keras dtype policy or `auto` (for the hardware, as `--precision auto`)."""
        from keras_bert.checkpoints.model_dir import load_model_dir
        from keras_bert.training.precision import resolve_precision

        source_dir = pretrained_model_dir(source)
        model_dir = load_model_dir(source_dir).with_rules(rules)
        if (model_dir.metadata.get("task") or {}).get("kind") == cls.kind:
            return cls.load(source_dir, rules=rules, precision=precision)
        vocab = cls.label_vocab(labels)
        if seq_length > model_dir.config.max_position_embeddings:
            raise ValueError(f"seq_length {seq_length} exceeds the model's "
                             f"max_position_embeddings {model_dir.config.max_position_embeddings}")
        config = SentenceTaskConfig(pair=pair, pooling=pooling, dropout=dropout)
        encoder = model_dir.load_encoder(dtype=resolve_precision(precision))
        preprocessor = model_dir.preprocessor().with_length(seq_length)
        block = config.block(cls.kind, seq_length, None if vocab is None else len(vocab))
        network = task_kind_of(cls).build_model(encoder, block, vocab)
        return cls(network, preprocessor, vocab, config)

    @classmethod
    def load(cls, path: str, rules: str | None = None, precision: str = "float32"):
        """The model saved in the model directory `path` (`save`, `keras-bert finetune`)."""
        from keras_bert.checkpoints.task_dir import load_task_model
        from keras_bert.training.precision import resolve_precision

        saved = load_task_model(path, dtype=resolve_precision(precision), rules=rules)
        if saved.kind != cls.kind:
            raise ValueError(f"{path} holds a {saved.kind!r} model, not a {cls.kind!r} one "
                             f"({cls.__name__})")
        return cls(saved.model, saved.preprocessor, saved.labels,
                   SentenceTaskConfig.from_block(saved.task))

    @classmethod
    def label_vocab(cls, labels):
        """The label vocabulary from the `labels` argument (None for the regressor)."""
        raise NotImplementedError

    def get_config(self) -> dict:
        """The network, the preprocessor (vocabulary inside), labels and config."""
        return {"network": keras.saving.serialize_keras_object(self.network),
                "preprocessor": keras.saving.serialize_keras_object(self.preprocessor),
                "labels": None if self.labels is None else self.labels.names,
                "config": dataclasses.asdict(self.config), "name": self.name}

    @classmethod
    def from_config(cls, config: dict):
        """Rebuilds the model from `get_config` output."""
        config = dict(config)
        labels = config.pop("labels")
        return cls(keras.saving.deserialize_keras_object(config.pop("network")),
                   keras.saving.deserialize_keras_object(config.pop("preprocessor")),
                   None if labels is None else LabelVocab(labels),
                   SentenceTaskConfig(**config.pop("config")), **config)


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

    def labelled_examples(self, x, y, what: str = "y") -> list[TextExample]:
        """The rows of `x`, labelled with the names of `y`."""
        examples = text_examples(x, self.pair)
        ids = class_ids(y, self.labels, len(examples), what)
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

    def labelled_examples(self, x, y, what: str = "y") -> list[TextExample]:
        """The rows of `x` with the numbers of `y`."""
        examples = text_examples(x, self.pair)
        values = scores(y, len(examples), what)
        return [dataclasses.replace(ex, label=float(v))
                for ex, v in zip(examples, values, strict=True)]


def task_kind_of(cls):
    """The task kind a model class delegates to."""
    from keras_bert.tasks.registry import task_kind

    return task_kind(cls.kind)


def pretrained_model_dir(source: str) -> str:
    """A keras_bert model directory for `source` (converted into a temporary directory
    when it is another checkpoint format, made when it is a preset name)."""
    from keras_bert.checkpoints.conversion import convert, detect_format
    from keras_bert.config import PRESETS

    if not os.path.exists(source) and source in PRESETS:
        return _preset_dir(source)
    if detect_format(source) == "keras_bert":
        return source
    return convert(source, os.path.join(tempfile.mkdtemp(prefix="keras_bert-"), "model")).path


def _preset_dir(name: str) -> str:
    from keras_bert.checkpoints.model_dir import save_model_dir
    from keras_bert.config import BertConfig
    from keras_bert.models import BertEncoder
    from keras_bert.text.tokenizer import load_vocab

    vocab_file = os.path.join(os.path.dirname(os.path.dirname(__file__)), "data", "vocab",
                              "corpus_uncased_8k.txt")
    config = BertConfig.from_preset(name, vocab_size=len(load_vocab(vocab_file)))
    path = os.path.join(tempfile.mkdtemp(prefix="keras_bert-"), name)
    return save_model_dir(BertEncoder(config), path, vocab_file, True,
                          metadata={"preset": name}).path
