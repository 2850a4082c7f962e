"""`keras-bert pretrain`: a complete pretraining run over the model a Python user holds.

`run_pretraining(PretrainJob(...))` is what the command calls. It builds the
`TextPretrainer` the job's flags describe (`pretraining_model`: `from_preset`,
`from_pretrained` for `--init`, `from_phase1` for `--phase2-from`), reads the job's data
(`pretraining_data`: the corpus files with a held-out share, or TFRecords) and runs the
model's own `fit` and `evaluate`, so the command and the Python class are one engine. The
job adds what a run on disk needs: its directories, the checkpoint that a killed run
started again with the same arguments resumes from (the data stream is a pure function of
the step), the run log, `metrics.json`, `history.json`, TensorBoard logs and the curves.
`optimizer="lamb"` and `accumulation_steps=K` (K micro-batches of `batch_size` per update)
are the large-batch recipe; `phase2_from=OUT` continues a finished run (weights and
optimizer state) as BERT's second phase (`keras_bert.pretraining.phases`).
"""

from __future__ import annotations

import dataclasses
import json
import os
import sys
import time
from typing import TYPE_CHECKING

from keras_bert.config import DEFAULT_SEQ_LENGTH, OPTIMIZERS
from keras_bert.jobs.options import (
    DISTRIBUTION_HELP,
    HOST_FIELDS,
    RULES_NAMES,
    HostOptions,
    option,
    with_fetched_checkpoint,
)
from keras_bert.training.backends import default_jit_compile
from keras_bert.training.precision import (
    AUTO,
    PRECISION_CHOICES,
    PRECISION_HELP,
    precision_line,
    resolve_precision,
)

if TYPE_CHECKING:  # annotations only: the module loads no TensorFlow (the CLI reads its fields)
    from keras_bert.pretraining.model import TextPretrainer

