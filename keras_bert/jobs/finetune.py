"""`keras-bert finetune`: a complete fine-tuning run over the model a Python user holds.

`run_finetuning(FinetuneJob(...))` is what the command calls: the kind's class
(`keras_bert.tasks.registry`) reads the files (`read_rows`), builds the model with the
job's settings (`from_settings`: `from_pretrained` with a new head), trains it with the loop
of its `fit` (`fit_rows`), evaluates it as its `evaluate` does (`score_rows`), keeps what
the kind tunes on the evaluation (`tune_on`) and `save`s it. Kinds: `classify`, `multilabel`,
`regress` (CSV/TSV/JSONL), `tag` (CoNLL), `squad` (SQuAD JSON).

The defaults are the BERT paper's fine-tuning recipe: AdamW (`FitSchedule`) with 10% linear
warmup then linear decay, learning rate 5e-5, batch 32, 3 epochs, dropout 0.1. The output
directory gets `model/` (the fine-tuned model directory: `TextTaskModel.load` reads it),
`metrics.json`, `history.json` and `curves.png`. `FinetuneJob`'s fields are the command's
options (`keras_bert.cli.options.add_job_options`): each setting is written once, here.
"""

from __future__ import annotations

import dataclasses
import os
import sys
import time

from keras_bert.config import (
    AGGREGATIONS,
    DEFAULT_SEQ_LENGTH,
    POOLING_MODES,
    READING_MODES,
    LongTextReading,
    default_doc_stride,
    default_max_query_length,
)
from keras_bert.jobs.options import (
    DISTRIBUTION_HELP,
    HOST_FIELDS,
    RULES_NAMES,
    HostOptions,
    option,
    with_fetched_checkpoint,
)
from keras_bert.tasks.registry import FINETUNE_KINDS, task_class
from keras_bert.training.precision import (
    PRECISION_CHOICES,
    PRECISION_HELP,
    precision_line,
    resolve_precision,
)

# `distribution` too: a run resumes on another number of devices (the same updates).
_NOT_ARGUMENTS = ("out", "verbose", "callbacks", "checkpoint_steps", "checkpoint_minutes",
                  "distribution", *HOST_FIELDS,
                  "precision_note")


