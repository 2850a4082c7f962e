"""A complete pretraining run: data, model, optimizer, strategy, checkpoints, metrics, curves.

`run_pretraining(PretrainJob(...))` is what `keras-bert pretrain` calls; it is plain
`model.fit` underneath. A run that is killed picks up where its last checkpoint left it when
started again with the same arguments (the data stream is a pure function of the step).
`optimizer="lamb"` and `accumulation_steps=K` (K micro-batches of `batch_size` per update)
are the large-batch recipe; `phase2_from=OUT` continues a finished run (weights and
optimizer state) as BERT's second phase (`keras_bert.training.phases`).
"""

from __future__ import annotations

import collections
import dataclasses
import json
import os
import sys
import time

import keras
import numpy as np

from keras_bert.checkpoints.conversion import checkpoint_rules, checkpoint_vocab
from keras_bert.checkpoints.formats import load_pretrainer
from keras_bert.checkpoints.heads import save_pretraining_heads
from keras_bert.checkpoints.model_dir import load_model_dir, save_model_dir
from keras_bert.config import DEFAULT_SEQ_LENGTH
from keras_bert.data.corpus import guess_format, read_documents
from keras_bert.data.pretraining import PretrainingOptions, pretraining_dataset, tokenize_documents
from keras_bert.data.tfrecord import read_examples
from keras_bert.models.encoder import BertEncoder
from keras_bert.models.pretrainer import BertPretrainer
from keras_bert.text.rules import DEFAULT_RULES
from keras_bert.text.tokenizer import BertTokenizer
from keras_bert.training.checkpointing import ResumableCheckpoint
from keras_bert.training.optimizer import OPTIMIZERS, create_optimizer
from keras_bert.training.phases import Phase1, load_phase1_state, read_phase1
from keras_bert.training.plots import plot_history
from keras_bert.training.precision import AUTO, precision_line, resolve_precision
from keras_bert.training.resume import HistoryFile, fit_from_step, job_arguments, load_history
from keras_bert.training.strategy import get_strategy

DEFAULT_VOCAB = os.path.join(os.path.dirname(os.path.dirname(__file__)), "data", "vocab",
                             "corpus_uncased_8k.txt")


@dataclasses.dataclass
class PretrainJob:
    """Everything a pretraining run needs; the defaults train BERT-Tiny on the embedded corpus."""

    out: str
    preset: str = "tiny"
    corpus: list[str] | None = None  # text files (None: the embedded corpus)
    corpus_format: str = "auto"
    tfrecords: str | None = None  # a glob of create-pretraining-data files instead
    vocab: str | None = None  # None: the init model's vocab, or the embedded corpus vocab
    lower_case: bool = True
    rules: str | None = None  # tokenizer rules; None: the init model's, else google
    init: str | None = None  # a keras_bert, Google or Hugging Face directory to start from
    phase2_from: str | None = None  # a finished run's out directory: continue it (phase 2)
    steps: int = 2000  # BERT-Tiny on the embedded corpus learns NSP after ~1,200-1,600
    steps_per_epoch: int = 200  # the logging, evaluation and checkpoint interval
    batch_size: int = 32
    seq_length: int = DEFAULT_SEQ_LENGTH
    max_predictions: int = 20
    whole_word: bool = False
    learning_rate: float = 3e-3  # for BERT-Tiny; at 5e-3 (or 2% warmup) MLM stalls at unigram
    warmup_steps: int | None = None
    weight_decay: float = 0.01
    optimizer: str = "adamw"  # or "lamb"
    accumulation_steps: int = 1  # micro-batches of batch_size per optimizer update
    nsp_loss_weight: float = 1.0  # the original BERT sums the two losses
    precision: str = "auto"  # auto: for the hardware (training/precision.py)
    strategy: str = "auto"
    jit_compile: bool = False
    eval_fraction: float = 0.15  # of the corpus documents (per file), held out
    eval_steps: int = 20
    seed: int = 12345
    verbose: int = 1
    callbacks: list = dataclasses.field(default_factory=list)
    precision_note: str = dataclasses.field(default="", init=False, repr=False)

    def __post_init__(self):
        asked = self.precision
        if asked == AUTO and self.strategy == "tpu":
            self.precision = "mixed_bfloat16"  # the TPU system is not initialised yet
        self.precision = resolve_precision(self.precision)
        self.precision_note = precision_line(asked, self.precision, self.strategy)
        if self.steps < 1 or self.steps_per_epoch < 1 or self.batch_size < 1:
            raise ValueError("steps, steps_per_epoch and batch_size must be positive")
        if self.steps % self.steps_per_epoch:
            raise ValueError(f"steps ({self.steps}) must be a multiple of steps_per_epoch "
                             f"({self.steps_per_epoch})")
        if self.corpus and self.tfrecords:
            raise ValueError("give a corpus or TFRecords, not both")
        if self.optimizer not in OPTIMIZERS:
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
# Arguments added after runs were checkpointed: left out of the stored arguments at their
# defaults, so that those runs still resume.
_LATER_DEFAULTS = {"optimizer": "adamw", "accumulation_steps": 1, "phase2_from": None}


