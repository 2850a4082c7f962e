"""`TextPretrainer`: BERT's pretraining (masked LM tied to the word embeddings + next
sentence prediction) on raw documents, as a Keras model a Python user fits.

It owns a `BertPretrainer` (ids in: `keras_bert.models`) and the `BertPreprocessor` whose
tokenizer and sequence length make its data (`keras_bert.pretraining.streams`: NSP pairs by
the original rules, new pairs and masks every epoch, reproducibly from the seed).
`keras-bert pretrain` (`keras_bert.jobs.pretrain`) builds one and runs its `fit` and
`evaluate`: this class is the one pretraining engine.

- `fit(documents, epochs=..., steps_per_epoch=...)`: BERT's AdamW (or LAMB) with warmup and
  linear decay sized from the fit's own steps, unless compiled with another optimizer;
  gradient accumulation with `compile(accumulation_steps=K)`; resumable from a
  `ResumableCheckpoint` (`checkpoint=`); `PretrainingRecords(glob)` trains on TFRecords.
- `from_phase1(out)`: BERT's second phase, continuing a finished run's weights and
  optimizer state (`keras_bert.pretraining.phases`).
- `evaluate(documents)`: held-out masked-LM and NSP accuracy with the baselines they must
  beat (the numbers of `keras-bert pretrain`'s `metrics.json`).
- `predict(texts)`: the likeliest word pieces for each `[MASK]` of each text.
- `save(dir)`: the keras_bert model directory `pretrain` writes (pretraining heads beside
  it, so `from_pretrained(dir)` continues with them); `*.keras` round trips.

Documents are what a user has: a corpus file path (or several; the formats `pretrain
--corpus` reads), or a list of documents, each a list of sentences or one string with a
sentence per line.
"""

from __future__ import annotations

import dataclasses
import os

import keras
import numpy as np
import tensorflow as tf

from keras_bert.config import DEFAULT_SEQ_LENGTH
from keras_bert.pretraining.dataset import PretrainingOptions
from keras_bert.pretraining.streams import (
    PretrainingRecords,
    as_documents,
    held_out_set,
    training_stream,
)
from keras_bert.training.distribution import distributed_builder, undistributed

DEFAULT_BATCH_SIZE = 32
DEFAULT_LEARNING_RATE = 3e-3  # `keras-bert pretrain`'s, chosen for BERT-Tiny on the corpus


@dataclasses.dataclass(frozen=True)
class MaskingConfig:
    """How pretraining examples are made (`create_pretraining_data.py`'s knobs, less the
    sequence length, which is the preprocessor's, and the seed, which is `fit`'s)."""

    max_predictions: int = 20
    mask_rate: float = 0.15
    whole_word: bool = False
    short_seq_prob: float = 0.1
    dupe_factor: int = 1

    def options(self, seq_length: int, seed: int) -> PretrainingOptions:
        """The pipeline's options for `seq_length` and `seed`."""
        return PretrainingOptions(seq_length=seq_length, seed=int(seed),
                                  **dataclasses.asdict(self))


