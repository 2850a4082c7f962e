"""`TextPretrainer`: BERT's pretraining (masked LM tied to the word embeddings + next
sentence prediction) on raw documents, as a Keras model a Python user fits.

It owns a `BertPretrainer` (ids in: `keras_bert.models`) and the `BertPreprocessor` whose
tokenizer and sequence length make its data, and runs the data pipeline `keras-bert
pretrain` runs (`keras_bert.pretraining.dataset`: NSP pairs by the original rules, new pairs
and masks every epoch, reproducibly from the seed):

- `fit(documents, epochs=..., steps_per_epoch=...)`: BERT's AdamW (or LAMB) with warmup and
  linear decay sized from the fit's own steps, unless compiled with another optimizer;
  gradient accumulation with `compile(accumulation_steps=K)`. The same corpus, seed and
  settings end with the weights of `keras-bert pretrain`.
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
from keras_bert.pretraining.dataset import (
    PretrainingOptions,
    pretraining_dataset,
    tokenize_documents,
)

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

    Build one with `from_preset` (random weights, any vocabulary) or `from_pretrained` (a
    checkpoint, with its pretraining heads when it has them).
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

    # ----- building -----------------------------------------------------------------------

    @classmethod
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
        from keras_bert.data.corpus import DEFAULT_VOCAB
        from keras_bert.models.pretrainer import BertPretrainer
        from keras_bert.text.preprocessor import BertPreprocessor
        from keras_bert.text.rules import DEFAULT_RULES
        from keras_bert.text.tokenizer import BertTokenizer
        from keras_bert.training.precision import training_precision

        if seed is not None:
            keras.utils.set_random_seed(int(seed))
        tokenizer = BertTokenizer(vocab or DEFAULT_VOCAB, lower_case=lower_case if vocab else True,
                                  rules=rules or DEFAULT_RULES)
        pretrainer = BertPretrainer.for_vocabulary(preset, tokenizer, seq_length,
                                                   training_precision(precision),
                                                   nsp_loss_weight)
        return cls(pretrainer, BertPreprocessor(tokenizer, int(seq_length)), masking)

    @classmethod
    def from_pretrained(cls, source: str, seq_length: int = DEFAULT_SEQ_LENGTH,
                        masking: MaskingConfig | None = None, nsp_loss_weight: float = 1.0,
                        rules: str | None = None, precision: str | None = None,
                        seed: int | None = None) -> TextPretrainer:
        """The checkpoint `source` (a keras_bert model directory, Google, Hugging Face or
        keras-hub checkpoint; `keras-bert pretrain --init` reads the same) with its
        pretraining heads where it has them (Google's and Hugging Face's releases, the
        directories `convert` and `pretrain` write), else fresh ones, and its tokenizer.
        `source` may be a hub id (`hf://...`, `kaggle://...`), fetched once."""
        from keras_bert.checkpoints.conversion import checkpoint_rules, checkpoint_vocab
        from keras_bert.checkpoints.formats import load_pretrainer
        from keras_bert.checkpoints.hub_ids import local_checkpoint
        from keras_bert.text.preprocessor import BertPreprocessor
        from keras_bert.text.tokenizer import BertTokenizer
        from keras_bert.training.precision import training_precision

        if seed is not None:
            keras.utils.set_random_seed(int(seed))
        source = local_checkpoint(source)
        vocab_file, lower_case = checkpoint_vocab(source)
        tokenizer = BertTokenizer(vocab_file, lower_case=lower_case,
                                  rules=rules or checkpoint_rules(source))
        pretrainer = load_pretrainer(source, dtype=training_precision(precision),
                                     nsp_loss_weight=nsp_loss_weight)
        return cls(pretrainer, BertPreprocessor(tokenizer, int(seq_length)), masking)

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
        defaults to the device's choice (`keras_bert.training.backends.default_jit_compile`)."""
        from keras_bert.training.backends import default_jit_compile
        from keras_bert.training.optimizer import OPTIMIZERS

        name = optimizer or "adamw"
        if isinstance(name, str):
            if name not in OPTIMIZERS:
                raise ValueError(f"optimizer must be one of {OPTIMIZERS} or a Keras "
                                 f"optimizer, got {name!r}")
            self._optimizer_settings = {"learning_rate": float(learning_rate),
                                        "warmup_steps": warmup_steps,
                                        "weight_decay": float(weight_decay),
                                        "optimizer": name}
            optimizer = None
        else:
            self._optimizer_settings = None
        self._compile_arguments = {
            "accumulation_steps": int(accumulation_steps),
            "jit_compile": default_jit_compile() if jit_compile is None else jit_compile,
            **kwargs}
        if optimizer is not None:
            self.pretrainer.compile(optimizer=optimizer, **self._compile_arguments)
        self.compiled = True

    def fit(self, x=None, batch_size: int | None = None, epochs: int = 1,
            steps_per_epoch: int | None = None, validation_data=None,
            validation_steps: int = 20, seed: int | None = None, **kwargs):
        """Pretrains on documents `x` (see the module docstring) for `epochs` epochs of
        `steps_per_epoch` updates (default: the full batches of one pass over the
        documents' NSP pairs). The stream is `keras-bert pretrain`'s: endless, new pairs
        and masks every pass, from `seed` (default: drawn from NumPy's global generator).
        `validation_data`: held-out documents, `validation_steps` batches of them scored
        after every epoch. Returns Keras' `History`."""
        from keras_bert.training.optimizer import create_optimizer
        from keras_bert.training.resume import fit_from_step

        if "y" in kwargs or "shuffle" in kwargs:
            raise TypeError("fit takes documents only (the labels are made from them) and "
                            "shuffles with its own seed (seed=)")
        if int(epochs) < 1:
            raise ValueError(f"epochs must be at least 1, got {epochs}")
        if not self.compiled:
            self.compile()
        batch_size = int(batch_size or DEFAULT_BATCH_SIZE)
        accumulation = self._compile_arguments["accumulation_steps"]
        if seed is None:
            seed = int(np.random.randint(0, 2**31 - 1))
        options = self.masking.options(self.preprocessor.seq_length, seed)
        documents = tokenize_documents(as_documents(x), self.tokenizer)
        update_batch = batch_size * accumulation
        if steps_per_epoch is None:
            steps_per_epoch = _pairs_in_one_pass(documents, options) // update_batch
        if int(steps_per_epoch) < 1:
            raise ValueError(f"the documents do not fill one update of {update_batch} "
                             "examples; pass fewer, or give steps_per_epoch")
        total = int(epochs) * int(steps_per_epoch)
        if self._optimizer_settings is not None:
            self.pretrainer.compile(
                optimizer=create_optimizer(total_steps=total, **self._optimizer_settings),
                **self._compile_arguments)
        train = pretraining_dataset(documents, self.tokenizer, update_batch, options,
                                    dynamic=True, drop_remainder=True).repeat()
        if validation_data is not None:
            validation_data = self._held_out(validation_data, batch_size, validation_steps,
                                             seed)
        history = keras.callbacks.History()
        history.history = fit_from_step(
            self.pretrainer, train, epochs=int(epochs), steps_per_epoch=int(steps_per_epoch),
            start_step=0, validation_data=validation_data, **kwargs)
        return history

    def evaluate(self, x=None, batch_size: int | None = None, steps: int = 20,
                 seed: int = 12345, **kwargs) -> dict:
        """Held-out scores on documents `x` (`steps` batches, pairs and masks from `seed`):
        the losses and accuracies, `mlm_frequency_baseline` (always the most frequent
        masked token), `nsp_majority_baseline` (always the commoner NSP label) and
        `examples`, as `keras-bert pretrain`'s `metrics.json` reports them."""
        from keras_bert.pretraining.evaluation import (
            mlm_frequency_baseline,
            nsp_majority_baseline,
        )

        if isinstance(x, tf.data.Dataset) or kwargs:
            return self.pretrainer.evaluate(x, batch_size=batch_size, **kwargs)
        if not self.pretrainer.compiled:
            self.pretrainer.compile()
        dataset = self._held_out(x, int(batch_size or DEFAULT_BATCH_SIZE), steps, seed)
        if dataset is None:
            raise ValueError("the documents make no evaluation batch")
        scores = {k: float(v) for k, v in self.pretrainer.evaluate(
            dataset, return_dict=True, verbose=0).items()}
        scores["mlm_frequency_baseline"] = mlm_frequency_baseline(dataset)
        majority, examples = nsp_majority_baseline(dataset)
        return {**scores, "nsp_majority_baseline": majority, "examples": examples}

    def _held_out(self, documents, batch_size: int, steps: int, seed: int):
        """`pretrain`'s evaluation set: the same pairs and masks on every pass."""
        from keras_bert.pretraining.evaluation import with_known_length

        options = self.masking.options(self.preprocessor.seq_length, seed)
        tokens = tokenize_documents(as_documents(documents), self.tokenizer)
        dataset = pretraining_dataset(tokens, self.tokenizer, batch_size, options,
                                      dynamic=False)
        return with_known_length(dataset.take(int(steps)))

    # ----- using --------------------------------------------------------------------------

    def predict(self, x, top_k: int = 5, batch_size: int | None = None, **kwargs) -> dict:
        """The `top_k` likeliest word pieces for each `[MASK]` of texts `x` (written as
        `[MASK]` in the text): `tokens` (`[texts, masks, top_k]` strings, "" past a text's
        masks), `probabilities` (the same shape) and `num_masks` (per text). Masks beyond
        the sequence length are not read."""
        from keras_bert.text.tokenizer import BertTokenizer

        if kwargs.pop("verbose", None) not in (None, 0, "auto") or kwargs:
            raise TypeError(f"unexpected arguments {sorted(kwargs)}")
        if isinstance(x, (str, bytes)):
            raise TypeError("predict takes a list of texts, not a single string")
        texts = list(x)
        if not texts or not all(isinstance(t, str) for t in texts):
            raise ValueError("predict takes a non-empty list of texts (strings)")
        tokenizer = self.tokenizer
        marking = BertTokenizer(tokenizer.vocab, lower_case=tokenizer.lower_case,
                                preserve_special_tokens=True, rules=tokenizer.rules)
        mask_id = tokenizer.special_token_ids["mask"]
        size = int(batch_size or DEFAULT_BATCH_SIZE)
        tokens, probabilities, counts = [], [], []
        for start in range(0, len(texts), size):
            chunk = tf.constant(texts[start:start + size])
            packed = self.preprocessor.pack([marking.tokenize(chunk)])
            ids = packed["input_word_ids"].numpy()
            masks = [np.flatnonzero(row == mask_id) for row in ids]
            width = max(1, max(len(m) for m in masks))
            positions = np.zeros((len(ids), width), np.int32)
            for row, found in enumerate(masks):
                positions[row, :len(found)] = found
            logits = self.pretrainer({**packed, "masked_lm_positions": positions},
                                     training=False)["mlm_logits"]
            probs = keras.ops.convert_to_numpy(keras.ops.softmax(
                keras.ops.cast(logits, "float32"), axis=-1))
            best = np.argsort(-probs, axis=-1)[..., :top_k]
            for row, found in enumerate(masks):
                counts.append(len(found))
                tokens.append([[tokenizer.vocab[i] if m < len(found) else "" for i in ids_]
                               for m, ids_ in enumerate(best[row])])
                probabilities.append([[float(probs[row, m, i]) if m < len(found) else 0.0
                                       for i in ids_] for m, ids_ in enumerate(best[row])])
        width = max((len(t) for t in tokens), default=1)
        pad = [""] * top_k
        return {"tokens": np.array([t + [pad] * (width - len(t)) for t in tokens], dtype=str),
                "probabilities": np.array([p + [[0.0] * top_k] * (width - len(p))
                                           for p in probabilities], np.float32),
                "num_masks": np.array(counts, np.int32)}

    def save(self, filepath, overwrite: bool = True, **kwargs):
        """`*.keras`: Keras' archive. Otherwise the keras_bert model directory `keras-bert
        pretrain` writes (`model/`: the encoder, its vocabulary and tokenizer settings, the
        pretraining heads beside it); returns its path."""
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
            rules=tokenizer.rules, metadata={"pretrained_steps": steps},
            write_extra=lambda directory: save_pretraining_heads(self.pretrainer,
                                                                 directory)).path


