"""A complete fine-tuning run: task data, task model, BERT's optimizer, `model.fit`, metrics.

`run_finetuning(FinetuneJob(...))` is what `keras-bert finetune` calls. Tasks:

* `classify`: sentence (pair) classification from CSV/TSV/JSONL; metric: accuracy.
* `regress`: sentence (pair) regression; metrics: Pearson, Spearman, MSE.
* `tag`: token classification from CoNLL files; metrics: entity precision/recall/F1.
* `squad`: extractive QA from SQuAD JSON; metrics: exact match and F1.

The defaults are the BERT paper's fine-tuning recipe: AdamW (`create_optimizer`) with 10%
linear warmup then linear decay, learning rate 5e-5, batch 32, 3 epochs, dropout 0.1. The
output directory gets `model/` (a fine-tuned model directory, see
`keras_bert.checkpoints.task_dir`; reload it with `load_task_model`), `metrics.json`,
`history.json` and `curves.png`.
"""

from __future__ import annotations

import dataclasses
import json
import math
import os
import time
from collections.abc import Callable

import keras
import numpy as np
import tensorflow as tf

from keras_bert.checkpoints.model_dir import ModelDir, load_model_dir
from keras_bert.checkpoints.task_dir import (
    TaskModel,
    build_task_model,
    load_task_model,
    save_task_model,
)
from keras_bert.tasks import conll, metrics, readers, squad
from keras_bert.tasks.labels import LabelVocab
from keras_bert.text.preprocessor import BertPreprocessor
from keras_bert.training.optimizer import create_optimizer
from keras_bert.training.plots import plot_history
from keras_bert.training.precision import PRECISIONS

TASKS = ("classify", "regress", "tag", "squad")


