"""`TextTaskModel`: the Keras model of every task kind; raw strings in, its preprocessor inside.

Each kind (`keras_bert/tasks/<kind>/model.py`: `TextClassifier`, `TextRegressor`,
`MultiLabelClassifier`, `TokenClassifier`, `QuestionAnswerer`, `TextEmbedder`) owns its
network (ids to logits or vectors), its `BertPreprocessor`, labels and typed config:

- `from_pretrained(source, ...)`: a new head on the encoder of any checkpoint `convert`
  reads, or a fine-tuned model directory of this kind loaded whole; it and `load` take
  `distribution=` (JAX: `keras_bert.training.distribution`), built and trained under it.
- `fit(x, y)`: the kind's rows featurised into a seeded batch stream, the kind's loss and
  metrics (`compile`'s defaults), BERT's AdamW sized from the fit's own steps unless
  compiled with another optimizer; resumable with `checkpoint_dir=`.
- `evaluate(x, y)`: the kind's metrics, the numbers `keras-bert finetune` reports.
- `predict(x)`: the export's `serving_default` outputs, computed in process by the very
  functions the export holds.
- `save(dir)` / `load(dir)`: the model directory (`task_dir.py`); `.keras` files too.
- `export(dir)`: the next TF Serving version, written from the model in memory.

The job layer, the exporters and the command line call the public methods that
`TextTaskModel`'s docstring lists beside these; methods named `_...` are the kinds' hooks
(`task_hooks.TaskHooks`), called within `keras_bert.tasks` alone.
"""

from __future__ import annotations

import dataclasses
import os
from typing import ClassVar

import keras
import numpy as np
import tensorflow as tf

from keras_bert.tasks.batches import Batching
from keras_bert.tasks.export_options import build_options, checked_options, exporter_options
from keras_bert.tasks.fitting import (
    brings_loss,
    check_fit_arguments,
    fit_checkpoint,
    fit_rows,
    pair_of,
)
from keras_bert.tasks.in_process import PREDICT_BATCH, decoded, run_in_batches
from keras_bert.tasks.registry import task_class
from keras_bert.tasks.task_hooks import TaskHooks
from keras_bert.training import backends
from keras_bert.training.distribution import distributed_builder, evaluation_scope, undistributed
from keras_bert.training.fit_schedule import FitSchedule
from keras_bert.training.optimizer import build_optimizer

DEFAULT_BATCH_SIZE = 32


