"""Checkpoint layouts as objects, one per layout, in one list (`FORMATS`): a keras_bert model
directory, a TF Hub / Kaggle BERT SavedModel, a Model Garden TF2 checkpoint, Google's TF1
release, a keras-hub preset and a Hugging Face directory. Each says
how to recognise a directory of its layout, open it in memory (`open`: its vocabulary,
tokenizer rules and encoder, `opened.Checkpoint`), write an encoder in it, and carry its
pretraining heads; `conversion.py` and `load_pretrainer` dispatch on them. A fine-tuned task
head beside the encoder is no layout's business: the task kinds read it from the opened
checkpoint (`keras_bert.tasks.registry`). `detect_format(path)` names the layout of a
directory, `checkpoint_format(name)` looks one up by name, `open_checkpoint(src)` opens a
directory or hub id.
"""

from __future__ import annotations

import json
import os

from keras_bert.checkpoints import google, huggingface, keras_hub, model_garden, tf_hub
from keras_bert.checkpoints.model_dir import MANIFEST
from keras_bert.checkpoints.opened import Checkpoint, ModelGardenCheckpoint


def infer_lower_case(path: str, vocab_file: str) -> bool:
    """Whether a checkpoint's tokenizer lower-cases: HF's `tokenizer_config.json` says so;
    otherwise a vocab with no upper-case letter outside `[SPECIAL]` tokens is uncased."""
    tok_config = os.path.join(path, "tokenizer_config.json")
    if os.path.exists(tok_config):
        with open(tok_config, encoding="utf-8") as f:
            value = json.load(f).get("do_lower_case")
        if value is not None:
            return bool(value)
    with open(vocab_file, encoding="utf-8") as f:
        for line in f:
            token = line.rstrip("\n")
            if not (token.startswith("[") and token.endswith("]")) and token != token.lower():
                return False
    return True


class CheckpointFormat:
    """One checkpoint layout. `name`: how options and metadata spell it; `marker`: the file
    that marks a directory of it; `writable`: `convert --to` writes it."""

    name = ""
    marker = ""
    description = ""
    writable = True

    def holds(self, path: str, files: set[str]) -> bool:
        """Whether directory `path` (holding `files`) is a checkpoint of this layout."""
        return self.marker in files

    def vocab(self, path: str) -> tuple[str, bool]:
        """`(vocab file, lower_case)`: a `vocab.txt` beside the weights, its casing read
        from the tokenizer config or inferred from the vocabulary."""
        vocab_file = os.path.join(path, "vocab.txt")
        if not os.path.exists(vocab_file):
            raise FileNotFoundError(f"No vocab.txt in {path}")
        return vocab_file, infer_lower_case(path, vocab_file)

    def rules(self, path: str) -> str:
        """The tokenizer rules (`keras_bert.text.tokenizer`) of a checkpoint of this layout."""
        return self.name

    def read_encoder(self, path: str, dtype=None):
        """The `BertEncoder` stored in `path`."""
        raise NotImplementedError(self.name)

    def open(self, path: str, lower_case: bool | None = None,
             rules: str | None = None) -> Checkpoint:
        """`path` opened in memory (`opened.Checkpoint`): its vocabulary, its casing (or
        `lower_case`) and its tokenizer rules (or `rules`); the encoder is read when asked."""
        vocab_file, found = self.vocab(path)
        return self._opened(path, vocab_file, found if lower_case is None else lower_case,
                            rules or self.rules(path))

    def _opened(self, path: str, vocab_file: str, lower_case: bool, rules: str) -> Checkpoint:
        """The `Checkpoint` of this layout (a subclass where it holds more to read once)."""
        return Checkpoint(path, self, vocab_file, lower_case, rules)

    def write_encoder(self, encoder, dest: str, vocab_file: str, lower_case: bool) -> str:
        """Writes `encoder` and its vocabulary as a checkpoint of this layout; returns
        `dest`."""
        raise NotImplementedError(self.name)

    def convert_with_heads(self, checkpoint: Checkpoint, dest: str,
                           encoder_only: bool = False):
        """Writes the opened `checkpoint` as the keras_bert model directory `dest` with the
        pretraining heads it holds (unless `encoder_only`), returning the `ModelDir`; None:
        the encoder alone is written."""
        return None

    def write_with_heads(self, src: str, source: CheckpointFormat, dest: str,
                         lower_case: bool | None) -> str | None:
        """Writes checkpoint `src` (of layout `source`) with its head in this layout;
        returns `dest`, or None to write the encoder alone."""
        return None

    def load_pretrainer(self, path: str, dtype=None, **kwargs):
        """A `BertPretrainer` of the encoder in `path`, with fresh pretraining heads."""
        from keras_bert.models.pretrainer import BertPretrainer

        return BertPretrainer(self.read_encoder(path, dtype=dtype), **kwargs)

    def __repr__(self) -> str:
        return f"<checkpoint format {self.name}>"