@dataclasses.dataclass
class PretrainJob(HostOptions):
    """Everything a pretraining run needs; the defaults train BERT-Tiny on the embedded corpus.
    Its fields are `keras-bert pretrain`'s options."""

    out: str = option(help="output directory")
    preset: str = option("tiny", "the model's size (random weights)", choices=(
        "tiny", "mini", "small", "medium", "base", "large"))
    corpus: list[str] | None = option(None, "text files (default: the embedded corpus)",
                                      nargs="+", group="data")
    tfrecords: str | None = option(None, "glob of create-pretraining-data files",
                                   group="data")
    corpus_format: str = option("auto", "how the corpus files are laid out", flag="--format",
                                choices=("auto", "sentences", "prose", "jsonl"))
    vocab: str | None = option(None, "vocab.txt (default: --init's, else the embedded 8k "
                                     "vocab)")
    lower_case: bool = option(True, "with --vocab: keep case and accents", flag="--cased")
    rules: str | None = option(None, "tokenizer rules (google or huggingface; default: "
                                     "--init's, else google)", choices=RULES_NAMES)
    init: str | None = option(None, "continue pretraining from a Google BERT release, a "
                                    "Hugging Face BertForPreTraining / BertForMaskedLM "
                                    "directory or a keras_bert model directory converted from "
                                    "one or written by pretrain (with their MLM / NSP heads; "
                                    "another keras_bert model directory gets new heads), or "
                                    "one of those as a hub id: hf://ORG/NAME[@REVISION], "
                                    "kaggle://OWNER/MODEL/FRAMEWORK/VARIATION[/VERSION]")
    phase2_from: str | None = option(
        None, "a finished pretrain run's --out directory: continue its model, vocabulary and "
              "optimizer state (moments and step count) under a new warmup + decay schedule "
              "of --steps, e.g. at the longer --seq-length and larger --max-predictions of "
              "BERT's phase 2 (128 -> 512, 20 -> 80); the same --optimizer; not with --init "
              "or --vocab", metavar="PHASE1_OUT")
    steps: int = option(2000, "training steps (default 2000: BERT-Tiny on the embedded corpus "
                              "usually learns NSP after ~1,200-1,600)")
    steps_per_epoch: int = option(200, "logging, evaluation and checkpoint interval: a killed "
                                       "run started again resumes from the last one (steps "
                                       "must be a multiple)")
    batch_size: int = option(32, "global batch size of one forward/backward pass (a "
                                 "micro-batch with --accumulation-steps)")
    seq_length: int = option(DEFAULT_SEQ_LENGTH, "sequence length")
    max_predictions: int = option(20, "masked positions per sequence at most")
    whole_word: bool = option(False, "mask whole words")
    learning_rate: float = option(3e-3, "peak learning rate (default 3e-3, for the tiny "
                                        "preset: at 5e-3 it stalls at the unigram baseline; "
                                        "BERT-base used 1e-4)")
    warmup_steps: int | None = option(None, "default: 10%% of --steps")
    weight_decay: float = option(0.01, cli=False)
    optimizer: str = option("adamw", "adamw (BERT's; default) or lamb (You et al. 2019, for "
                                     "large batches: layer-wise trust ratio; no decay or trust "
                                     "ratio on LayerNorm and biases)", choices=OPTIMIZERS)
    accumulation_steps: int = option(1, "average the gradients of K micro-batches of "
                                        "--batch-size into one update of K x batch-size "
                                        "examples (--steps and the schedule count updates)",
                                     metavar="K")
    nsp_loss_weight: float = option(1.0, "loss = MLM + this * NSP (the original: 1; on the "
                                         "embedded corpus a weight of 10 kept BERT-Tiny's NSP "
                                         "at the label prior)")
    precision: str = option("auto", PRECISION_HELP + "; --strategy tpu: mixed_bfloat16",
                            choices=PRECISION_CHOICES)
    strategy: str = option("auto", "distribution strategy", choices=(
        "auto", "default", "mirrored", "multi_worker", "tpu"))
    distribution: str = option("auto", DISTRIBUTION_HELP, metavar="KIND")
    jit_compile: bool | None = option(None, "XLA (default: on GPUs and TPUs, off on CPUs)")
    eval_fraction: float = option(0.15, cli=False)  # of the corpus documents (per file)
    eval_steps: int = option(20, cli=False)
    seed: int = option(12345, "seeds the model, the masks and the pairs")
    verbose: int = option(1, cli=False)
    callbacks: list = option(cli=False, default_factory=list)
    precision_note: str = dataclasses.field(default="", init=False, repr=False)

    def __post_init__(self):
        # Many hosts: joined before anything (the precision, the distribution) lists the
        # devices; JAX fixes them then.
        self.join_hosts()
        asked = self.precision
        if asked == AUTO and self.strategy == "tpu":
            self.precision = "mixed_bfloat16"  # the TPU system is not initialised yet
        self.precision = resolve_precision(self.precision)
        self.precision_note = precision_line(asked, self.precision, self.strategy)
        if self.jit_compile is None:  # resolved once, so that a resumed run compares it
            self.jit_compile = self.strategy == "tpu" or bool(default_jit_compile())
        if self.steps < 1 or self.steps_per_epoch < 1 or self.batch_size < 1:
            raise ValueError("steps, steps_per_epoch and batch_size must be positive")
        if self.steps % self.steps_per_epoch:
            raise ValueError(f"steps ({self.steps}) must be a multiple of steps_per_epoch "
                             f"({self.steps_per_epoch})")
        if self.corpus and self.tfrecords:
            raise ValueError("give a corpus or TFRecords, not both")
        if self.optimizer not in OPTIMIZERS:  # the command line's choices
            raise ValueError(f"optimizer must be one of {OPTIMIZERS}, got {self.optimizer!r}")
        from keras_bert.training.distribution import check_batch_size, get_distribution

        # A bad --distribution, or a batch it does not split, before any work.
        check_batch_size(get_distribution(self.distribution), self.batch_size)
        if self.accumulation_steps < 1:
            raise ValueError(f"accumulation_steps must be >= 1, got {self.accumulation_steps}")
        if self.phase2_from and (self.init or self.vocab):
            raise ValueError("phase2_from continues that run's model and vocabulary: give "
                             "no init or vocab with it")
        if self.phase2_from and os.path.abspath(self.out).startswith(
                os.path.join(os.path.abspath(self.phase2_from), "")):
            raise ValueError("give phase 2 an output directory outside phase 1's")