def _arguments(job: PretrainJob) -> dict:
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


def with_known_length(dataset):
    """`dataset` (finite, the same batches every pass) with its number of batches declared.

    Keras warns "Your input ran out of data" at the end of every pass over a dataset of
    unknown length (ours come from generators); with the length known it stops in time.
    None when the dataset is empty.
    """
    import tensorflow as tf

    batches = int(dataset.reduce(0, lambda count, _: count + 1))
    if not batches:
        return None
    return dataset.apply(tf.data.experimental.assert_cardinality(batches))


def split_documents(sources: list[list], fraction: float) -> tuple[list, list]:
    """(training, held-out) documents: `fraction` of all of them held out, at least 2 when
    there are 10 or more, stratified by source.

    Each source (the documents of one corpus file) gives its share of the held-out count
    (largest remainders), spread evenly over the source, so the held-out set mixes the
    sources as training does: its random-next NSP segments then come from other sources
    as often as in training. Deterministic.
    """
    total = sum(len(docs) for docs in sources)
    if fraction <= 0 or total < 10:
        return [d for docs in sources for d in docs], []
    count = min(max(2, round(fraction * total)), total - 2)
    shares = [count * len(docs) / total for docs in sources]
    counts = [int(share) for share in shares]
    by_remainder = sorted(range(len(sources)), key=lambda i: counts[i] - shares[i])
    for i in by_remainder[:count - sum(counts)]:
        counts[i] += 1
    train, held_out = [], []
    for docs, n in zip(sources, counts, strict=True):
        ids = {int((k + 0.5) * len(docs) / n) for k in range(n)}
        for i, doc in enumerate(docs):
            (held_out if i in ids else train).append(doc)
    return train, held_out


def mlm_frequency_baseline(dataset) -> float:
    """Accuracy of always predicting the most frequent masked token of `dataset`."""
    counts: collections.Counter = collections.Counter()
    for batch in dataset:
        weights = batch["masked_lm_weights"].numpy() > 0
        counts.update(batch["masked_lm_ids"].numpy()[weights].tolist())
    total = sum(counts.values())
    return counts.most_common(1)[0][1] / total if total else 0.0


def nsp_majority_baseline(dataset) -> tuple[float, int]:
    """(accuracy of always predicting the more common NSP label of `dataset`, its number of
    examples): the figure held-out NSP accuracy must beat, besides 0.5."""
    labels = np.concatenate([[], *(b["next_sentence_labels"].numpy() for b in dataset)])
    if not len(labels):
        return 0.0, 0
    random_next = float(np.mean(labels == 1))
    return max(random_next, 1.0 - random_next), int(len(labels))


def preset_pretrainer(preset: str, tokenizer, seq_length: int, dtype=None,
                      nsp_loss_weight: float = 1.0) -> BertPretrainer:
    """A randomly initialised pretrainer of size `preset` over `tokenizer`'s vocabulary, its
    position embeddings `max(512, seq_length)` (room for BERT's phase 2 at 512)."""
    return BertPretrainer.from_preset(preset, dtype=dtype, nsp_loss_weight=nsp_loss_weight,
                                      vocab_size=tokenizer.vocab_size,
                                      max_position_embeddings=max(512, int(seq_length)))


