"""A complete pretraining run: data, model, optimizer, strategy, checkpoints, metrics, curves.

`run_pretraining(PretrainJob(...))` is what `keras-bert pretrain` calls: plain `model.fit`
underneath. A killed run started again with the same arguments picks up at its last
checkpoint (the data stream is a pure function of the step).
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
from keras_bert.jobs.options import option, with_fetched_checkpoint
from keras_bert.training.backends import default_jit_compile
from keras_bert.training.precision import (
    AUTO,
    PRECISION_CHOICES,
    PRECISION_HELP,
    precision_line,
    resolve_precision,
)

if TYPE_CHECKING:  # annotations only: the module loads no TensorFlow (the CLI reads its fields)
    from keras_bert.models.pretrainer import BertPretrainer
    from keras_bert.pretraining.phases import Phase1
    from keras_bert.text.tokenizer import BertTokenizer

@dataclasses.dataclass
class PretrainJob:
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
                                     "--init's, else google)", choices=("google", "huggingface"))
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
    jit_compile: bool | None = option(None, "XLA (default: on GPUs and TPUs, off on CPUs)")
    eval_fraction: float = option(0.15, cli=False)  # of the corpus documents (per file)
    eval_steps: int = option(20, cli=False)
    seed: int = option(12345, "seeds the model, the masks and the pairs")
    verbose: int = option(1, cli=False)
    callbacks: list = option(cli=False, default_factory=list)
    precision_note: str = dataclasses.field(default="", init=False, repr=False)

    def __post_init__(self):
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
        if self.accumulation_steps < 1:
            raise ValueError(f"accumulation_steps must be >= 1, got {self.accumulation_steps}")
        if self.phase2_from and (self.init or self.vocab):
            raise ValueError("phase2_from continues that run's model and vocabulary: give "
                             "no init or vocab with it")
        if self.phase2_from and os.path.abspath(self.out).startswith(
                os.path.join(os.path.abspath(self.phase2_from), "")):
            raise ValueError("give phase 2 an output directory outside phase 1's")


_NOT_ARGUMENTS = ("out", "verbose", "callbacks", "precision_note")
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


def _source(job: PretrainJob) -> str | None:
    """The directory the model and vocabulary come from: phase 1's model, or `init`."""
    return os.path.join(job.phase2_from, "model") if job.phase2_from else job.init


def _tokenizer(job: PretrainJob) -> BertTokenizer:
    from keras_bert.checkpoints.conversion import checkpoint_rules, checkpoint_vocab
    from keras_bert.data.corpus import DEFAULT_VOCAB
    from keras_bert.text.rules import DEFAULT_RULES
    from keras_bert.text.tokenizer import BertTokenizer

    source = _source(job)
    rules = job.rules or (checkpoint_rules(source) if source else DEFAULT_RULES)
    if job.vocab:
        return BertTokenizer(job.vocab, lower_case=job.lower_case, rules=rules)
    if source:
        vocab_file, lower_case = checkpoint_vocab(source)
        return BertTokenizer(vocab_file, lower_case=lower_case, rules=rules)
    return BertTokenizer(DEFAULT_VOCAB, lower_case=True, rules=rules)


def _datasets(job: PretrainJob, tokenizer, global_batch: int):
    """(infinite training stream, evaluation dataset) of pretraining feature dicts; the
    stream's batches hold `accumulation_steps` micro-batches of `global_batch`."""
    from keras_bert.data.corpus import guess_format, read_documents
    from keras_bert.pretraining.dataset import (
        PretrainingOptions,
        pretraining_dataset,
        tokenize_documents,
    )
    from keras_bert.pretraining.evaluation import split_documents, with_known_length
    from keras_bert.pretraining.tfrecord import read_examples

    options = PretrainingOptions(seq_length=job.seq_length, max_predictions=job.max_predictions,
                                 whole_word=job.whole_word, seed=job.seed)
    update_batch = global_batch * job.accumulation_steps
    if job.tfrecords:
        train = read_examples(job.tfrecords, job.seq_length, job.max_predictions, update_batch,
                              shuffle_buffer=10_000, seed=job.seed, repeat=True,
                              drop_remainder=True)
        evaluation = read_examples(job.tfrecords, job.seq_length, job.max_predictions,
                                   global_batch).take(job.eval_steps)
        return train, with_known_length(evaluation)
    from keras_bert.data.corpus import default_corpus_files

    sources = []  # the documents of each corpus file
    for path in job.corpus or default_corpus_files():
        fmt = guess_format(path) if job.corpus_format == "auto" else job.corpus_format
        sources.append(list(read_documents(path, fmt)))
    train_docs, held_out = split_documents(sources, job.eval_fraction)
    train = pretraining_dataset(tokenize_documents(train_docs, tokenizer), tokenizer,
                                update_batch, options, dynamic=True, drop_remainder=True)
    evaluation = None
    if len(held_out) >= 2:
        evaluation = pretraining_dataset(tokenize_documents(held_out, tokenizer), tokenizer,
                                         global_batch, options, dynamic=False)
        evaluation = with_known_length(evaluation.take(job.eval_steps))
    return train.repeat(), evaluation