# `distribution` too: a run resumes on another number of devices (the same updates).
_NOT_ARGUMENTS = ("out", "verbose", "callbacks", "precision_note", "distribution",
                  *HOST_FIELDS)
# Arguments added after runs were checkpointed: left out at their defaults, so those resume.
_LATER_DEFAULTS = {"optimizer": "adamw", "accumulation_steps": 1, "phase2_from": None}


def _arguments(job: PretrainJob) -> dict:
    from keras_bert.training.resume import job_arguments

    arguments = job_arguments(job, files=("corpus", "tfrecords", "vocab", "init", "phase2_from"),
                              ignore=_NOT_ARGUMENTS)
    for name, default in _LATER_DEFAULTS.items():
        if arguments.get(name) == default:
            del arguments[name]
    return arguments


def pretraining_model(job: PretrainJob) -> TextPretrainer:
    """The compiled, untrained `TextPretrainer` of `job`, built under its distribution
    strategy. Phase 2's refusals (no finished run, too few positions, another optimizer)
    come here, before any data is read."""
    from keras_bert.pretraining.model import MaskingConfig, TextPretrainer
    from keras_bert.training.strategy import get_strategy

    common = {"seq_length": job.seq_length, "nsp_loss_weight": job.nsp_loss_weight,
              "rules": job.rules, "precision": job.precision, "seed": job.seed,
              "masking": MaskingConfig(max_predictions=job.max_predictions,
                                       whole_word=job.whole_word),
              "distribution": job.distribution}  # JAX: laid out as its variables are made
    with get_strategy(job.strategy).scope():  # the model's variables live in its scope
        if job.phase2_from:
            model = TextPretrainer.from_phase1(job.phase2_from, **common)
        elif job.init:  # a Google / Hugging Face checkpoint brings its pretraining heads too
            model = TextPretrainer.from_pretrained(job.init, vocab=job.vocab,
                                                   lower_case=job.lower_case, **common)
        else:
            model = TextPretrainer.from_preset(job.preset, vocab=job.vocab,
                                               lower_case=job.lower_case, **common)
    model.compile(job.optimizer, learning_rate=job.learning_rate,
                  warmup_steps=job.warmup_steps, weight_decay=job.weight_decay,
                  accumulation_steps=job.accumulation_steps, jit_compile=job.jit_compile)
    return model


def pretraining_data(job: PretrainJob) -> tuple:
    """`(training data, held-out data or None)` for `TextPretrainer.fit`: the documents of
    the corpus files (default: the embedded corpus) less `eval_fraction` of each file's,
    held out; or the TFRecords, whose first batches, read in order, are the held-out
    set."""
    from keras_bert.data.corpus import default_corpus_files, guess_format, read_documents
    from keras_bert.pretraining.evaluation import split_documents
    from keras_bert.pretraining.streams import PretrainingRecords

    if job.tfrecords:
        records = PretrainingRecords(job.tfrecords)
        return records, records
    sources = []  # the documents of each corpus file
    for path in job.corpus or default_corpus_files():
        fmt = guess_format(path) if job.corpus_format == "auto" else job.corpus_format
        sources.append(list(read_documents(path, fmt)))
    train, held_out = split_documents(sources, job.eval_fraction)
    return train, held_out if len(held_out) >= 2 else None


