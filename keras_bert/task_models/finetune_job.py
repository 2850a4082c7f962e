"""A complete fine-tuning run: task data, task model, BERT's optimizer, `model.fit`, metrics.

`run_finetuning(FinetuneJob(...))` is what `keras-bert finetune` calls: a thin layer over
the task model a Python user holds (`keras_bert.TextClassifier`, ...: `task_model_class`).
The task kind (`keras_bert.tasks.registry`) reads the files into the rows the model's
`rows(x, y)` gives; the model's `for_job` builds it with the job's settings, its `fit_rows`
trains (the loop of its `fit`), `score` evaluates, `tune_on` keeps what the kind tunes on
the evaluation and `save` writes the model directory. Tasks:

* `classify`: sentence (pair) classification from CSV/TSV/JSONL; metric: accuracy.
* `multilabel`: any number of labels per text (pair); per-label thresholds tuned on the
  eval set; metrics: micro / macro / per-label F1.
* `regress`: sentence (pair) regression; metrics: Pearson, Spearman, MSE.
* `tag`: token classification from CoNLL files; metrics: entity precision/recall/F1.
* `squad`: extractive QA from SQuAD JSON; metrics: exact match and F1.

The defaults are the BERT paper's fine-tuning recipe: AdamW (`FitSchedule`) with 10%
linear warmup then linear decay, learning rate 5e-5, batch 32, 3 epochs, dropout 0.1. The
output directory gets `model/` (a fine-tuned model directory, see
`keras_bert.checkpoints.task_dir`; reload it with `load_task_model`), `metrics.json`,
`history.json` and `curves.png`.
"""

from __future__ import annotations

import dataclasses
import os
import sys
import time

from keras_bert.checkpoints.task_dir import (
    TaskModel,
    load_task_model,
    save_task_model,
)
from keras_bert.config import DEFAULT_SEQ_LENGTH, default_doc_stride
from keras_bert.task_models import task_model_class
from keras_bert.tasks.registry import FINETUNE_TASKS, task_kind
from keras_bert.text.sentence_windows import LongTextReading
from keras_bert.training.checkpointing import ResumableCheckpoint
from keras_bert.training.fit_schedule import FitSchedule
from keras_bert.training.json_output import finite, write_json
from keras_bert.training.plots import plot_history
from keras_bert.training.precision import precision_line, resolve_precision
from keras_bert.training.resume import HistoryFile, job_arguments

TASKS = FINETUNE_TASKS
_NOT_ARGUMENTS = ("out", "verbose", "callbacks", "checkpoint_steps", "checkpoint_minutes",
                  "precision_note")