def _build_pretrainer(job: PretrainJob, tokenizer) -> BertPretrainer:
    from keras_bert.checkpoints.formats import load_pretrainer
    from keras_bert.checkpoints.model_dir import load_model_dir
    from keras_bert.models.encoder import BertEncoder
    from keras_bert.models.pretrainer import BertPretrainer

    if job.phase2_from:  # phase 1's config; its weights come with its optimizer state
        pretrainer = BertPretrainer(
            BertEncoder(load_model_dir(_source(job)).config, dtype=job.precision),
            nsp_loss_weight=job.nsp_loss_weight)
    elif job.init:  # a Google / Hugging Face checkpoint brings its pretraining heads too
        pretrainer = load_pretrainer(job.init, dtype=job.precision,
                                     nsp_loss_weight=job.nsp_loss_weight)
    else:
        pretrainer = BertPretrainer.for_vocabulary(job.preset, tokenizer, job.seq_length,
                                                   job.precision, job.nsp_loss_weight)
    if pretrainer.config.vocab_size != tokenizer.vocab_size:
        raise ValueError(f"The model's vocab_size ({pretrainer.config.vocab_size}) differs "
                         f"from the vocabulary's ({tokenizer.vocab_size})")
    return pretrainer


def run_pretraining(job: PretrainJob) -> dict:
    """Trains, evaluates and writes `job.out`: `model/` (a keras_bert model directory),
    `metrics.json`, `history.json`, `curves.png`, `logs/` (TensorBoard), `checkpoints/`."""
    import keras

    from keras_bert.pretraining.phases import load_phase1_state
    from keras_bert.training.checkpointing import ResumableCheckpoint

    start = time.perf_counter()
    job = with_fetched_checkpoint(job, "init")
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
    phase1 = _check_phase1(job) if job.phase2_from else None
    offset = phase1.step if phase1 else 0  # the optimizer's steps before this run's
    keras.utils.set_random_seed(job.seed)
    tokenizer = _tokenizer(job)
    train, evaluation = _datasets(job, tokenizer, job.batch_size)
    if job.verbose:  # once the inputs are read: a bad input ends with its one error line
        print(job.precision_note, file=sys.stderr, flush=True)
        if job.accumulation_steps > 1:
            print(f"{job.accumulation_steps} micro-batches of {job.batch_size} per update: "
                  f"{job.accumulation_steps * job.batch_size} examples", file=sys.stderr,
                  flush=True)
    pretrainer = _compiled_pretrainer(job, tokenizer, offset)
    if phase1 is not None:  # a checkpoint of this run, if any, replaces it just below
        load_phase1_state(pretrainer, phase1)
    checkpoint.restore(pretrainer)
    history = _fit(job, pretrainer, train, evaluation, checkpoint, offset, phase1)
    metrics = _metrics(pretrainer, history, evaluation, offset, phase1)
    _write_model(job, pretrainer, tokenizer, metrics, history, phase1)
    metrics["seconds"] = round(time.perf_counter() - start, 1)
    with open(os.path.join(job.out, "metrics.json"), "w", encoding="utf-8") as f:
        json.dump(metrics, f, indent=2)
    checkpoint.finish(metrics)
    return metrics


def _compiled_pretrainer(job: PretrainJob, tokenizer, offset: int) -> BertPretrainer:
    """The pretrainer under the job's strategy, compiled with its optimizer (its schedule
    counting from the optimizer step `offset`)."""
    from keras_bert.training.optimizer import create_optimizer
    from keras_bert.training.strategy import get_strategy

    with get_strategy(job.strategy).scope():
        pretrainer = _build_pretrainer(job, tokenizer)
        pretrainer.compile(
            optimizer=create_optimizer(job.learning_rate, job.steps, job.warmup_steps,
                                       job.weight_decay, optimizer=job.optimizer,
                                       start_step=offset),
            accumulation_steps=job.accumulation_steps, jit_compile=job.jit_compile)
    return pretrainer