def run_pretraining(job: PretrainJob) -> dict:
    """Trains, evaluates and writes `job.out`: `model/` (a keras_bert model directory),
    `metrics.json`, `history.json`, `curves.png`, `logs/` (TensorBoard), `checkpoints/`."""
    import keras

    from keras_bert.training.backends import is_chief
    from keras_bert.training.checkpointing import ResumableCheckpoint
    from keras_bert.training.resume import HistoryFile

    start = time.perf_counter()
    job = with_fetched_checkpoint(job, "init")
    chief = is_chief()  # the one process that writes (many hosts: process 0)
    if chief:
        os.makedirs(job.out, exist_ok=True)
    # Checkpoints at epoch ends only: the stream's NSP pairs, masks and TFRecord shuffles
    # follow the state of the one iterator that makes them, and `fit_from_step` runs one
    # iterator only when it resumes at an epoch boundary (mid-epoch resumes take two).
    checkpoint = ResumableCheckpoint(
        os.path.join(job.out, "checkpoints"), every_steps=None, every_seconds=None,
        arguments=_arguments(job))
    done = checkpoint.completed()
    if done is not None:
        _say(job, f"pretraining in {job.out} is complete ({done['steps']} steps); nothing "
                  "to do. To train on from this model, use --init with its model/ directory, "
                  "or --phase2-from with this directory (weights and optimizer state).")
        return done
    model = pretraining_model(job)
    train, held_out = pretraining_data(job)
    if job.verbose:  # once the inputs are read: a bad input ends with its one error line
        print(job.precision_note, file=sys.stderr, flush=True)
        if job.accumulation_steps > 1:
            print(f"{job.accumulation_steps} micro-batches of {job.batch_size} per update: "
                  f"{job.accumulation_steps * job.batch_size} examples", file=sys.stderr,
                  flush=True)
    history = HistoryFile(os.path.join(job.out, "history.json"))
    epochs = job.steps // job.steps_per_epoch
    model.fit(train, batch_size=job.batch_size, epochs=epochs,
              steps_per_epoch=job.steps_per_epoch, validation_data=held_out,
              validation_steps=job.eval_steps, seed=job.seed, checkpoint=checkpoint,
              callbacks=[history, checkpoint,  # the epoch's logs are on disk before its state
                         *([keras.callbacks.TensorBoard(os.path.join(job.out, "logs"))]
                           if chief else []),
                         *job.callbacks], verbose=job.verbose)
    logs = history.logs(epochs)
    metrics = _metrics(job, model, logs, held_out)
    if chief:
        _write_outputs(job, model, metrics, logs)
    metrics["seconds"] = round(time.perf_counter() - start, 1)
    if chief:
        with open(os.path.join(job.out, "metrics.json"), "w", encoding="utf-8") as f:
            json.dump(metrics, f, indent=2)
    checkpoint.finish(metrics)
    return metrics


def _metrics(job: PretrainJob, model, logs: dict, held_out) -> dict:
    """`steps` (this run's), the last epoch's `train` logs and, with held-out data, `eval`
    with the baselines it must beat (the model's `evaluate`)."""
    optimizer_steps = int(model.pretrainer.optimizer.iterations.numpy())
    offset = model.phase1.step if model.phase1 is not None else 0
    metrics = {"steps": optimizer_steps - offset,
               "train": {k: v[-1] for k, v in logs.items() if not k.startswith("val_")}}
    if model.phase1 is not None:
        metrics["optimizer_steps"] = optimizer_steps  # phase 1's and this run's
    if held_out is not None:
        metrics["eval"] = model.evaluate(held_out, batch_size=job.batch_size,
                                         steps=job.eval_steps, seed=job.seed)
    return metrics


def _write_outputs(job: PretrainJob, model, metrics: dict, logs: dict) -> None:
    """`model/` (with its pretraining heads: `--init model/` continues with them), the
    pretrainer's weights and the curves."""
    from keras_bert.training.plots import plot_history

    preset = model.phase1.arguments.get("preset", job.preset) if model.phase1 else job.preset
    model.save(os.path.join(job.out, "model"), metadata={"preset": preset})
    model.pretrainer.save_weights(os.path.join(job.out, "pretrainer.weights.h5"))
    if logs:
        held_out = metrics.get("eval") or {}
        plot_history(logs, os.path.join(job.out, "curves.png"),
                     title=f"pretraining BERT-{preset}", baselines={
                         "mlm_accuracy": (held_out.get("mlm_frequency_baseline"),
                                          "most frequent token (eval)"),
                         "nsp_accuracy": (held_out.get("nsp_majority_baseline"),
                                          "majority class (eval)")})


def _say(job: PretrainJob, message: str) -> None:
    if job.verbose:
        print(message, flush=True)


__all__ = ["PretrainJob", "pretraining_data", "pretraining_model", "run_pretraining"]