@dataclasses.dataclass
class FinetuneJob(HostOptions):
    """Everything a fine-tuning run needs (BERT's fine-tuning defaults)."""

    task: str = option(help="the task kind", choices=FINETUNE_KINDS)
    model: str = option(help="the model to start from: a keras_bert model directory "
                             "(`convert`, `pretrain`), any checkpoint `convert` reads, a hub "
                             "id (hf://ORG/NAME[@REVISION], kaggle://OWNER/MODEL/FRAMEWORK/"
                             "VARIATION[/VERSION]) or random-NAME: random weights of preset "
                             "size NAME (random-tiny ... random-large)")
    train: str = option(help="training file: CSV, TSV or JSONL (classify, multilabel, "
                             "regress), CoNLL (tag), SQuAD JSON (squad)")
    out: str = option(help="output directory")
    eval: str | None = option(None, "evaluation file (its labels must be in the training "
                                    "set's)")
    text_column: str = option("text", "the text column")
    text_b_column: str | None = option(None, "the second text of sentence-pair tasks")
    label_column: str = option("label", "the label column")
    seq_length: int = option(DEFAULT_SEQ_LENGTH, "training sequence length")
    rules: str | None = option(None, "tokenizer rules (google or huggingface; default: the "
                                     "model's own)", choices=RULES_NAMES)
    epochs: int = option(3, "epochs")
    batch_size: int = option(32, "batch size")
    learning_rate: float = option(5e-5, "peak learning rate of AdamW")
    warmup_fraction: float = option(0.1, "share of the steps of linear warmup")
    weight_decay: float = option(0.01, "AdamW's weight decay (not on LayerNorm and biases)")
    dropout: float | None = option(None, "dropout before the head in training (default: "
                                         "the encoder's, 0.1; squad: none, as BERT's)")
    pooling: str = option("pooled", "classify/multilabel/regress: the sequence vector under "
                                    "the head", choices=POOLING_MODES)
    max_query_length: int | None = option(None, "squad: question wordpieces kept (default "
                                                "min(64, seq/2))")
    doc_stride: int | None = option(None, "squad, tag, --long-text windows: how far windows "
                                          "over long texts advance (default min(128, seq/2))")
    long_text: str = option("truncate", "classify/multilabel/regress: a text longer than "
                                        "--seq-length is truncated (BERT's way) or read in "
                                        "windows whose outputs are aggregated, in training, "
                                        "evaluation, predict and the export",
                            choices=READING_MODES)
    max_windows: int = option(8, "--long-text windows: the most windows read per text")
    window_aggregate: str = option("mean", "--long-text windows: how classify/multilabel "
                                           "combine the windows' logits (regress: always the "
                                           "mean)", choices=AGGREGATIONS)
    length_buckets: str = option("auto", "each batch is cut to its longest row: auto "
                                         "(rounded up to the export's buckets, 16, 32, ..., "
                                         "where steps compile per shape: XLA, JAX; else "
                                         "not rounded), longest (never rounded), full (every "
                                         "batch at --seq-length, the static shapes a TPU "
                                         "wants) or the lengths, comma-separated, ending at "
                                         "--seq-length")
    group_by_length: int = option(0, "batch rows of similar length together, sorted within "
                                     "seeded chunks of this many batches (0: off; Hugging "
                                     "Face's group_by_length uses 50)")
    precision: str = option("auto", PRECISION_HELP, choices=PRECISION_CHOICES)
    distribution: str = option("auto", DISTRIBUTION_HELP, metavar="KIND")
    validate_each_epoch: bool = option(True, cli=False)  # eval loss after every epoch
    checkpoint_steps: int | None = option(None, "also checkpoint every N steps (default: only "
                                                "by time and at epoch ends)")
    checkpoint_minutes: float = option(10.0, "checkpoint after the first step that ends this "
                                             "many minutes after the last checkpoint; a "
                                             "killed run started again with the same command "
                                             "resumes from its last checkpoint")
    seed: int = option(12345, "seeds the new head and the batch order")
    verbose: int = option(1, cli=False)  # the command's --quiet: 0
    callbacks: list = option(cli=False, default_factory=list)
    precision_note: str = dataclasses.field(default="", init=False, repr=False)
    def __post_init__(self):
        # Many hosts: joined before anything (the precision, the distribution) lists the
        # devices; JAX fixes them then.
        self.join_hosts()
        if self.task not in FINETUNE_KINDS:
            raise ValueError(f"task must be one of {FINETUNE_KINDS}, got {self.task!r}")
        asked, self.precision = self.precision, resolve_precision(self.precision)
        self.precision_note = precision_line(asked, self.precision)
        if self.epochs < 1 or self.batch_size < 1 or self.seq_length < 3:
            raise ValueError("epochs and batch_size must be positive and seq_length at least 3")
        if not 0.0 <= self.warmup_fraction < 1.0:
            raise ValueError(f"warmup_fraction must be in [0, 1), got {self.warmup_fraction}")
        if self.max_query_length is None:
            self.max_query_length = default_max_query_length(self.seq_length)
        if self.doc_stride is None:
            self.doc_stride = default_doc_stride(self.seq_length)
        from keras_bert.training.distribution import check_batch_size, get_distribution

        # A bad --distribution, or a batch it does not split, before any work.
        check_batch_size(get_distribution(self.distribution), self.batch_size)
        _ = self.reading  # checks the long-text settings now
        self.batching.buckets(self.seq_length)  # and the batches' lengths

    @property
    def batching(self):
        """How the training batches are shaped (`keras_bert.tasks.batches.Batching`)."""
        from keras_bert.tasks.batches import Batching

        buckets = self.length_buckets
        if buckets not in ("auto", "longest", "full"):
            try:
                buckets = tuple(int(b) for b in buckets.split(","))
            except ValueError:
                raise ValueError(f"--length-buckets is auto, longest, full or comma-separated "
                                 f"lengths, got {self.length_buckets!r}") from None
        return Batching(buckets, self.group_by_length)

    @property
    def reading(self) -> LongTextReading:
        """How sentence-level tasks read texts longer than `seq_length`."""
        return LongTextReading(self.long_text, self.doc_stride, self.max_windows,
                               self.window_aggregate)