class KerasBertFormat(CheckpointFormat):
    """A keras_bert model directory (`keras_bert.json`, the encoder, its tokenizer)."""

    name, marker, writable = "keras_bert", MANIFEST, False
    description = f"a keras_bert model directory ({MANIFEST})"

    def vocab(self, path):
        from keras_bert.checkpoints.model_dir import load_model_dir

        source = load_model_dir(path)
        return source.vocab_file, source.lower_case

    def rules(self, path):
        from keras_bert.checkpoints.model_dir import load_model_dir

        return load_model_dir(path).rules

    def read_encoder(self, path, dtype=None):
        from keras_bert.checkpoints.model_dir import load_model_dir

        return load_model_dir(path).load_encoder(dtype=dtype)

    def load_pretrainer(self, path, dtype=None, **kwargs):
        """The encoder with the pretraining heads `convert` or `pretrain` saved beside it
        (`pretraining_heads.weights.h5`), else fresh ones."""
        from keras_bert.checkpoints import pretraining_heads

        return pretraining_heads.load_model_dir_pretrainer(path, dtype=dtype, **kwargs)


class _ModelGardenVariables(CheckpointFormat):
    """A layout holding Model Garden's encoder variables (a TF Hub SavedModel, a Model Garden
    checkpoint): both keep a masked LM head the same way; `named` and `activation` say how
    each reads its variables and its activation."""

    def named(self, path: str) -> dict:
        """The variables of `path` by Model Garden's names."""
        raise NotImplementedError(self.name)

    def activation(self, path: str) -> str:
        """The hidden activation of the encoder in `path`."""
        raise NotImplementedError(self.name)

    def encoder_of(self, named: dict, path: str, dtype=None):
        """The `BertEncoder` of the variables `named` read from `path` (what `read_encoder`
        reads, from variables read once: `opened.ModelGardenCheckpoint`)."""
        raise NotImplementedError(self.name)

    def rules(self, path):
        """Google's: the released BERTs these layouts hold were pretrained with them."""
        return "google"

    def _opened(self, path, vocab_file, lower_case, rules):
        return ModelGardenCheckpoint(path, self, vocab_file, lower_case, rules)

    def convert_with_heads(self, checkpoint, dest, encoder_only=False):
        """An `export_type=model_with_mlm` SavedModel or a `BertPretrainerV2` checkpoint
        keeps its masked LM head."""
        if encoder_only or model_garden.MLM_MARKER not in checkpoint.named:
            return None
        from keras_bert.checkpoints import pretraining_heads

        return pretraining_heads.convert_model_garden_with_heads(
            checkpoint, self.activation(checkpoint.path), dest)

    def load_pretrainer(self, path, dtype=None, **kwargs):
        """The encoder with the masked LM head the variables hold (the next sentence head
        fresh, with a warning), else fresh heads."""
        from keras_bert.checkpoints import pretraining_heads
        from keras_bert.models.pretrainer import BertPretrainer

        named, activation = self.named(path), self.activation(path)
        if model_garden.MLM_MARKER not in named:
            return BertPretrainer(model_garden.load_named_encoder(named, path, activation,
                                                                  dtype=dtype), **kwargs)
        pretrainer, report = pretraining_heads.model_garden_pretrainer(named, path, activation,
                                                                       dtype, **kwargs)
        pretraining_heads.warn_initialised(report, path)
        return pretrainer


