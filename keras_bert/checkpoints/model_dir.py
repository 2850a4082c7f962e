"""keras_bert's own model directory: what `keras-bert convert` writes and every command loads.

    MODEL_DIR/
      keras_bert.json        config, tokenizer settings, weight file, provenance
      vocab.txt              WordPiece vocabulary
      encoder.weights.h5     Keras weights of the `BertEncoder`

The manifest's `tokenizer` block (casing and rules: `google` or `huggingface`; a directory
written before rules were recorded reads as `google`) and `preprocessor` block (sequence
lengths) with `vocab.txt` rebuild the model's one `BertPreprocessor` (`ModelDir.preprocessor()`).
Its `precision` is the Keras dtype policy the model computes in (`float32`, `mixed_bfloat16`,
`mixed_float16`): the encoder is rebuilt in it unless a caller asks for another, so a model
trained in mixed precision answers after loading as it did before saving (a directory
written before the precision was recorded reads as `float32`, what it was loaded in then).
"""

from __future__ import annotations

import dataclasses
import json
import os
import shutil
from collections.abc import Callable, Sequence
from typing import Any

from keras_bert.config import BertConfig
from keras_bert.models.encoder import BertEncoder
from keras_bert.text.rules import DEFAULT_RULES, tokenizer_rules

MANIFEST = "keras_bert.json"
FORMAT_VERSION = 1
ENCODER_WEIGHTS = "encoder.weights.h5"


@dataclasses.dataclass
class ModelDir:
    """A keras_bert model directory: its config, vocab and tokenizer settings."""

    path: str
    config: BertConfig
    lower_case: bool
    metadata: dict[str, Any] = dataclasses.field(default_factory=dict)
    rules: str = DEFAULT_RULES
    precision: str = "float32"

    @property
    def vocab_file(self) -> str:
        """Absolute path of `vocab.txt`."""
        return os.path.join(self.path, "vocab.txt")

    def load_encoder(self, dtype=None) -> BertEncoder:
        """The `BertEncoder` with this directory's weights, computing in `dtype` (a Keras
        dtype policy or its name; None: the recorded `precision`)."""
        encoder = BertEncoder(self.config, dtype=dtype or self.precision)
        encoder.load_weights(os.path.join(self.path, ENCODER_WEIGHTS))
        return encoder

    def tokenizer(self, **kwargs):
        """The `keras_bert.text.BertTokenizer` for this model's vocab, casing and rules."""
        from keras_bert.text.tokenizer import BertTokenizer

        return BertTokenizer(self.vocab_file, lower_case=self.lower_case, rules=self.rules,
                             **kwargs)

    def with_rules(self, rules: str | None) -> ModelDir:
        """This directory read with other tokenizer rules (`None`: its own)."""
        return self if rules is None else dataclasses.replace(
            self, rules=tokenizer_rules(rules).name)

    @property
    def preprocessor_settings(self) -> dict[str, int | None]:
        """`seq_length` and `max_length` of the model's preprocessor: as saved, else the
        task's training length, else padding to the longest text of at most 512 tokens."""
        saved = self.metadata.get("preprocessor") or {}
        if saved:
            return {"seq_length": saved.get("seq_length"), "max_length": saved["max_length"]}
        trained = (self.metadata.get("task") or {}).get("seq_length")
        if trained:
            return {"seq_length": int(trained), "max_length": int(trained)}
        return {"seq_length": None,
                "max_length": min(512, self.config.max_position_embeddings)}

    def preprocessor(self, tokenizer=None):
        """The model's `keras_bert.text.BertPreprocessor` (see `preprocessor_settings`)."""
        from keras_bert.text.preprocessor import BertPreprocessor

        return BertPreprocessor(tokenizer or self.tokenizer(), **self.preprocessor_settings)