def task_settings(job: FinetuneJob):
    """The typed settings `job`'s kind builds its new head with and reads its files in
    (`keras_bert.tasks.settings.TaskSettings`): the tasks layer reads those, not the job."""
    from keras_bert.tasks.settings import Columns, TaskSettings

    return TaskSettings(
        source=job.model, seq_length=job.seq_length, rules=job.rules,
        precision=job.precision, seed=job.seed, dropout=job.dropout,
        columns=Columns(text=job.text_column, text_b=job.text_b_column,
                        label=job.label_column),
        pooling=job.pooling, reading=job.reading, doc_stride=job.doc_stride,
        max_query_length=job.max_query_length)


def finetuning_model(job: FinetuneJob):
    """`(model, train rows, eval rows or None)`: the untrained model `job` fits (its kind's
    class, `from_settings`) and the rows of its files."""
    from keras_bert.training.distribution import built_in
    from keras_bert.training.fit_schedule import FitSchedule

    model_class, settings = task_class(job.task), task_settings(job)
    train = model_class.read_rows(job.train, settings.columns)
    # JAX: laid out as its variables are made, as `from_pretrained(distribution=)` does.
    model = built_in(job.distribution,
                     lambda: model_class.from_settings(settings, train, job.train))
    evaluation = (model_class.read_rows(job.eval, settings.columns, model.labels)
                  if job.eval else None)
    model.compile(schedule=FitSchedule(job.learning_rate, job.warmup_fraction,
                                       job.weight_decay))
    return model, train, evaluation


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
    from keras_bert.training.backends import is_chief
    from keras_bert.training.checkpointing import ResumableCheckpoint
    from keras_bert.training.json_output import finite
    from keras_bert.training.resume import HistoryFile, job_arguments

    start = time.perf_counter()
    job = with_fetched_checkpoint(job, "model")
    if is_chief():
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
        checkpoint=checkpoint, batching=job.batching, callbacks=[history, *job.callbacks],
        verbose=job.verbose)
    logs = history.logs(job.epochs)
    result = {"task": job.task, "train_examples": len(train), "train_windows": windows,
              "eval_examples": 0 if evaluation is None else len(evaluation),
              "epochs": job.epochs, "steps": int(model.optimizer.iterations.numpy()),
              "train": {k: v[-1] for k, v in logs.items() if not k.startswith("val_")}}
    if evaluation is not None:
        result["eval"] = model.score_rows(evaluation, job.batch_size, train)
        if job.verbose:
            print(eval_line(job.task, result["eval"]), flush=True)
        model.tune_on(result["eval"])
    result["seconds"] = round(time.perf_counter() - start, 1)
    if is_chief():  # one process writes (many hosts: process 0)
        _write_outputs(job, model, result, logs)
    checkpoint.finish(finite(result))
    return finite(result)


def _write_outputs(job: FinetuneJob, model, result: dict, logs: dict) -> None:
    """`model/`, `history.json`, `curves.png` and `metrics.json` in `job.out`."""
    from keras_bert.training.json_output import finite, write_json
    from keras_bert.training.plots import plot_history

    model.save(os.path.join(job.out, "model"), metadata={
        "finetuned_from": os.path.abspath(job.model), "train_file": os.path.abspath(job.train),
        "eval": finite(result.get("eval"))})
    write_json(os.path.join(job.out, "history.json"), logs)
    majority = (result.get("eval") or {}).get("majority_baseline")
    plot_history(logs, os.path.join(job.out, "curves.png"), title=f"fine-tuning: {job.task}",
                 baselines={"accuracy": (majority, "majority class (eval)")} if majority
                 else None)
    write_json(os.path.join(job.out, "metrics.json"), result)


__all__ = ["FinetuneJob", "eval_line", "finetuning_model", "run_finetuning",
           "task_settings"]