def as_documents(x) -> list[list[str]]:
    """Documents of sentences from `x`: a corpus file path or a list of them (the formats
    `keras-bert pretrain --corpus` reads), or documents (each a list of sentences, or one
    string with a sentence per line). Blank sentences are dropped; at least two documents
    (NSP's random next sentences come from another one)."""
    from keras_bert.data.corpus import guess_format
    from keras_bert.data.corpus import read_documents as read_file

    if isinstance(x, (str, os.PathLike)):
        x = [x]
    if x is None or isinstance(x, tf.data.Dataset):
        raise TypeError("documents are a corpus file path, a list of them, or a list of "
                        "documents (lists of sentences, or strings with one per line)")
    items = list(x)
    if items and all(isinstance(i, (str, os.PathLike)) and os.path.isfile(i) for i in items):
        documents = [d for path in items for d in read_file(str(path), guess_format(str(path)))]
    else:
        documents = []
        for number, item in enumerate(items):
            sentences = item.splitlines() if isinstance(item, str) else item
            if isinstance(sentences, (bytes, dict)) or not all(
                    isinstance(s, str) for s in sentences):
                raise TypeError(f"document {number} is not a list of sentences (strings) "
                                f"nor a string: {type(item).__name__}")
            sentences = [s.strip() for s in sentences if s.strip()]
            if sentences:
                documents.append(sentences)
    if len(documents) < 2:
        raise ValueError(f"pretraining needs at least 2 documents with text, got "
                         f"{len(documents)}")
    return documents


def _pairs_in_one_pass(token_documents, options: PretrainingOptions) -> int:
    """The NSP pairs the first pass over the documents makes (what one epoch holds)."""
    from keras_bert.pretraining.nsp import as_int_documents, create_nsp_examples

    return len(create_nsp_examples(as_int_documents(token_documents), options.seq_length,
                                   options.short_seq_prob, options.dupe_factor,
                                   seed=options.seed))


__all__ = ["MaskingConfig", "TextPretrainer", "as_documents"]