def _fit(job: PretrainJob, pretrainer, train, evaluation, checkpoint, offset: int,
         phase1) -> dict:
    """`model.fit` from the restored step to `job.steps`; the per-epoch history."""
    import keras

    from keras_bert.training.resume import HistoryFile, fit_from_step, load_history

    start_step = int(pretrainer.optimizer.iterations.numpy()) - offset
    if start_step:
        _say(job, f"resuming from step {start_step} of {job.steps}")
    elif phase1 is not None:
        _say(job, f"phase 2: continuing {job.phase2_from} (optimizer step {offset})")
    history_path = os.path.join(job.out, "history.json")
    # Epochs after the restored checkpoint are replayed: drop what the history says of them.
    history = load_history(history_path, start_step // job.steps_per_epoch)
    callbacks = [HistoryFile(history_path, history), checkpoint,
                 keras.callbacks.TensorBoard(os.path.join(job.out, "logs")), *job.callbacks]
    fit_from_step(pretrainer, train, epochs=job.steps // job.steps_per_epoch,
                  steps_per_epoch=job.steps_per_epoch, start_step=start_step,
                  validation_data=evaluation, callbacks=callbacks,
                  verbose=job.verbose)  # the pipeline shuffles; Keras can't shuffle a Dataset
    return history


def _metrics(pretrainer, history: dict, evaluation, offset: int, phase1) -> dict:
    """`steps`, the last epoch's `train` logs and, with held-out data, `eval` with the
    baselines it must beat."""
    from keras_bert.pretraining.evaluation import mlm_frequency_baseline, nsp_majority_baseline

    optimizer_steps = int(pretrainer.optimizer.iterations.numpy())
    metrics = {"steps": optimizer_steps - offset,
               "train": {k: v[-1] for k, v in history.items() if not k.startswith("val_")}}
    if phase1 is not None:
        metrics["optimizer_steps"] = optimizer_steps  # phase 1's and this run's
    if evaluation is not None:
        metrics["eval"] = {k: float(v) for k, v in pretrainer.evaluate(
            evaluation, return_dict=True, verbose=0).items()}
        metrics["eval"]["mlm_frequency_baseline"] = mlm_frequency_baseline(evaluation)
        majority, examples = nsp_majority_baseline(evaluation)
        metrics["eval"].update(nsp_majority_baseline=majority, examples=examples)
    return metrics


def _write_model(job: PretrainJob, pretrainer, tokenizer, metrics: dict, history: dict,
                 phase1) -> None:
    """`model/` (with its pretraining heads: `--init model/` continues with them), the
    pretrainer's weights and the curves."""
    from keras_bert.checkpoints.model_dir import save_model_dir
    from keras_bert.checkpoints.pretraining_heads import save_pretraining_heads
    from keras_bert.training.plots import plot_history

    save_model_dir(
        pretrainer.encoder, os.path.join(job.out, "model"), _vocab_file(job, tokenizer),
        tokenizer.lower_case, rules=tokenizer.rules,
        metadata={"pretrained_steps": int(pretrainer.optimizer.iterations.numpy()),
                  "preset": _preset(job, phase1)},
        write_extra=lambda directory: save_pretraining_heads(pretrainer, directory))
    pretrainer.save_weights(os.path.join(job.out, "pretrainer.weights.h5"))
    if history:
        held_out = metrics.get("eval") or {}
        plot_history(history, os.path.join(job.out, "curves.png"),
                     title=f"pretraining BERT-{_preset(job, phase1)}", baselines={
                         "mlm_accuracy": (held_out.get("mlm_frequency_baseline"),
                                          "most frequent token (eval)"),
                         "nsp_accuracy": (held_out.get("nsp_majority_baseline"),
                                          "majority class (eval)")})


def _vocab_file(job: PretrainJob, tokenizer) -> str:
    from keras_bert.checkpoints.conversion import checkpoint_vocab
    from keras_bert.data.corpus import DEFAULT_VOCAB

    if job.vocab:
        return job.vocab
    if _source(job):
        return checkpoint_vocab(_source(job))[0]
    return DEFAULT_VOCAB


def _check_phase1(job: PretrainJob) -> Phase1:
    """The finished run `job` continues, refused when it cannot continue it as asked."""
    from keras_bert.checkpoints.model_dir import load_model_dir
    from keras_bert.pretraining.phases import read_phase1

    phase1 = read_phase1(job.phase2_from)
    if phase1.optimizer != job.optimizer:
        raise ValueError(f"phase 1 ({job.phase2_from}) ran {phase1.optimizer}: phase 2 "
                         f"continues its optimizer state, so give --optimizer "
                         f"{phase1.optimizer}")
    positions = load_model_dir(phase1.model_dir).config.max_position_embeddings
    if positions < job.seq_length:
        raise ValueError(f"phase 1's model has {positions} position embeddings, fewer than "
                         f"--seq-length {job.seq_length} (pretrain phase 1 with at least as "
                         "many: a new model gets max(512, --seq-length))")
    return phase1


def _preset(job: PretrainJob, phase1: Phase1 | None) -> str:
    return phase1.arguments.get("preset", job.preset) if phase1 else job.preset


def _say(job: PretrainJob, message: str) -> None:
    if job.verbose:
        print(message, flush=True)


__all__ = ["PretrainJob", "run_pretraining"]