def save_model_dir(encoder: BertEncoder, path: str, vocab: str | Sequence[str], lower_case: bool,
                   metadata: dict[str, Any] | None = None, preprocessor=None,
                   rules: str | None = None,
                   write_extra: Callable[[str], Any] | None = None) -> ModelDir:
    """Writes `encoder`, its vocab and tokenizer settings as a keras_bert model directory.

    `vocab` is a `vocab.txt` file to copy, or the tokens themselves (a tokenizer's `vocab`).

    `preprocessor` (a `BertPreprocessor`) records the sequence lengths the model was
    trained with under `metadata.preprocessor`; its casing must be `lower_case`, and its
    tokenizer rules are recorded (else `rules`, else `google`).

    The directory is written beside its final place and renamed into it, so an interrupted
    write never leaves a half-written model directory; `write_extra(directory)` writes more
    files into it before the rename (e.g. the pretraining heads, a task head). A directory
    it replaces is moved aside first and removed only once the new one is in place. The
    `ModelDir` returned is parsed from the manifest's bytes as written, as `load_model_dir`
    parses them: nothing is read back from the disk.
    """
    path = os.path.abspath(path)
    is_model_dir = os.path.exists(os.path.join(path, MANIFEST))
    if os.path.isdir(path) and os.listdir(path) and not is_model_dir:
        raise FileExistsError(f"{path} exists and is not a keras_bert model directory; "
                              "refusing to overwrite it")
    metadata = dict(metadata or {})
    if preprocessor is not None:
        if preprocessor.tokenizer.lower_case != bool(lower_case):
            raise ValueError("the preprocessor's casing differs from lower_case")
        if rules is not None and tokenizer_rules(rules).name != preprocessor.tokenizer.rules:
            raise ValueError("the preprocessor's tokenizer rules differ from rules")
        rules = preprocessor.tokenizer.rules
        metadata["preprocessor"] = {"seq_length": preprocessor.seq_length,
                                    "max_length": preprocessor.max_length}
    tmp = f"{path}.tmp-{os.getpid()}"
    shutil.rmtree(tmp, ignore_errors=True)
    os.makedirs(tmp)
    if isinstance(vocab, (str, os.PathLike)):
        shutil.copyfile(vocab, os.path.join(tmp, "vocab.txt"))
    else:
        from keras_bert.text.vocab_builder import save_vocab

        save_vocab(list(vocab), os.path.join(tmp, "vocab.txt"))
    encoder.save_weights(os.path.join(tmp, ENCODER_WEIGHTS))
    manifest = {"format_version": FORMAT_VERSION, "config": encoder.config.to_dict(),
                "precision": encoder.dtype_policy.name,
                "tokenizer": {"vocab_file": "vocab.txt", "lower_case": bool(lower_case),
                              "rules": tokenizer_rules(rules or DEFAULT_RULES).name},
                "weights": ENCODER_WEIGHTS, "metadata": metadata}
    text = json.dumps(manifest, indent=2) + "\n"
    with open(os.path.join(tmp, MANIFEST), "w", encoding="utf-8") as f:
        f.write(text)
    if write_extra is not None:
        write_extra(tmp)
    old = f"{path}.old-{os.getpid()}"
    if os.path.exists(path):
        shutil.rmtree(old, ignore_errors=True)
        os.replace(path, old)
    os.replace(tmp, path)
    shutil.rmtree(old, ignore_errors=True)
    return _model_dir(path, json.loads(text), os.path.join(path, MANIFEST))


def load_model_dir(path: str) -> ModelDir:
    """Reads a keras_bert model directory (see `save_model_dir`), local or by hub id
    (`hub_ids.local_checkpoint`: a fine-tuned or converted directory kept on a hub is read
    by `load`, `predict`, `encode` and `export` as a local one)."""
    from keras_bert.checkpoints.hub_ids import local_checkpoint

    path = local_checkpoint(path)
    manifest_path = os.path.join(path, MANIFEST)
    if not os.path.exists(manifest_path):
        raise FileNotFoundError(
            f"{path} is not a keras_bert model directory (no {MANIFEST}); convert a Google or "
            "Hugging Face checkpoint with `keras-bert convert SRC DEST` first")
    with open(manifest_path, encoding="utf-8") as f:
        return _model_dir(path, json.load(f), manifest_path)


def _model_dir(path: str, manifest: dict, manifest_path: str) -> ModelDir:
    """The `ModelDir` a manifest describes (checked: its format version)."""
    if manifest.get("format_version") != FORMAT_VERSION:
        raise ValueError(f"{manifest_path}: unsupported format_version "
                         f"{manifest.get('format_version')!r} (expected {FORMAT_VERSION})")
    return ModelDir(path=os.path.abspath(path), config=BertConfig.from_dict(manifest["config"]),
                    lower_case=manifest["tokenizer"]["lower_case"],
                    metadata=manifest.get("metadata", {}),
                    precision=manifest.get("precision", "float32"),
                    rules=tokenizer_rules(manifest["tokenizer"].get("rules", DEFAULT_RULES)).name)


def load_encoder(path: str, dtype=None) -> BertEncoder:
    """Shortcut: the `BertEncoder` stored in a keras_bert model directory."""
    return load_model_dir(path).load_encoder(dtype=dtype)