@dataclasses.dataclass
class FinetuneJob:
    """Everything a fine-tuning run needs (BERT's fine-tuning defaults)."""

    task: str  # classify, multilabel, regress, tag, squad
    model: str  # a keras_bert model directory (converted or pretrained)
    train: str
    out: str
    eval: str | None = None
    text_column: str = "text"
    text_b_column: str | None = None
    label_column: str = "label"
    seq_length: int = DEFAULT_SEQ_LENGTH
    rules: str | None = None  # tokenizer rules; None: the model's own
    epochs: int = 3
    batch_size: int = 32
    learning_rate: float = 5e-5
    warmup_fraction: float = 0.1
    weight_decay: float = 0.01
    dropout: float | None = None  # None: the encoder's hidden_dropout
    pooling: str = "pooled"  # classify/multilabel/regress: pooled, cls or mean
    max_query_length: int | None = None  # squad; None: min(64, seq_length // 2)
    doc_stride: int | None = None  # windows (squad, tag, long texts); None: default_doc_stride
    long_text: str = "truncate"  # classify/multilabel/regress: truncate or windows
    max_windows: int = 8  # windows read per text (long_text windows)
    window_aggregate: str = "mean"  # classify/multilabel windows' logits: mean, max, first
    precision: str = "auto"  # auto: for the hardware (training/precision.py)
    validate_each_epoch: bool = True  # eval loss (and accuracy) after every epoch
    checkpoint_steps: int | None = None  # save every N steps (besides every epoch end)
    checkpoint_minutes: float = 10.0  # save after a step ending this long after the last
    seed: int = 12345
    verbose: int = 1
    callbacks: list = dataclasses.field(default_factory=list)
    precision_note: str = dataclasses.field(default="", init=False, repr=False)

    def __post_init__(self):
        if self.task not in TASKS:
            raise ValueError(f"task must be one of {TASKS}, got {self.task!r}")
        asked, self.precision = self.precision, resolve_precision(self.precision)
        self.precision_note = precision_line(asked, self.precision)
        if self.epochs < 1 or self.batch_size < 1 or self.seq_length < 3:
            raise ValueError("epochs and batch_size must be positive and seq_length at least 3")
        if not 0.0 <= self.warmup_fraction < 1.0:
            raise ValueError(f"warmup_fraction must be in [0, 1), got {self.warmup_fraction}")
        if self.max_query_length is None:
            self.max_query_length = min(64, self.seq_length // 2)
        if self.doc_stride is None:
            self.doc_stride = default_doc_stride(self.seq_length)
        _ = self.reading  # checks the long-text settings now

    @property
    def reading(self) -> LongTextReading:
        """How sentence-level tasks read texts longer than `seq_length`."""
        return LongTextReading(self.long_text, self.doc_stride, self.max_windows,
                               self.window_aggregate)


def finetuning_model(job: FinetuneJob):
    """`(model, train rows, eval rows or None)`: the untrained task model `job` fits (the
    kind's `keras_bert` task model, `TextTaskModel.for_job`) and the rows of its files."""
    kind = task_kind(job.task)
    train = kind.read_rows(job.train, job)
    model = task_model_class(job.task).for_job(job, train)
    evaluation = kind.read_rows(job.eval, job, model.labels) if job.eval else None
    model.compile(schedule=FitSchedule(job.learning_rate, job.warmup_fraction,
                                       job.weight_decay))
    return model, train, evaluation


def compile_task_model(model, kind: str, optimizer) -> None:
    """Compiles `model` with the loss and Keras metrics of the task kind `kind`."""
    task_kind(kind).compile(model, optimizer)


def eval_line(task: str, evaluation: dict) -> str:
    """The log line of an evaluation: its numbers, and the labels it found unlearned
    (multilabel: left at a text-blind threshold)."""
    line = f"eval {task}: " + ", ".join(f"{k}={v:.4f}" for k, v in evaluation.items()
                                        if isinstance(v, float))
    if evaluation.get("unlearned_labels"):
        line += ("; unlearned labels (F1 no better than text-blind, now predicted for every "
                 "text): " + ", ".join(evaluation["unlearned_labels"]))
    return line


def run_finetuning(job: FinetuneJob) -> dict:
    """Fine-tunes `job.model` on `job.train`, evaluates on `job.eval` and writes `job.out`.

    Returns the metrics written to `metrics.json`: `task`, `eval` (the task metrics, when
    there is an eval file), `train` (the last epoch's logs), `train_examples` and
    `eval_examples` (the files' texts, sentences or questions), `train_windows` (the packed
    rows an epoch trains on: one per text, or per window of a long one), `epochs`, `steps`,
    `seconds`.
    """
    start = time.perf_counter()
    os.makedirs(job.out, exist_ok=True)
    checkpoint = ResumableCheckpoint(
        os.path.join(job.out, "checkpoints"), every_steps=job.checkpoint_steps,
        every_seconds=60.0 * job.checkpoint_minutes, arguments=job_arguments(
            job, files=("model", "train", "eval"), ignore=_NOT_ARGUMENTS))
    done = checkpoint.completed()
    if done is not None:
        if job.verbose:
            print(f"fine-tuning in {job.out} is complete ({done['steps']} steps); nothing to "
                  "do. Use another --out to train again.", flush=True)
        return done
    model, train, evaluation = finetuning_model(job)
    if job.verbose:  # once the inputs are read: a bad input ends with its one error line
        print(job.precision_note, file=sys.stderr, flush=True)
    history_path = os.path.join(job.out, "history.json")
    history = HistoryFile(history_path)
    _, windows = model.fit_rows(
        train, batch_size=job.batch_size, epochs=job.epochs, seed=job.seed,
        validation_rows=evaluation if job.validate_each_epoch else None,
        checkpoint=checkpoint, callbacks=[history, *job.callbacks], verbose=job.verbose)
    logs = history.logs(job.epochs)
    result = {"task": job.task, "train_examples": len(train), "train_windows": windows,
              "eval_examples": 0 if evaluation is None else len(evaluation),
              "epochs": job.epochs, "steps": int(model.optimizer.iterations.numpy()),
              "train": {k: v[-1] for k, v in logs.items() if not k.startswith("val_")}}
    if evaluation is not None:
        result["eval"] = model.score(evaluation, job.batch_size, train=train)
        if job.verbose:
            print(eval_line(job.task, result["eval"]), flush=True)
        model.tune_on(result["eval"])
    model.save(os.path.join(job.out, "model"), metadata={
        "finetuned_from": os.path.abspath(job.model), "train_file": os.path.abspath(job.train),
        "eval": finite(result.get("eval"))})
    write_json(history_path, logs)
    majority = (result.get("eval") or {}).get("majority_baseline")
    plot_history(logs, os.path.join(job.out, "curves.png"), title=f"fine-tuning: {job.task}",
                 baselines={"accuracy": (majority, "majority class (eval)")} if majority
                 else None)
    result["seconds"] = round(time.perf_counter() - start, 1)
    write_json(os.path.join(job.out, "metrics.json"), result)
    checkpoint.finish(finite(result))
    return finite(result)


__all__ = ["TASKS", "FinetuneJob", "TaskModel", "compile_task_model", "finetuning_model",
           "load_task_model", "run_finetuning", "save_task_model"]