class TextTaskModel(TaskHooks, keras.Model):
    """A task network and its preprocessor, taking raw strings (see the module docstring).

    Subclasses set `kind` (the registry's name), `config_class` (the kind's typed config:
    `block(kind, seq_length, num_classes)` writes the task block of a model directory,
    `from_block` reads it) and `labelled`, and implement the hooks `TaskHooks` lists.

    Beside a Python user's methods, what other packages call (none calls a `_` name):
    `keras-bert finetune` (`keras_bert.jobs`) builds with `from_settings`, reads with
    `read_rows`, trains with `fit_rows`, scores with `score_rows` and keeps what the kind
    tunes with `tune_on`; the exporters take `serving_functions` of the model
    `in_precision` returns; `keras-bert predict` answers with `answer_file`, `encode` with
    `serving_functions`.
    """

    kind: ClassVar[str] = ""
    config_class: ClassVar[type] = type(None)
    labelled: ClassVar[bool] = False  # has label names (labels.txt)
    export_options_class: ClassVar[type | None] = None  # tasks/export_options.py

    def __init__(self, network, preprocessor, labels=None, config=None, **kwargs):
        kwargs.setdefault("dtype", network.dtype_policy)
        kwargs.setdefault("name", f"text_{network.name}")
        super().__init__(**kwargs)
        self.network = network
        self.preprocessor = preprocessor
        self.labels = labels
        self.config = config if config is not None else self.config_class()
        self.schedule = FitSchedule()
        self._sized_optimizer = True  # compile() without an optimizer: sized by fit
        self._compile_arguments: dict = {}  # compile()'s loss, metrics and settings
        self._serving = None

    # ----- building -----------------------------------------------------------------------

    @classmethod
    @distributed_builder
    def load(cls, path: str, rules: str | None = None, precision: str | None = None):
        """The model saved in the model directory `path` (`save`, `keras-bert finetune`),
        computing in the precision it was saved in (`precision`: another dtype policy).
        `TextTaskModel.load` returns whichever kind the directory holds."""
        from keras_bert.tasks.task_dir import read_task_dir
        from keras_bert.training.precision import resolve_precision

        saved = read_task_dir(path, rules)
        model_class = task_class(saved.kind)
        if not issubclass(model_class, cls):
            raise ValueError(f"{path} holds a {model_class.__name__} ({saved.kind!r}), not a "
                             f"{cls.__name__}")
        return model_class._restore(saved, None if precision is None
                                    else resolve_precision(precision))

    @classmethod
    def _restore(cls, saved, dtype=None):
        """This kind's model from `read_task_dir`'s result, its encoder in `dtype` or saved."""
        from keras_bert.tasks.task_dir import load_head_weights

        if cls.labelled and saved.labels is None:
            raise FileNotFoundError(f"{saved.model_dir.path}: a {cls.__name__} model "
                                    "directory needs labels.txt")
        config = cls.config_class.from_block(saved.block)
        network = cls._build_network(saved.model_dir.load_encoder(dtype=dtype), config,
                                     saved.labels)
        if network.head_layers:
            load_head_weights(network.head_layers, saved.head_weights)
        return cls(network, saved.model_dir.preprocessor(), saved.labels, config)

    @classmethod
    def _pretrained(cls, source: str, rules: str | None, precision: str | None,
                    new_head: bool = False):
        """`(model, None)` when `source` holds a fine-tuned model of this kind (loaded
        whole, in its recorded precision unless `precision`; not with `new_head`), else
        `(None, encoder_source)`: what to build a new head on. Sources: a keras_bert model
        directory, any checkpoint `keras-bert convert` reads (local, or a hub id), or
        `random-NAME`, all read in memory (`keras_bert.tasks.sources`)."""
        from keras_bert.tasks.sources import open_source
        from keras_bert.training.precision import resolve_precision

        found = open_source(source, rules)
        if not new_head and found.model_class is cls:
            dtype = None if precision is None else resolve_precision(precision)
            return found.build(dtype), None
        return None, found.encoder

    @staticmethod
    def _encoder_and_preprocessor(source, seq_length: int, precision: str | None = None,
                                  seed: int | None = None):
        """The encoder of `source` (`_pretrained`'s), built once for training in
        `precision`'s dtype policy (None or `auto`: for the hardware, resolved here once and
        printed), and its preprocessor at `seq_length`. `seed` seeds Keras' global
        generator first, so that the head built next starts from the weights `keras-bert
        finetune --seed` starts from."""
        from keras_bert.text.preprocessor import BertPreprocessor
        from keras_bert.training.precision import training_precision

        if seed is not None:
            keras.utils.set_random_seed(int(seed))
        encoder = source.load_encoder(dtype=training_precision(precision))
        if seq_length > encoder.config.max_position_embeddings:
            raise ValueError(f"seq_length {seq_length} exceeds the model's "
                             f"max_position_embeddings {encoder.config.max_position_embeddings}")
        return encoder, BertPreprocessor(source.tokenizer(), seq_length)

    def get_config(self) -> dict:
        """The network, the preprocessor (vocabulary inside), labels and config."""
        return {"network": keras.saving.serialize_keras_object(self.network),
                "preprocessor": keras.saving.serialize_keras_object(self.preprocessor),
                "labels": None if self.labels is None else self.labels.names,
                "config": dataclasses.asdict(self.config), "name": self.name}

    @classmethod
    def from_config(cls, config: dict):
        """Rebuilds the model from `get_config` output."""
        from keras_bert.tasks.labels import LabelVocab

        config = dict(config)
        labels = config.pop("labels")
        return cls(keras.saving.deserialize_keras_object(config.pop("network")),
                   keras.saving.deserialize_keras_object(config.pop("preprocessor")),
                   None if labels is None else LabelVocab(labels),
                   cls.config_class(**config.pop("config")), **config)

    # ----- Keras --------------------------------------------------------------------------

    def call(self, inputs, training=False):
        """The network on packed ids (`input_word_ids`, `input_mask`, `input_type_ids`)."""
        return self.network(inputs, training=training)

    def compile(self, optimizer=None, loss=None, metrics=None, *,
                schedule: FitSchedule | None = None, **kwargs):
        """The kind's loss and metrics unless `loss` is given. Without `optimizer`, `fit`
        builds BERT's AdamW under `schedule` (default `FitSchedule()`), sized from its own
        number of steps. `jit_compile` (XLA) defaults to the device's choice
        (`keras_bert.training.backends.default_jit_compile`)."""
        if schedule is not None:
            self.schedule = schedule
        self._sized_optimizer = optimizer is None
        # Kept for the optimizer `fit` sizes: it compiles again with these (`jit_compile` too).
        self._compile_arguments = {"loss": loss, "metrics": metrics, **kwargs}
        self._compile(optimizer or self.schedule.optimizer(1), **self._compile_arguments)

    def _compile(self, optimizer, loss=None, metrics=None, **kwargs) -> None:
        """`keras.Model.compile` with the kind's loss and metrics where none are given."""
        if loss is None:
            loss, own = self._default_loss()
            metrics = own if metrics is None else metrics
        if kwargs.get("jit_compile") is None:
            kwargs["jit_compile"] = backends.default_jit_compile()
        with backends.distribution_scope(self):  # the metrics' variables laid out with it
            super().compile(optimizer=optimizer, loss=loss, metrics=metrics, **kwargs)

    def compute_loss(self, x=None, y=None, y_pred=None, sample_weight=None, training=True):
        """The network's own loss when it brings one (span QA) and none was compiled;
        else Keras' compiled loss."""
        if self._compile_loss is None and brings_loss(self.network):
            return self.network.compute_loss(x, y, y_pred, sample_weight, training)
        return super().compute_loss(x, y, y_pred, sample_weight, training)

    def get_compile_config(self) -> dict:
        """The default optimizer's schedule (a `.keras` file recompiles with it)."""
        return {"schedule": dataclasses.asdict(self.schedule)}

    def compile_from_config(self, config: dict) -> None:
        """Compiles as `compile()` does, with the saved schedule (the optimizer built, so
        that the archive's optimizer state loads into it)."""
        self.compile(schedule=FitSchedule(**config["schedule"]))
        build_optimizer(self)

    def fit(self, x=None, y=None, batch_size: int | None = None, epochs: int = 1,
            validation_data=None, seed: int | None = None, checkpoint_dir: str | None = None,
            checkpoint_minutes: float = 10.0, checkpoint_steps: int | None = None,
            length_buckets="auto", group_by_length: int | bool = 0, **kwargs):
        """Trains on texts `x` and targets `y` (see the subclass).

        `seed` orders the batches of every epoch (default: drawn from NumPy's global
        generator, which `keras.utils.set_random_seed` seeds). `validation_data`:
        `(texts, targets)`. `checkpoint_dir`: model and optimizer state are saved there at
        every epoch end, every `checkpoint_steps` steps and after any step ending
        `checkpoint_minutes` after the last save; an interrupted fit called again with the
        same model, data, settings and directory resumes where the last save left off and
        ends with the weights of an uninterrupted run (it needs an explicit `seed`).
        `length_buckets` (each batch cut to its longest row, rounded up to a bucket) and
        `group_by_length` (rows of similar length batched together): `Batching`. Other
        arguments go to `keras.Model.fit`; `steps_per_epoch` is the number of batches. On
        JAX a data-parallel split drops the last, partial batch of an epoch."""
        check_fit_arguments(x, kwargs, checkpoint_dir, seed)
        batching = Batching(length_buckets, group_by_length)
        batching.buckets(self.preprocessor.seq_length)  # a bad bucket list: before any work
        batch_size = int(batch_size or DEFAULT_BATCH_SIZE)
        rows = self._rows(x, y)
        validation_rows = (None if validation_data is None
                           else self._rows(*pair_of(validation_data)))
        if seed is None:
            seed = int(np.random.randint(0, 2**31 - 1))
        checkpoint = None
        if checkpoint_dir is not None:
            checkpoint = fit_checkpoint(self, rows, checkpoint_dir, epochs, batch_size, seed,
                                        checkpoint_steps, checkpoint_minutes, batching)
        history = keras.callbacks.History()
        history.history, _ = self.fit_rows(
            rows, batch_size=batch_size, epochs=epochs, seed=int(seed), checkpoint=checkpoint,
            validation_rows=validation_rows, batching=batching, **kwargs)
        return history

    def fit_rows(self, rows: list, *, batch_size: int, epochs: int, seed: int,
                 validation_rows: list | None = None, checkpoint=None,
                 batching: Batching | None = None, **fit_kwargs) -> tuple[dict, int]:
        """The training loop of `fit` and of `keras-bert finetune`: `epochs` passes over
        `rows` in batches shuffled by `(seed, epoch)` and shaped by `batching`, under the
        compiled optimizer or `FitSchedule`'s AdamW sized from these steps, resumed from
        `checkpoint` (a `ResumableCheckpoint`) when it holds a state. Returns the epochs'
        logs and the number of packed examples an epoch holds (one per row, or per
        window)."""
        return fit_rows(self, rows, batch_size=batch_size, epochs=epochs, seed=seed,
                        validation_rows=validation_rows, checkpoint=checkpoint,
                        batching=batching, **fit_kwargs)

    def evaluate(self, x=None, y=None, batch_size: int | None = None, **kwargs):
        """The task metrics on texts `x` with targets `y` (a dict: those of
        `keras-bert finetune`'s `metrics.json`). A dataset of ids (as `fit`'s validation
        passes) goes to `keras.Model.evaluate` (`evaluation_scope`)."""
        ids = isinstance(x, tf.data.Dataset) or kwargs.get("_use_cached_eval_dataset")
        with evaluation_scope(fit_batches=bool(ids)):
            if ids:
                return super().evaluate(x, y, batch_size=batch_size, **kwargs)
            if kwargs:
                raise TypeError(f"unexpected arguments {sorted(kwargs)}")
            return self._score(self._rows(x, y), int(batch_size or PREDICT_BATCH))

    def predict(self, x, batch_size: int | None = None, **kwargs) -> dict[str, np.ndarray]:
        """The export's `serving_default` outputs for texts `x`, computed in process by the
        same functions (each request padded to its longest text): a dict of NumPy arrays,
        strings as `str`."""
        if kwargs.pop("verbose", None) not in (None, 0, "auto") or kwargs:
            raise TypeError(f"unexpected arguments {sorted(kwargs)}")
        with undistributed():  # whole batches, a partial last one too (JAX)
            outputs = run_in_batches(self._served().text_function(), self._requests(x),
                                     int(batch_size or PREDICT_BATCH))
        return {name: decoded(value) for name, value in outputs.items()}

    # ----- what the job layer, the exporters and the command line call --------------------

    @classmethod
    def from_settings(cls, settings, train: list, train_file: str):
        """The untrained model `keras-bert finetune` fits: `from_pretrained` with a new head
        built with `settings` (a `keras_bert.tasks.settings.TaskSettings`), sized for the
        training rows `train` (its labels) read from `train_file` (named in errors)."""
        return cls._from_settings(settings, train, train_file)

    @classmethod
    def read_rows(cls, path: str, columns, labels=None) -> list:
        """The rows of the training or evaluation file `path`, in `columns` (a
        `keras_bert.tasks.settings.Columns`) where its format has columns; with `labels`
        (the model's), a row with another label is an error naming the file."""
        return cls._read_rows(path, columns, labels)

    def score_rows(self, rows: list, batch_size: int, train: list | None = None) -> dict:
        """The task metrics on `rows` (as `evaluate`'s; `train`: the training rows, for
        the baselines of kinds that report them), the batches whole (on JAX outside the
        distribution: a partial last batch does not split across devices)."""
        with undistributed():
            return self._score(rows, int(batch_size), train=train)

    def tune_on(self, evaluation: dict | None) -> None:
        """Keeps what the kind chooses on `score_rows`' evaluation (the multi-label
        thresholds); nothing for the other kinds."""
        self._tune_on(evaluation)

    def answer_file(self, source: str, batch_size: int = PREDICT_BATCH,
                    text_column: str | None = None, text_b_column: str | None = None,
                    max_length: int | None = None) -> list:
        """`keras-bert predict`: one JSON-ready answer per row of the file `source` (`-`:
        stdin), computed in this process by the export's `serving_default` function, texts
        truncated at `max_length` (None: where `predict` truncates them, the training
        length); `text_column`, `text_b_column`: the file's (default: the model's own)."""
        if max_length is None:
            return self._answers(source, int(batch_size), text_column, text_b_column)
        # Functions at `max_length` for these answers only: `predict` keeps its own.
        kept, self._serving = self._serving, self.serving_functions(max_length=max_length)
        try:
            return self._answers(source, int(batch_size), text_column, text_b_column)
        finally:
            self._serving = kept

    def serving_functions(self, seq_length: int | None = None,
                          max_length: int | None = None, options=None):
        """This model's export functions (a `keras_bert.tasks.serving.ServingModule`) around
        its preprocessor, padded to `seq_length` or each batch's longest text, truncated at
        `seq_length`, else `max_length`, else the training length; `options`: the kind's
        export options (`export_options`; None: its defaults)."""
        preprocessor = self.preprocessor.with_length(
            seq_length, seq_length or max_length or self.preprocessor.max_length)
        return self._build_serving(preprocessor, checked_options(type(self), options))

    @classmethod
    def export_options(cls, **flags):
        """The kind's export options from flags by name (`tasks/export_options.py`)."""
        return build_options(cls, flags)

    def _served(self):
        """The serving functions `predict` and the kinds' answers run, built once (a kind
        drops them, setting `_serving` to None, when what they answer with changes)."""
        if self._serving is None:
            self._serving = self.serving_functions()
        return self._serving

    # ----- files --------------------------------------------------------------------------

    def save(self, filepath, overwrite: bool = True, metadata: dict | None = None, **kwargs):
        """`*.keras`: Keras' archive (`keras.saving.load_model` reads it). Otherwise the
        keras_bert model directory that `keras-bert predict / export` and `load` read
        (`metadata`: provenance recorded beside the task block); returns its path."""
        if str(filepath).endswith(".keras"):
            return super().save(filepath, overwrite=overwrite, **kwargs)
        from keras_bert.tasks.task_dir import write_task_dir

        if os.path.exists(filepath) and not overwrite:
            raise FileExistsError(f"{filepath} exists (overwrite=False)")
        return write_task_dir(self.network, self.preprocessor, str(filepath),
                              self._task_block(), self.labels, metadata).path

    def _task_block(self) -> dict:
        """The task block the model directory records (written by the config alone)."""
        return self.config.block(self.kind, self.preprocessor.seq_length,
                                 None if self.labels is None else len(self.labels))

    def export(self, base_dir: str, format: str = "saved_model", **options) -> str:
        """Writes the next version under `base_dir` from this model as it is in memory, as
        `keras-bert export` does; returns its path. `format`: `saved_model` (TF Serving;
        options of `keras_bert.export.exporter.write_version`) or `litert` (one `.tflite`
        file; options of `keras_bert.export.litert.write_litert`); the kind's by name."""
        from keras_bert.export.exporter import write_export

        return write_export(self, base_dir, format, **exporter_options(self, options)).path

    def in_precision(self, policy: str):
        """This model computing in the Keras dtype policy `policy` (itself, or a copy with
        the same weights)."""
        from keras_bert.models.encoder import BertEncoder

        if self.network.encoder.dtype_policy.name == policy:
            return self
        network = self._build_network(BertEncoder(self.network.encoder.config, dtype=policy),
                                      self.config, self.labels)
        network.set_weights(self.network.get_weights())
        return type(self)(network, self.preprocessor, self.labels, self.config)