class TfHubFormat(_ModelGardenVariables):
    """A TF Hub / Kaggle `tensorflow/bert` encoder SavedModel (`saved_model.pb`,
    `variables/`, `assets/vocab.txt`), as Model Garden's `export_tfhub` writes it."""

    name, marker, writable = "tf_hub", "saved_model.pb", False
    description = ("a TF Hub / Kaggle BERT encoder SavedModel (saved_model.pb + variables/ + "
                   "assets/vocab.txt)")

    def vocab(self, path):
        return tf_hub.read_vocab(path)

    def named(self, path):
        return tf_hub.read_variables(path)

    def activation(self, path):
        return tf_hub.read_activation(path)

    def read_encoder(self, path, dtype=None):
        return tf_hub.load_saved_model_dir(path, dtype=dtype)

    def encoder_of(self, named, path, dtype=None):
        return model_garden.load_named_encoder(named, f"SavedModel {path}",
                                               self.activation(path), dtype=dtype)


class ModelGardenFormat(_ModelGardenVariables):
    """A Model Garden TF2 (object-based) checkpoint of a BERT encoder, with `vocab.txt` (and
    Model Garden's `bert_config.json`) beside it."""

    name, marker = "model_garden", "checkpoint"
    description = ("a Model Garden TF2 checkpoint (object-based *.index holding an encoder, "
                   "+ vocab.txt)")

    def holds(self, path, files):
        return any(f.endswith(".index") for f in files) \
            and model_garden.checkpoint_prefix(path) is not None

    def named(self, path):
        return model_garden.read_named(model_garden.checkpoint_prefix(path))

    def activation(self, path):
        return model_garden.config_activation(path)

    def read_encoder(self, path, dtype=None):
        return model_garden.load_checkpoint_dir(path, dtype=dtype)

    def encoder_of(self, named, path, dtype=None):
        return model_garden.load_named_encoder(
            named, f"checkpoint {model_garden.checkpoint_prefix(path)}", self.activation(path),
            dtype=dtype)

    def write_encoder(self, encoder, dest, vocab_file, lower_case):
        return model_garden.save_checkpoint_dir(encoder, dest, vocab_file)


class GoogleFormat(CheckpointFormat):
    """Google's TF1 release: `bert_config.json`, `bert_model.ckpt.*`, `vocab.txt`."""

    name, marker = "google", "bert_config.json"
    description = "a Google BERT checkpoint (bert_config.json + bert_model.ckpt.*)"

    def read_encoder(self, path, dtype=None):
        return google.load_google_dir(path, dtype=dtype)

    def write_encoder(self, encoder, dest, vocab_file, lower_case):
        return google.save_google_dir(encoder, dest, vocab_file)

    def convert_with_heads(self, checkpoint, dest, encoder_only=False):
        """A release holding the masked LM head keeps its `cls/` pretraining heads."""
        from keras_bert.checkpoints import pretraining_heads

        if encoder_only or not pretraining_heads.google_has_heads(checkpoint.path):
            return None
        return pretraining_heads.convert_google_with_heads(checkpoint, dest)

    def load_pretrainer(self, path, dtype=None, **kwargs):
        from keras_bert.checkpoints import pretraining_heads

        return pretraining_heads.load_google_pretrainer(path, dtype=dtype, **kwargs)


class KerasHubFormat(CheckpointFormat):
    """A keras-hub preset (`config.json`, `model.weights.h5`, `metadata.json`)."""

    name, marker = "keras_hub", keras_hub.METADATA_FILE
    description = (f"a keras-hub preset (config.json + {keras_hub.WEIGHTS_FILE} + "
                   f"{keras_hub.METADATA_FILE})")

    def holds(self, path, files):
        return keras_hub.is_keras_hub_preset(path)

    def vocab(self, path):
        return keras_hub.read_preset_tokenizer(path)

    def rules(self, path):
        return keras_hub.RULES

    def read_encoder(self, path, dtype=None):
        return keras_hub.load_keras_hub_preset(path, dtype=dtype)

    def write_encoder(self, encoder, dest, vocab_file, lower_case):
        return keras_hub.save_keras_hub_preset(encoder, dest, vocab_file, lower_case)