@dataclasses.dataclass
class FinetuneJob:
    """Everything a fine-tuning run needs (BERT's fine-tuning defaults)."""

    task: str  # classify, regress, tag, squad
    model: str  # a keras_bert model directory (converted or pretrained)
    train: str
    out: str
    eval: str | None = None
    text_column: str = "text"
    text_b_column: str | None = None
    label_column: str = "label"
    seq_length: int = 128
    epochs: int = 3
    batch_size: int = 32
    learning_rate: float = 5e-5
    warmup_fraction: float = 0.1
    weight_decay: float = 0.01
    dropout: float | None = None  # None: the encoder's hidden_dropout
    pooling: str = "pooled"  # classify/regress: pooled, cls or mean
    max_query_length: int | None = None  # squad; None: min(64, seq_length // 2)
    doc_stride: int | None = None  # squad; None: min(128, seq_length // 2)
    precision: str = "float32"
    validate_each_epoch: bool = True  # eval loss (and accuracy) after every epoch
    seed: int = 12345
    verbose: int = 1
    callbacks: list = dataclasses.field(default_factory=list)

    def __post_init__(self):
        if self.task not in TASKS:
            raise ValueError(f"task must be one of {TASKS}, got {self.task!r}")
        if self.precision not in PRECISIONS:
            raise ValueError(f"precision must be one of {PRECISIONS}, got {self.precision!r}")
        if self.epochs < 1 or self.batch_size < 1 or self.seq_length < 3:
            raise ValueError("epochs and batch_size must be positive and seq_length at least 3")
        if not 0.0 <= self.warmup_fraction < 1.0:
            raise ValueError(f"warmup_fraction must be in [0, 1), got {self.warmup_fraction}")
        if self.max_query_length is None:
            self.max_query_length = min(64, self.seq_length // 2)
        if self.doc_stride is None:
            self.doc_stride = min(128, self.seq_length // 2)


@dataclasses.dataclass
class TaskData:
    """A task's datasets and its evaluation.

    `train`: shuffled `(inputs, targets)` batches; `eval`: `(inputs, targets)` batches in
    order (validation loss) or `None`; `evaluate(model)`: the task metrics on the eval set;
    `labels`: the label vocabulary (classify, tag); `task`: the task block of the model dir.
    """

    train: tf.data.Dataset
    num_train: int
    eval: tf.data.Dataset | None
    num_eval: int
    evaluate: Callable | None
    labels: LabelVocab | None
    task: dict


def sentence_data(job: FinetuneJob, preprocessor) -> TaskData:
    """Classification or regression data from CSV/TSV/JSONL files (`job.task` decides)."""
    kind = readers.REGRESSION if job.task == "regress" else readers.CLASSIFICATION
    columns = dict(text_column=job.text_column, text_b_column=job.text_b_column,
                   label_column=job.label_column, task=kind)
    train = readers.read_examples(job.train, **columns)
    labels = None if job.task == "regress" else LabelVocab.from_labels(
        ex.label for ex in train)
    batching = dict(batch_size=job.batch_size)

    def dataset(examples, **kwargs):
        if labels is None:
            return readers.regression_dataset(examples, preprocessor, **kwargs)
        return readers.classification_dataset(examples, preprocessor, labels, **kwargs)

    train_ds = dataset(train, shuffle_buffer=len(train), seed=job.seed, **batching)
    task = {"kind": job.task, "seq_length": job.seq_length, "pair": job.text_b_column is not None,
            "text_column": job.text_column, "text_b_column": job.text_b_column,
            "pooling": job.pooling}
    if labels is not None:
        task["num_classes"] = len(labels)
    if not job.eval:
        return TaskData(train_ds, len(train), None, 0, None, labels, task)
    evaluation = readers.read_examples(job.eval, labels=labels, **columns)
    eval_ds = dataset(evaluation, **batching)
    inputs_ds = eval_ds.map(lambda x, y: x)

    def evaluate(model) -> dict:
        logits = model.predict(inputs_ds, verbose=0)
        if labels is not None:
            gold = readers.encode_labels(evaluation, labels)
            return {"accuracy": metrics.accuracy(gold, np.argmax(logits, axis=-1))}
        gold = readers.regression_targets(evaluation).astype(np.float64)
        scores = np.asarray(logits, np.float64).reshape(-1)
        return {"pearson": metrics.pearson(gold, scores),
                "spearman": metrics.spearman(gold, scores),
                "mse": float(np.mean((gold - scores) ** 2))}

    return TaskData(train_ds, len(train), eval_ds, len(evaluation), evaluate, labels, task)


def _encode_tagged(path, tokenizer, sentences, labels, seq_length):
    try:
        return conll.encode_tagged(tokenizer, sentences, labels, seq_length)
    except ValueError as e:
        raise ValueError(f"{path}: {e}") from None


def tagging_data(job: FinetuneJob, preprocessor) -> TaskData:
    """Token classification data from CoNLL files."""
    tokenizer = preprocessor.tokenizer
    train = conll.read_conll(job.train)
    labels = conll.tag_vocab(train)
    features = _encode_tagged(job.train, tokenizer, train, labels, job.seq_length)
    train_ds = conll.tagging_dataset(features, job.batch_size, shuffle_buffer=len(train),
                                     seed=job.seed)
    task = {"kind": "tag", "seq_length": job.seq_length, "num_classes": len(labels)}
    if not job.eval:
        return TaskData(train_ds, len(train), None, 0, None, labels, task)
    evaluation = conll.read_conll(job.eval)
    eval_features = _encode_tagged(job.eval, tokenizer, evaluation, labels, job.seq_length)
    eval_ds = conll.tagging_dataset(eval_features, job.batch_size)

    def evaluate(model) -> dict:
        logits = model.predict(eval_ds.map(lambda x, y: x), verbose=0)
        predicted = conll.predictions_to_tags(np.argmax(logits, axis=-1), eval_features,
                                              labels)
        result = metrics.entity_f1([s.tags for s in evaluation], predicted)
        return {"precision": result["precision"], "recall": result["recall"],
                "f1": result["f1"], "per_type": result["per_type"]}

    return TaskData(train_ds, len(train), eval_ds, len(evaluation), evaluate, labels, task)


def squad_data(job: FinetuneJob, preprocessor) -> TaskData:
    """Extractive QA data from SQuAD v1.1 / v2.0 JSON files (one feature per window)."""
    tokenizer = preprocessor.tokenizer
    window = dict(seq_length=job.seq_length, max_query_length=job.max_query_length,
                  doc_stride=job.doc_stride)
    train = squad.read_squad(job.train)
    features = squad.squad_features(train, tokenizer, **window)
    train_ds = squad.squad_dataset(features, job.batch_size, training=True,
                                   shuffle_buffer=len(features), seed=job.seed)
    version_2 = any(ex.is_impossible for ex in train)
    task = {"kind": "squad", **window, "version_2": version_2}
    if not job.eval:
        return TaskData(train_ds, len(features), None, 0, None, None, task)
    evaluation = squad.read_squad(job.eval)
    eval_features = squad.squad_features(evaluation, tokenizer, **window)
    eval_ds = squad.squad_dataset(eval_features, job.batch_size, training=True)

    def evaluate(model) -> dict:
        logits = model.predict(squad.squad_dataset(eval_features, job.batch_size), verbose=0)
        results = squad.decode_predictions(evaluation, eval_features, logits["start_logits"],
                                           logits["end_logits"], allow_no_answer=version_2)
        return metrics.squad_em_f1(squad.predicted_texts(results), evaluation)

    return TaskData(train_ds, len(features), eval_ds, len(eval_features), evaluate, None, task)


def task_data(job: FinetuneJob, preprocessor) -> TaskData:
    """The `TaskData` of `job.task`, featurised by the model's `preprocessor`."""
    if job.task in ("classify", "regress"):
        return sentence_data(job, preprocessor)
    if job.task == "tag":
        return tagging_data(job, preprocessor)
    return squad_data(job, preprocessor)


def finetuning_inputs(job: FinetuneJob) -> tuple[ModelDir, BertPreprocessor, TaskData]:
    """`(source model dir, its preprocessor at the job's length, the task data)`: what the
    model is fitted on, built by the model's own `BertPreprocessor`."""
    source = load_model_dir(job.model)
    if job.seq_length > source.config.max_position_embeddings:
        raise ValueError(f"seq_length {job.seq_length} exceeds the model's "
                         f"max_position_embeddings {source.config.max_position_embeddings}")
    preprocessor = source.preprocessor().with_length(job.seq_length)
    return source, preprocessor, task_data(job, preprocessor)


def compile_task_model(model, kind: str, optimizer) -> None:
    """Compiles `model` with the task's loss and Keras metrics (eager-free, no XLA)."""
    if kind == "classify":
        model.compile(optimizer=optimizer,
                      loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True),
                      metrics=[keras.metrics.SparseCategoricalAccuracy(name="accuracy")],
                      jit_compile=False)
    elif kind == "regress":
        model.compile(optimizer=optimizer, loss=keras.losses.MeanSquaredError(),
                      jit_compile=False)
    elif kind == "tag":
        model.compile(optimizer=optimizer,
                      loss=keras.losses.SparseCategoricalCrossentropy(
                          from_logits=True, ignore_class=conll.IGNORE_LABEL),
                      jit_compile=False)
    elif kind == "squad":
        model.compile(optimizer=optimizer, jit_compile=False)  # BertSpanQA brings its loss
    else:
        raise ValueError(f"Unknown task {kind!r}; expected one of {TASKS}")


def finite(value):
    """`value` with NaN/inf floats replaced by None, recursively (strict JSON)."""
    if isinstance(value, dict):
        return {k: finite(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [finite(v) for v in value]
    if isinstance(value, (float, np.floating)):
        return float(value) if math.isfinite(value) else None
    if isinstance(value, np.integer):
        return int(value)
    return value


def write_json(path: str, value) -> None:
    """Writes `value` as indented strict JSON."""
    with open(path, "w", encoding="utf-8") as f:
        json.dump(finite(value), f, indent=2)
        f.write("\n")


def run_finetuning(job: FinetuneJob) -> dict:
    """Fine-tunes `job.model` on `job.train`, evaluates on `job.eval` and writes `job.out`.

    Returns the metrics written to `metrics.json`: `task`, `eval` (the task metrics, when
    there is an eval file), `train` (the last epoch's logs), `train_examples`,
    `eval_examples`, `epochs`, `steps`, `seconds`.
    """
    start = time.perf_counter()
    os.makedirs(job.out, exist_ok=True)
    keras.utils.set_random_seed(job.seed)
    source, preprocessor, data = finetuning_inputs(job)
    task = {**data.task, "dropout": job.dropout}
    model = build_task_model(job.task, source.load_encoder(dtype=job.precision), task,
                             data.labels)
    steps_per_epoch = math.ceil(data.num_train / job.batch_size)
    total_steps = steps_per_epoch * job.epochs
    optimizer = create_optimizer(job.learning_rate, total_steps,
                                 int(job.warmup_fraction * total_steps), job.weight_decay)
    compile_task_model(model, job.task, optimizer)
    validation = data.eval if job.validate_each_epoch else None
    history = model.fit(data.train, epochs=job.epochs, validation_data=validation,
                        callbacks=list(job.callbacks), verbose=job.verbose, shuffle=False)
    logs = {k: [float(v) for v in values] for k, values in history.history.items()}
    result = {"task": job.task, "train_examples": data.num_train,
              "eval_examples": data.num_eval, "epochs": job.epochs,
              "steps": int(model.optimizer.iterations.numpy()),
              "train": {k: v[-1] for k, v in logs.items() if not k.startswith("val_")}}
    if data.evaluate is not None:
        result["eval"] = data.evaluate(model)
        if job.verbose:
            print(f"eval {job.task}: " + ", ".join(
                f"{k}={v:.4f}" for k, v in result["eval"].items() if isinstance(v, float)))
    save_task_model(model, os.path.join(job.out, "model"), source.vocab_file,
                    source.lower_case, task, data.labels,
                    metadata={"finetuned_from": source.path,
                              "train_file": os.path.abspath(job.train),
                              "eval": finite(result.get("eval"))},
                    preprocessor=preprocessor)
    write_json(os.path.join(job.out, "history.json"), logs)
    plot_history(logs, os.path.join(job.out, "curves.png"), title=f"fine-tuning: {job.task}")
    result["seconds"] = round(time.perf_counter() - start, 1)
    write_json(os.path.join(job.out, "metrics.json"), result)
    return finite(result)


__all__ = ["TASKS", "FinetuneJob", "TaskData", "TaskModel", "compile_task_model",
           "finetuning_inputs", "load_task_model", "run_finetuning", "save_task_model",
           "task_data"]