@keras.saving.register_keras_serializable(package="keras_bert")
class TextPretrainer(keras.Model):
    """BERT's pretraining on raw documents (see the module docstring).

    Build one with `from_preset` (random weights, any vocabulary), `from_pretrained` (a
    checkpoint, with its pretraining heads when it has them) or `from_phase1` (BERT's
    second phase of a finished run).
    """

    def __init__(self, pretrainer, preprocessor, masking: MaskingConfig | None = None,
                 **kwargs):
        from keras_bert.models.pretrainer import BertPretrainer

        if not isinstance(pretrainer, BertPretrainer):
            raise TypeError(f"TextPretrainer needs a BertPretrainer, got "
                            f"{type(pretrainer).__name__}")
        if preprocessor.seq_length is None:
            raise ValueError("TextPretrainer needs a preprocessor with a fixed seq_length")
        if pretrainer.config.vocab_size != preprocessor.tokenizer.vocab_size:
            raise ValueError(f"The model's vocab_size ({pretrainer.config.vocab_size}) differs "
                             f"from the vocabulary's ({preprocessor.tokenizer.vocab_size})")
        if preprocessor.seq_length > pretrainer.config.max_position_embeddings:
            raise ValueError(f"seq_length {preprocessor.seq_length} exceeds the model's "
                             f"max_position_embeddings "
                             f"{pretrainer.config.max_position_embeddings}")
        kwargs.setdefault("name", "text_pretrainer")
        kwargs.setdefault("dtype", pretrainer.dtype_policy)
        super().__init__(**kwargs)
        self.pretrainer = pretrainer
        self.preprocessor = preprocessor
        self.masking = masking or MaskingConfig()
        self._optimizer_settings = None  # compile()'s BERT optimizer, sized by fit
        self.phase1 = None  # `from_phase1`'s finished run, whose state each `fit` continues

    # ----- building -----------------------------------------------------------------------

    @classmethod
    @distributed_builder
    def from_preset(cls, preset: str = "tiny", vocab: str | None = None,
                    lower_case: bool = True, rules: str | None = None,
                    seq_length: int = DEFAULT_SEQ_LENGTH, masking: MaskingConfig | None = None,
                    nsp_loss_weight: float = 1.0, precision: str | None = None,
                    seed: int | None = None) -> TextPretrainer:
        """A randomly initialised BERT of size `preset` (`tiny` ... `large`) over `vocab` (a
        `vocab.txt`; default: the package's 8k uncased vocabulary of the embedded corpus),
        as `keras-bert pretrain --preset` builds it (position embeddings: max(512,
        `seq_length`)). `seed` seeds Keras' generator first (the weights `pretrain --seed`
        starts from)."""
        from keras_bert.pretraining.building import preset_parts

        pretrainer, tokenizer = preset_parts(preset, vocab, lower_case, rules, seq_length,
                                             precision, nsp_loss_weight, seed)
        return cls(pretrainer, _preprocessor(tokenizer, seq_length), masking)

    @classmethod
    @distributed_builder
    def from_pretrained(cls, source: str, seq_length: int = DEFAULT_SEQ_LENGTH,
                        masking: MaskingConfig | None = None, nsp_loss_weight: float = 1.0,
                        rules: str | None = None, precision: str | None = None,
                        seed: int | None = None, vocab: str | None = None,
                        lower_case: bool = True) -> TextPretrainer:
        """The checkpoint `source` (a keras_bert model directory, Google, Hugging Face or
        keras-hub checkpoint; `keras-bert pretrain --init` reads the same) with its
        pretraining heads where it has them (Google's and Hugging Face's releases, the
        directories `convert` and `pretrain` write), else fresh ones, and its tokenizer
        (`vocab`: another `vocab.txt` of the model's size, cased with `lower_case=False`).
        `source` may be a hub id (`hf://...`, `kaggle://...`), fetched once."""
        from keras_bert.pretraining.building import pretrained_parts

        pretrainer, tokenizer = pretrained_parts(source, vocab, lower_case, rules, precision,
                                                 nsp_loss_weight, seed)
        return cls(pretrainer, _preprocessor(tokenizer, seq_length), masking)

    @classmethod
    @distributed_builder
    def from_phase1(cls, out: str, seq_length: int = DEFAULT_SEQ_LENGTH,
                    masking: MaskingConfig | None = None, nsp_loss_weight: float = 1.0,
                    rules: str | None = None, precision: str | None = None,
                    seed: int | None = None) -> TextPretrainer:
        """BERT's second phase of the finished `keras-bert pretrain` run in `out`: its
        model and vocabulary, typically at a longer `seq_length` (at most its position
        embeddings) and more masked predictions. Each `fit` starts from that run's end,
        weights and optimizer state (moments and step count; compile with its optimizer),
        under a new warmup + decay schedule of the fit's steps
        (`keras_bert.pretraining.phases`)."""
        from keras_bert.pretraining.building import phase2_parts
        from keras_bert.pretraining.phases import read_phase1

        phase1 = read_phase1(out)
        pretrainer, tokenizer = phase2_parts(phase1, rules, int(seq_length), precision,
                                             nsp_loss_weight, seed)
        model = cls(pretrainer, _preprocessor(tokenizer, seq_length), masking)
        model.phase1 = phase1
        return model

    @property
    def distribution(self):
        """JAX: the `keras.distribution` the model was built with (`distribution=` of
        the builders; None: Keras' global one, if any), kept by the network `fit` trains."""
        return getattr(self.pretrainer, "distribution", None)

    @distribution.setter
    def distribution(self, value):
        self.pretrainer.distribution = value

    @property
    def tokenizer(self):
        """The `BertTokenizer` of the preprocessor."""
        return self.preprocessor.tokenizer

    def get_config(self) -> dict:
        """The pretrainer, the preprocessor (vocabulary inside) and the masking settings."""
        return {"pretrainer": keras.saving.serialize_keras_object(self.pretrainer),
                "preprocessor": keras.saving.serialize_keras_object(self.preprocessor),
                "masking": dataclasses.asdict(self.masking), "name": self.name}

    @classmethod
    def from_config(cls, config: dict):
        """Rebuilds the model from `get_config` output."""
        config = dict(config)
        return cls(keras.saving.deserialize_keras_object(config.pop("pretrainer")),
                   keras.saving.deserialize_keras_object(config.pop("preprocessor")),
                   MaskingConfig(**config.pop("masking")), **config)

    def call(self, inputs, training=False):
        """The pretrainer on packed, masked ids: `mlm_logits`, `nsp_logits`."""
        return self.pretrainer(inputs, training=training)

    # ----- training -----------------------------------------------------------------------

    def compile(self, optimizer=None, *, learning_rate: float = DEFAULT_LEARNING_RATE,
                warmup_steps: int | None = None, weight_decay: float = 0.01,
                accumulation_steps: int = 1, jit_compile: bool | None = None, **kwargs):
        """`optimizer`: `"adamw"` (default) or `"lamb"`, BERT's, built by `fit` under
        warmup (`warmup_steps`, default 10% of the fit's) and linear decay to 0 over the
        fit's steps; or a Keras optimizer, used as it is. `accumulation_steps=K`: each
        update averages K micro-batches of `fit`'s `batch_size`. `jit_compile` (XLA)
        defaults to the device's choice (`keras_bert.training.backends.default_jit_compile`).
        A `from_phase1` model takes phase 1's optimizer only (it continues its state)."""
        from keras_bert.pretraining.phases import check_optimizer
        from keras_bert.training.backends import default_jit_compile
        from keras_bert.training.optimizer import OPTIMIZERS

        name = optimizer or "adamw"
        if isinstance(name, str) and name not in OPTIMIZERS:
            raise ValueError(f"optimizer must be one of {OPTIMIZERS} or a Keras "
                             f"optimizer, got {name!r}")
        if self.phase1 is not None:
            check_optimizer(self.phase1, name if isinstance(name, str) else type(name).__name__)
        self._optimizer_settings = None
        if isinstance(name, str):
            self._optimizer_settings = {"learning_rate": float(learning_rate),
                                        "warmup_steps": warmup_steps,
                                        "weight_decay": float(weight_decay),
                                        "optimizer": name}
            optimizer = None
        self._compile_arguments = {
            "accumulation_steps": int(accumulation_steps),
            "jit_compile": default_jit_compile() if jit_compile is None else jit_compile,
            **kwargs}
        if optimizer is not None:
            self.pretrainer.compile(optimizer=optimizer, **self._compile_arguments)
        self.compiled = True

    def training_data(self, x, batch_size: int | None = None, seed: int | None = None,
                      steps_per_epoch: int | None = None) -> tuple[tf.data.Dataset, int]:
        """`(stream, steps_per_epoch)`: what `fit` trains on. The endless stream of updates
        of `batch_size` x the compiled `accumulation_steps` examples from documents `x`
        (new NSP pairs and masks every pass) or `PretrainingRecords` (shuffled), from
        `seed`, a pure function of the step; the steps of an epoch (default: the full
        updates of one pass over the documents' NSP pairs)."""
        if not self.compiled:
            self.compile()
        update = int(batch_size or DEFAULT_BATCH_SIZE) * self._compile_arguments[
            "accumulation_steps"]
        options = self.masking.options(self.preprocessor.seq_length, _seed(seed))
        return training_stream(x, self.tokenizer, update, options, steps_per_epoch)

    def fit(self, x=None, batch_size: int | None = None, epochs: int = 1,
            steps_per_epoch: int | None = None, validation_data=None,
            validation_steps: int = 20, seed: int | None = None, checkpoint=None, **kwargs):
        """Pretrains on documents `x` (see the module docstring) or `PretrainingRecords`
        for `epochs` epochs of `steps_per_epoch` updates (`training_data`). The stream is
        endless, from `seed` (default: drawn from NumPy's global generator).
        `validation_data`: held-out documents or records, `validation_steps` batches of
        them scored after every epoch. `checkpoint`: a `ResumableCheckpoint`
        (`keras_bert.training`) restored first, then saving model and optimizer state as
        the fit goes (first of the callbacks, or where it stands in `callbacks`), so a fit
        started again with the same arguments resumes where the interrupted one stopped
        and ends with its weights. Returns Keras' `History`."""
        from keras_bert.training.resume import fit_from_step

        if "y" in kwargs or "shuffle" in kwargs:
            raise TypeError("fit takes documents only (the labels are made from them) and "
                            "shuffles with its own seed (seed=)")
        if int(epochs) < 1:
            raise ValueError(f"epochs must be at least 1, got {epochs}")
        from keras_bert.training.backends import check_batch_size, distribution_scope
        from keras_bert.training.distribution import process_count

        check_batch_size(self.pretrainer, int(batch_size or DEFAULT_BATCH_SIZE))
        seed = _seed(seed)
        train, steps_per_epoch = self.training_data(x, batch_size, seed, steps_per_epoch)
        with distribution_scope(self.pretrainer):  # restored in the layout it trains in
            start = self._start(int(epochs) * steps_per_epoch, checkpoint,
                                kwargs.get("verbose", 1))
        if validation_data is not None:
            # Many processes: Keras slices each validation batch per process by the stream's
            # static batch size, which a partial last batch leaves unknown ('The batch size
            # of the input dataset is unknown'): they validate on whole batches.
            validation_data = self._held_out(validation_data, batch_size, validation_steps,
                                             seed, whole=process_count() > 1)
        callbacks = list(kwargs.pop("callbacks", None) or [])
        if checkpoint is not None and checkpoint not in callbacks:
            callbacks.insert(0, checkpoint)  # among `callbacks`, it saves in its place
        history = keras.callbacks.History()
        with distribution_scope(self.pretrainer):  # JAX: Keras splits each batch
            history.history = fit_from_step(
                self.pretrainer, train, epochs=int(epochs), steps_per_epoch=steps_per_epoch,
                start_step=start, validation_data=validation_data, callbacks=callbacks,
                **kwargs)
        return history

    def _start(self, total_steps: int, checkpoint, verbose) -> int:
        """Compiles BERT's optimizer for `total_steps` (unless compiled with another),
        continues phase 1's state, restores `checkpoint`; returns the step of this
        training to start at."""
        from keras_bert.pretraining.phases import load_phase1_state
        from keras_bert.training.backends import distribution_scope
        from keras_bert.training.optimizer import create_optimizer

        offset = self.phase1.step if self.phase1 is not None else 0
        if self._optimizer_settings is not None:
            # Phase 2's schedule counts from phase 1's last step, the step count it continues.
            with distribution_scope(self.pretrainer):
                self.pretrainer.compile(optimizer=create_optimizer(
                    total_steps=total_steps, start_step=offset, **self._optimizer_settings),
                    **self._compile_arguments)
        if self.phase1 is not None:  # a checkpoint of this fit, if any, replaces it below
            load_phase1_state(self.pretrainer, self.phase1)
        # A checkpoint's step counts phase 1's too; without one a fit starts at its step 0
        # (a Keras optimizer compiled by the user keeps its count from an earlier fit).
        restored = checkpoint.restore(self.pretrainer)["step"] if checkpoint is not None else 0
        start = max(restored - offset, 0)
        if verbose and start:
            print(f"resuming from step {start} of {total_steps}", flush=True)
        elif verbose and self.phase1 is not None:
            print(f"phase 2: continuing {self.phase1.out} (optimizer step {offset})",
                  flush=True)
        return start

    def evaluate(self, x=None, batch_size: int | None = None, steps: int = 20,
                 seed: int = 12345, **kwargs) -> dict:
        """Held-out scores on documents `x` or `PretrainingRecords` (`steps` batches;
        documents: pairs and masks from `seed`): the losses and accuracies,
        `mlm_frequency_baseline` (always the most frequent masked token),
        `nsp_majority_baseline` (always the commoner NSP label) and `examples`, as
        `keras-bert pretrain`'s `metrics.json` reports them."""
        from keras_bert.pretraining.evaluation import held_out_scores

        if isinstance(x, tf.data.Dataset) or kwargs:
            return self.pretrainer.evaluate(x, batch_size=batch_size, **kwargs)
        if not self.pretrainer.compiled:
            self.pretrainer.compile()
        dataset = self._held_out(x, batch_size, steps, seed)
        if dataset is None:
            raise ValueError("the documents make no evaluation batch")
        with undistributed():  # whole batches, a partial last one too (JAX)
            return held_out_scores(self.pretrainer, dataset)

    def _held_out(self, data, batch_size: int | None, steps: int, seed: int,
                  whole: bool = False):
        """`pretrain`'s evaluation set: the same batches on every pass (`whole`: the last
        one dropped when partial)."""
        options = self.masking.options(self.preprocessor.seq_length, seed)
        return held_out_set(data, self.tokenizer, int(batch_size or DEFAULT_BATCH_SIZE),
                            steps, options, whole=whole)

    # ----- using --------------------------------------------------------------------------

    def predict(self, x, top_k: int = 5, batch_size: int | None = None, **kwargs) -> dict:
        """The `top_k` likeliest word pieces for each `[MASK]` of texts `x` (written as
        `[MASK]` in the text): `tokens` (`[texts, masks, top_k]` strings, "" past a text's
        masks), `probabilities` (the same shape) and `num_masks` (per text). Masks beyond
        the sequence length are not read."""
        from keras_bert.pretraining.fill_mask import fill_masks

        if kwargs.pop("verbose", None) not in (None, 0, "auto") or kwargs:
            raise TypeError(f"unexpected arguments {sorted(kwargs)}")
        with undistributed():  # whole batches, a partial last one too (JAX)
            return fill_masks(self.pretrainer, self.preprocessor, x, top_k,
                              int(batch_size or DEFAULT_BATCH_SIZE))

    def save(self, filepath, overwrite: bool = True, metadata: dict | None = None, **kwargs):
        """`*.keras`: Keras' archive. Otherwise the keras_bert model directory `keras-bert
        pretrain` writes (`model/`: the encoder, its vocabulary and tokenizer settings, the
        pretraining heads beside it; `pretrained_steps` and `metadata` in its manifest);
        returns its path."""
        from keras_bert.checkpoints.model_dir import save_model_dir
        from keras_bert.checkpoints.pretraining_heads import save_pretraining_heads

        if str(filepath).endswith(".keras"):
            return super().save(filepath, overwrite=overwrite, **kwargs)
        if os.path.exists(filepath) and not overwrite:
            raise FileExistsError(f"{filepath} exists (overwrite=False)")
        steps = 0
        optimizer = getattr(self.pretrainer, "optimizer", None)  # none before compile
        if optimizer is not None and optimizer.built:
            steps = int(optimizer.iterations.numpy())
        tokenizer = self.tokenizer
        return save_model_dir(
            self.pretrainer.encoder, str(filepath), tokenizer.vocab, tokenizer.lower_case,
            rules=tokenizer.rules, metadata={"pretrained_steps": steps, **(metadata or {})},
            write_extra=lambda directory: save_pretraining_heads(self.pretrainer,
                                                                 directory)).path


def _preprocessor(tokenizer, seq_length: int):
    from keras_bert.text.preprocessor import BertPreprocessor

    return BertPreprocessor(tokenizer, int(seq_length))


def _seed(seed: int | None) -> int:
    """`seed`, or one drawn from NumPy's global generator (seeded by `set_random_seed`)."""
    return int(np.random.randint(0, 2**31 - 1)) if seed is None else int(seed)


__all__ = ["MaskingConfig", "PretrainingRecords", "TextPretrainer", "as_documents"]
