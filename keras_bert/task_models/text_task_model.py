"""`TextTaskModel`: a Keras model that owns its `BertPreprocessor` and takes raw strings.

The base of the task models a Python user holds (`TextClassifier`, `MultiLabelClassifier`,
`TextRegressor`, `TokenClassifier`, `QuestionAnswerer`, `TextEmbedder`). It wraps the task
network of its kind (ids in, logits or vectors out: `keras_bert.models`) and the
preprocessor that network was trained with, and delegates to the task kind (`keras_bert.tasks.registry`) that
`keras-bert finetune / predict / export` use:

- `fit(x, y)`: the kind's rows, featurised into a seeded batch stream; the kind's loss
  and metrics; unless compiled with another optimizer, `FitSchedule`'s AdamW sized from
  the fit's own steps; resumable with `checkpoint_dir=`. Its loop is `fit_rows`, which
  `keras-bert finetune` runs on the rows of its files (`for_job` builds the model), so the
  same data, seed and settings end with the same weights.
- `predict(x)`: the export's `serving_default` outputs computed in process by the
  functions the export traces.
- `evaluate(x, y)`: the kind's metrics, the numbers `metrics.json` reports.
- `save(dir)` / `load(dir)`: the model directory of `keras-bert predict / export`;
  `save("x.keras")` / `keras.saving.load_model` round trip too.
- `export(dir)`: what `keras-bert export` writes; returns the version's path.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import math
import os
import tempfile
from typing import ClassVar

import keras
import numpy as np
import tensorflow as tf

from keras_bert.tasks.registry import task_kind
from keras_bert.tasks.task import PREDICT_BATCH, run_in_batches
from keras_bert.training.checkpointing import ResumableCheckpoint
from keras_bert.training.fit_schedule import FitSchedule, prepare_fit
from keras_bert.training.optimizer import build_optimizer
from keras_bert.training.resume import fit_from_step

DEFAULT_BATCH_SIZE = 32


class TextTaskModel(keras.Model):
    """A task network and its preprocessor, taking raw strings (see the module docstring).

    Subclasses set `kind` (a task kind's name) and `config_class` (the kind's typed config:
    `block(kind, seq_length, num_classes)` writes the model directory's task block,
    `from_block` reads it) and implement the hooks below.
    """

    kind: ClassVar[str] = ""
    config_class: ClassVar[type] = type(None)

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
        self._kind_compiling = False
        self._serving = None

    def task_block(self) -> dict:
        """The model directory's task block (`metadata.task`): the config, the training
        length, the number of outputs."""
        return self.config.block(self.kind, self.preprocessor.seq_length,
                                 None if self.labels is None else len(self.labels))

    @classmethod
    def pretrained_source(cls, source: str, rules: str | None = None,
                          precision: str | None = None, new_head: bool = False):
        """`(loaded, model_dir)` for `from_pretrained`: a model directory of this kind loads
        whole (`loaded`; `model_dir` None) unless `new_head`; any other source gives the
        `ModelDir` to build on. Sources: a keras_bert model directory, any checkpoint
        `keras-bert convert` reads (Google, Hugging Face, keras-hub preset), or a preset
        name (`tiny` ... `large`: random weights, the package's 8k uncased vocabulary).
        `precision`: None loads a whole model in the precision it recorded."""
        from keras_bert.checkpoints.model_dir import load_model_dir
        from keras_bert.task_models.sources import pretrained_model_dir

        source_dir = pretrained_model_dir(source)
        model_dir = load_model_dir(source_dir).with_rules(rules)
        if not new_head and (model_dir.metadata.get("task") or {}).get("kind") == cls.kind:
            return cls.load(source_dir, rules=rules, precision=precision), None
        return None, model_dir

    @classmethod
    def for_job(cls, job, train: list):
        """The untrained model `keras-bert finetune` fits for `job` (a
        `keras_bert.task_models.finetune_job.FinetuneJob`): a new head on the encoder of
        `job.model`, sized for the training rows `train` (their labels). Subclasses map the
        job's settings onto `from_pretrained`."""
        raise NotImplementedError(f"{cls.__name__} is not fine-tuned by `keras-bert finetune`")

    @staticmethod
    def encoder_and_preprocessor(model_dir, seq_length: int, precision: str | None = None,
                                 seed: int | None = None):
        """The encoder of `model_dir`, for training, in `precision`'s dtype policy (None or
        `auto`: for the hardware, resolved here once and printed, as `--precision auto`)
        and its preprocessor at `seq_length`. `seed`
        seeds Keras' global generator first, so that the head built next starts from the
        weights `keras-bert finetune --seed` starts from (it seeds at the same point)."""
        from keras_bert.training.precision import training_precision

        if seed is not None:
            keras.utils.set_random_seed(int(seed))

        if seq_length > model_dir.config.max_position_embeddings:
            raise ValueError(f"seq_length {seq_length} exceeds the model's "
                             f"max_position_embeddings {model_dir.config.max_position_embeddings}")
        return (model_dir.load_encoder(dtype=training_precision(precision)),
                model_dir.preprocessor().with_length(seq_length))

    @classmethod
    def load(cls, path: str, rules: str | None = None, precision: str | None = None):
        """The model saved in the model directory `path` (`save`, `keras-bert finetune`),
        computing in the precision it was saved in (`precision`: another dtype policy)."""
        from keras_bert.checkpoints.task_dir import load_task_model
        from keras_bert.training.precision import resolve_precision

        dtype = None if precision is None else resolve_precision(precision)
        saved = load_task_model(path, dtype=dtype, rules=rules)
        if saved.kind != cls.kind:
            raise ValueError(f"{path} holds a {saved.kind!r} model, not a {cls.kind!r} one "
                             f"({cls.__name__})")
        return cls(saved.model, saved.preprocessor, saved.labels,
                   cls.config_class.from_block(saved.task))

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

    # ----- what subclasses say ------------------------------------------------------------

    def rows(self, x, y) -> list:
        """The rows of inputs `x` carrying targets `y` (validated), as the kind's data
        pipeline reads them from files (`TextExample`, `TaggedSentence`, ...)."""
        raise NotImplementedError

    def stream(self, rows: list, batch_size: int, seed: int | None = None,
               drop_remainder: bool = False) -> tuple[tf.data.Dataset, int]:
        """`(dataset, examples)`: `(features, targets)` batches of `rows` (with `seed`:
        endless epochs, each shuffled by `(seed, epoch)`; else one pass in order) and the
        number of training examples they hold (windows, for windowed kinds)."""
        raise NotImplementedError

    def score(self, rows: list, batch_size: int, train: list | None = None) -> dict:
        """The task metrics on `rows` (those of `keras-bert finetune`'s `metrics.json`;
        `train`: the training rows, for the baselines of kinds that report them)."""
        raise NotImplementedError

    def requests(self, x) -> dict[str, list[str]]:
        """The `serving_default` inputs for `x`."""
        raise NotImplementedError

    def tune_on(self, evaluation: dict | None) -> None:
        """Keeps the settings the kind chooses on an evaluation (`Task.tuned_spec`: the
        multi-label thresholds) for `predict`, `save` and `export`."""
        block = self.task_block()
        spec = self.task_kind.tuned_spec(block, evaluation)
        if spec != block:
            self.config = self.config_class.from_block(spec)
            self._serving = None

    @property
    def task_kind(self):
        """The task kind (`keras_bert.tasks.task.Task`) this model delegates to."""
        return task_kind(self.kind)

    # ----- Keras --------------------------------------------------------------------------

    def call(self, inputs, training=False):
        """The network on packed ids (`input_word_ids`, `input_mask`, `input_type_ids`)."""
        return self.network(inputs, training=training)

    def compile(self, optimizer=None, loss=None, metrics=None, *,
                schedule: FitSchedule | None = None, **kwargs):
        """The task's loss and metrics (unless `loss` is given). Without `optimizer`,
        `fit` builds BERT's AdamW under `schedule` (default `FitSchedule()`), sized from
        its own number of steps."""
        if loss is not None or self._kind_compiling:
            super().compile(optimizer=optimizer, loss=loss, metrics=metrics, **kwargs)
            return
        if schedule is not None:
            self.schedule = schedule
        self._sized_optimizer = optimizer is None
        self._kind_compiling = True  # the kind calls compile back, with or without a loss
        try:
            self.task_kind.compile(self, optimizer or self.schedule.optimizer(1))
        finally:
            self._kind_compiling = False

    def compute_loss(self, x=None, y=None, y_pred=None, sample_weight=None, training=True):
        """The network's own loss when it brings one (span QA) and none was compiled;
        else Keras' compiled loss."""
        if self._compile_loss is None and _brings_loss(self.network):
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
            checkpoint_minutes: float = 10.0, checkpoint_steps: int | None = None, **kwargs):
        """Trains on texts `x` and targets `y` (see the subclass).

        `seed` orders the batches of every epoch (default: drawn from NumPy's global
        generator, which `keras.utils.set_random_seed` seeds). `validation_data`:
        `(texts, targets)`. `checkpoint_dir`: model and optimizer state are saved there at
        every epoch end, every `checkpoint_steps` steps and after any step ending
        `checkpoint_minutes` after the last save; an interrupted fit called again with the
        same model, data, settings and directory resumes where the last save left off and
        ends with the weights of an uninterrupted run (`keras-bert finetune`'s resume; it
        needs an explicit `seed`). Other arguments go to `keras.Model.fit`;
        `steps_per_epoch` is the number of batches in the data.
        """
        if isinstance(x, tf.data.Dataset):
            raise TypeError("fit takes texts and targets (lists, arrays, Series); a "
                            "tf.data.Dataset of ids goes to model.network.fit")
        if "steps_per_epoch" in kwargs or "shuffle" in kwargs:
            raise TypeError("fit sets steps_per_epoch (the batches in the data) and its own "
                            "seeded shuffle (seed=)")
        if checkpoint_dir is not None and seed is None:
            raise ValueError("a resumable fit (checkpoint_dir=) needs seed=, so that the "
                             "resumed run sees the batches the interrupted one would have")
        batch_size = int(batch_size or DEFAULT_BATCH_SIZE)
        rows = self.rows(x, y)
        validation_rows = (None if validation_data is None
                           else self.rows(*_pair_of(validation_data)))
        if seed is None:
            seed = int(np.random.randint(0, 2**31 - 1))
        checkpoint = None
        if checkpoint_dir is not None:
            sized = not self.compiled or self._sized_optimizer
            checkpoint = ResumableCheckpoint(
                checkpoint_dir, every_steps=checkpoint_steps,
                every_seconds=60.0 * checkpoint_minutes, arguments={
                    "data": _fingerprint(rows), "epochs": int(epochs),
                    "batch_size": batch_size, "seed": int(seed), "task": self.task_block(),
                    "optimizer": ({"FitSchedule": dataclasses.asdict(self.schedule)} if sized
                                  else _describe(self.optimizer))})
        history = keras.callbacks.History()
        history.history, _ = self.fit_rows(rows, batch_size=batch_size, epochs=epochs,
                                        seed=int(seed), validation_rows=validation_rows,
                                        checkpoint=checkpoint, **kwargs)
        return history

    def fit_rows(self, rows: list, *, batch_size: int, epochs: int, seed: int,
                 validation_rows: list | None = None, checkpoint=None,
                 **fit_kwargs) -> tuple[dict, int]:
        """The training loop of `fit` and of `keras-bert finetune`: `epochs` passes over
        `rows` (the kind's rows, as `rows(x, y)` or the kind's file reader gives them) in
        batches shuffled by `(seed, epoch)`, under the compiled optimizer or `FitSchedule`'s
        AdamW sized from these steps, resumed from `checkpoint` (a `ResumableCheckpoint`,
        also saving as it goes) when it holds a state. Returns the epochs' logs and the
        number of packed examples an epoch holds (one per row, or per window)."""
        if int(epochs) < 1:
            raise ValueError(f"epochs must be at least 1, got {epochs}")
        # TPUs compile for one batch shape: there the last, partial batch is dropped (not
        # verified on a TPU here; MirroredStrategy and one device keep every example).
        static = isinstance(self.distribute_strategy, tf.distribute.TPUStrategy)
        stream, count = self.stream(rows, batch_size, int(seed), drop_remainder=static)
        steps = count // batch_size if static else math.ceil(count / batch_size)
        if steps < 1:
            raise ValueError(f"{count} examples do not fill one batch of {batch_size}")
        sized = not self.compiled or self._sized_optimizer
        start = prepare_fit(self, self.task_kind, self.schedule if sized else None,
                            steps * int(epochs), checkpoint)
        self._sized_optimizer = sized
        validation = (None if validation_rows is None
                      else self.stream(validation_rows, batch_size)[0])
        callbacks = [*([checkpoint] if checkpoint else []), *fit_kwargs.pop("callbacks", [])]
        logs = fit_from_step(self, stream, epochs=int(epochs), steps_per_epoch=steps,
                             start_step=start, validation_data=validation, callbacks=callbacks,
                             **fit_kwargs)
        return logs, count

    def evaluate(self, x=None, y=None, batch_size: int | None = None, **kwargs):
        """The task metrics on texts `x` with targets `y` (a dict: those of
        `keras-bert finetune`'s `metrics.json`). A dataset of ids (as `fit`'s validation
        passes) goes to `keras.Model.evaluate`."""
        if isinstance(x, tf.data.Dataset) or kwargs.get("_use_cached_eval_dataset"):
            return super().evaluate(x, y, batch_size=batch_size, **kwargs)
        if kwargs:
            raise TypeError(f"unexpected arguments {sorted(kwargs)}")
        return self.score(self.rows(x, y), int(batch_size or PREDICT_BATCH))

    def predict(self, x, batch_size: int | None = None, **kwargs) -> dict[str, np.ndarray]:
        """The export's `serving_default` outputs for texts `x`, computed in process by the
        same functions (each request padded to its longest text): a dict of NumPy arrays,
        strings as `str`."""
        if kwargs.pop("verbose", None) not in (None, 0, "auto") or kwargs:
            raise TypeError(f"unexpected arguments {sorted(kwargs)}")
        outputs = run_in_batches(self.serving_module().text_function(), self.requests(x),
                                 int(batch_size or PREDICT_BATCH))
        return {name: _strings(value) for name, value in outputs.items()}

    def serving_module(self):
        """The functions of this model's export (`keras_bert.tasks.serving_module`)."""
        if self._serving is None:
            preprocessor = self.preprocessor.with_length(None, self.preprocessor.max_length)
            self._serving = self.task_kind.serving_module(self.network, preprocessor,
                                                          self.labels, self.task_block())
        return self._serving

    # ----- files --------------------------------------------------------------------------

    def save(self, filepath, overwrite: bool = True, metadata: dict | None = None, **kwargs):
        """`*.keras`: Keras' archive (`keras.saving.load_model` reads it). Otherwise the
        keras_bert model directory that `keras-bert predict / export` and `load` read
        (`metadata`: provenance recorded beside the task block)."""
        if str(filepath).endswith(".keras"):
            return super().save(filepath, overwrite=overwrite, **kwargs)
        from keras_bert.checkpoints.task_dir import save_task_model

        if os.path.exists(filepath) and not overwrite:
            raise FileExistsError(f"{filepath} exists (overwrite=False)")
        tokenizer = self.preprocessor.tokenizer
        with tempfile.TemporaryDirectory() as tmp:
            vocab = os.path.join(tmp, "vocab.txt")
            with open(vocab, "w", encoding="utf-8") as f:
                f.write("".join(token + "\n" for token in tokenizer.vocab))
            return save_task_model(self.network, str(filepath), vocab, tokenizer.lower_case,
                                   self.task_block(), self.labels, metadata=metadata,
                                   preprocessor=self.preprocessor).path

    def export(self, base_dir: str, **options) -> str:
        """Writes the next version under `base_dir` exactly as `keras-bert export` does
        (options: those of `keras_bert.export.exporter.export_model`); returns its path."""
        from keras_bert.export.exporter import export_model

        with tempfile.TemporaryDirectory() as tmp:
            model_dir = self.save(os.path.join(tmp, "model"))
            return export_model(model_dir, base_dir, **options).path


def _brings_loss(model) -> bool:
    """Whether `model` computes its own loss (overrides `keras.Model.compute_loss`)."""
    return type(model).compute_loss is not keras.Model.compute_loss


def _fingerprint(rows: list) -> str:
    """A digest of the training rows, targets included (a resumed fit must see the same
    data)."""
    digest = hashlib.sha256()
    for row in rows:
        digest.update(json.dumps(dataclasses.asdict(row), default=str).encode("utf-8"))
    return digest.hexdigest()


def _describe(optimizer) -> dict:
    """The optimizer's class and settings (not its generated name), as JSON values."""
    config = {k: v for k, v in optimizer.get_config().items() if k != "name"}
    return json.loads(json.dumps({type(optimizer).__name__: config}, default=str))


def _pair_of(validation_data) -> tuple:
    if not isinstance(validation_data, (tuple, list)) or len(validation_data) != 2:
        raise ValueError("validation_data is (texts, targets)")
    return tuple(validation_data)


def _strings(value: np.ndarray) -> np.ndarray:
    if value.dtype == object:
        return np.vectorize(lambda b: b.decode("utf-8") if isinstance(b, bytes) else b,
                            otypes=[object])(value).astype(str)
    return value