def _build_pretrainer(job: PretrainJob, tokenizer) -> BertPretrainer:
    if job.phase2_from:  # phase 1's config; its weights come with its optimizer state
        pretrainer = BertPretrainer(
            BertEncoder(load_model_dir(_source(job)).config, dtype=job.precision),
            nsp_loss_weight=job.nsp_loss_weight)
    elif job.init:  # a Google / Hugging Face checkpoint brings its pretraining heads too
        pretrainer = load_pretrainer(job.init, dtype=job.precision,
                                     nsp_loss_weight=job.nsp_loss_weight)
    else:
        pretrainer = preset_pretrainer(job.preset, tokenizer, job.seq_length, job.precision,
                                       job.nsp_loss_weight)
    if pretrainer.config.vocab_size != tokenizer.vocab_size:
        raise ValueError(f"The model's vocab_size ({pretrainer.config.vocab_size}) differs "
                         f"from the vocabulary's ({tokenizer.vocab_size})")
    return pretrainer


def run_pretraining(job: PretrainJob) -> dict:
    """Trains, evaluates and writes `job.out`: `model/` (a keras_bert model directory),
    `metrics.json`, `history.json`, `curves.png`, `logs/` (TensorBoard), `checkpoints/`."""
    start = time.perf_counter()
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
    strategy = get_strategy(job.strategy)
    global_batch = job.batch_size
    train, evaluation = _datasets(job, tokenizer, global_batch)
    if job.verbose:  # once the inputs are read: a bad input ends with its one error line
        print(job.precision_note, file=sys.stderr, flush=True)
        if job.accumulation_steps > 1:
            print(f"{job.accumulation_steps} micro-batches of {global_batch} per update: "
                  f"{job.accumulation_steps * global_batch} examples", file=sys.stderr,
                  flush=True)
    with strategy.scope():
        pretrainer = _build_pretrainer(job, tokenizer)
        pretrainer.compile(
            optimizer=create_optimizer(job.learning_rate, job.steps, job.warmup_steps,
                                       job.weight_decay, optimizer=job.optimizer,
                                       start_step=offset),
            accumulation_steps=job.accumulation_steps, jit_compile=job.jit_compile)
    if phase1 is not None:  # a checkpoint of this run, if any, replaces it just below
        load_phase1_state(pretrainer, phase1)
    checkpoint.restore(pretrainer)
    start_step = int(pretrainer.optimizer.iterations.numpy()) - offset
    if start_step:
        _say(job, f"resuming from step {start_step} of {job.steps}")
    elif phase1 is not None:
        _say(job, f"phase 2: continuing {job.phase2_from} (optimizer step {offset})")
    epochs = job.steps // job.steps_per_epoch
    history_path = os.path.join(job.out, "history.json")
    # Epochs after the restored checkpoint are replayed: drop what the history says of them.
    history = load_history(history_path, start_step // job.steps_per_epoch)
    callbacks = [HistoryFile(history_path, history), checkpoint,
                 keras.callbacks.TensorBoard(os.path.join(job.out, "logs")), *job.callbacks]
    fit_from_step(pretrainer, train, epochs=epochs, steps_per_epoch=job.steps_per_epoch,
                  start_step=start_step, validation_data=evaluation, callbacks=callbacks,
                  verbose=job.verbose)  # the pipeline shuffles; Keras can't shuffle a Dataset
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
    save_model_dir(
        pretrainer.encoder, os.path.join(job.out, "model"), _vocab_file(job, tokenizer),
        tokenizer.lower_case, rules=tokenizer.rules,
        metadata={"pretrained_steps": optimizer_steps, "preset": _preset(job, phase1)},
        # `--init model/` continues with the heads
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
    metrics["seconds"] = round(time.perf_counter() - start, 1)
    with open(os.path.join(job.out, "metrics.json"), "w", encoding="utf-8") as f:
        json.dump(metrics, f, indent=2)
    checkpoint.finish(metrics)
    return metrics


def _vocab_file(job: PretrainJob, tokenizer) -> str:
    if job.vocab:
        return job.vocab
    if _source(job):
        return checkpoint_vocab(_source(job))[0]
    return DEFAULT_VOCAB


def _check_phase1(job: PretrainJob) -> Phase1:
    """The finished run `job` continues, refused when it cannot continue it as asked."""
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


__all__ = ["PretrainJob", "mlm_frequency_baseline", "nsp_majority_baseline", "run_pretraining",
           "split_documents", "with_known_length"]