class HuggingFaceFormat(CheckpointFormat):
    """A Hugging Face directory: `config.json` and weights (`huggingface.WEIGHT_FILES`)."""

    name, marker = "huggingface", "config.json"
    description = (f"Hugging Face weights (config.json + one of "
                   f"{huggingface.WEIGHT_FILES})")

    def holds(self, path, files):
        return self.marker in files and bool(files & set(huggingface.WEIGHT_FILES))

    def read_encoder(self, path, dtype=None):
        return huggingface.load_hf_dir(path, dtype=dtype)

    def write_encoder(self, encoder, dest, vocab_file, lower_case):
        return huggingface.save_hf_dir(encoder, dest, vocab_file, lower_case)

    def _opened(self, path, vocab_file, lower_case, rules):
        from keras_bert.checkpoints.hf_architectures import HuggingFaceCheckpoint, read_hf_config

        return HuggingFaceCheckpoint(path, self, vocab_file, lower_case, rules,
                                     config=read_hf_config(path))

    def convert_with_heads(self, checkpoint, dest, encoder_only=False):
        """A masked LM / pretraining model keeps its heads (`hf_architectures.convert_hf`; a
        task head is refused: `keras_bert.tasks.task_conversion` keeps it); encoder-only,
        the architecture is still recorded."""
        from keras_bert.checkpoints.hf_architectures import convert_hf

        return convert_hf(checkpoint, dest, encoder_only=encoder_only)

    def write_with_heads(self, src, source, dest, lower_case):
        """A keras_bert model directory with pretraining heads becomes `BertForPreTraining`
        (or `BertForMaskedLM`); task models go through `keras_bert.tasks.task_conversion`."""
        if not isinstance(source, KerasBertFormat):
            return None
        from keras_bert.checkpoints.hf_architectures import save_hf_pretraining_dir

        return save_hf_pretraining_dir(src, dest, lower_case)

    def load_pretrainer(self, path, dtype=None, **kwargs):
        from keras_bert.checkpoints import pretraining_heads

        return pretraining_heads.load_hf_pretrainer(path, dtype=dtype, **kwargs)


# Detection order: Model Garden's releases hold a bert_config.json too, so its layout goes
# before Google's (a TF1 checkpoint has no object graph); a keras-hub preset also holds a
# config.json, so it goes before Hugging Face's.
FORMATS: tuple[CheckpointFormat, ...] = (KerasBertFormat(), TfHubFormat(), ModelGardenFormat(),
                                         GoogleFormat(), KerasHubFormat(), HuggingFaceFormat())
WRITABLE = tuple(f.name for f in FORMATS if f.writable)


def detect_format(path: str) -> CheckpointFormat:
    """The layout of checkpoint directory `path` (a `CheckpointFormat`; `.name` is one of
    `keras_bert`, `tf_hub`, `model_garden`, `google`, `keras_hub`, `huggingface`)."""
    if not os.path.isdir(path):
        raise FileNotFoundError(f"Not a directory: {path}")
    files = set(os.listdir(path))
    for fmt in FORMATS:
        if fmt.holds(path, files):
            return fmt
    raise ValueError(f"{path} holds none of: "
                     + "; ".join(f.description for f in FORMATS))


def checkpoint_format(name: str) -> CheckpointFormat:
    """The layout called `name` (`keras-hub` reads as `keras_hub`)."""
    for fmt in FORMATS:
        if fmt.name == name.replace("-", "_"):
            return fmt
    raise ValueError(f"Unknown checkpoint layout {name!r}: expected one of "
                     f"{[f.name for f in FORMATS]}")


def open_checkpoint(src: str, lower_case: bool | None = None,
                    rules: str | None = None) -> Checkpoint:
    """The checkpoint directory or hub id `src` (`hub_ids.local_checkpoint`) opened in memory
    (`CheckpointFormat.open`), read as `lower_case` and with `rules` where given."""
    from keras_bert.checkpoints.hub_ids import local_checkpoint

    src = local_checkpoint(src)
    return detect_format(src).open(src, lower_case, rules)


def load_pretrainer(path: str, dtype=None, **kwargs):
    """The `BertPretrainer` to continue pretraining from directory `path`: a Google release
    or a Hugging Face `BertForPreTraining` / `BertForMaskedLM` directory give the encoder AND
    their pretraining heads (absent heads keep their initial values, with a warning); so does
    a keras_bert model directory with `pretraining_heads.weights.h5` (written by `convert`
    from such a directory, and by `pretrain`); one without, or a keras-hub preset, gets
    fresh heads. `kwargs` go to `BertPretrainer` (e.g. `nsp_loss_weight`). `path` may be a
    hub id (`hub_ids.local_checkpoint`)."""
    from keras_bert.checkpoints.hub_ids import local_checkpoint

    path = local_checkpoint(path)
    return detect_format(path).load_pretrainer(path, dtype=dtype, **kwargs)
