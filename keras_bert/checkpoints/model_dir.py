"""keras_bert's own model directory: what `keras-bert convert` writes and every command loads.

    MODEL_DIR/
      keras_bert.json        config, tokenizer settings, weight file, provenance
      vocab.txt              WordPiece vocabulary
      encoder.weights.h5     Keras weights of the `BertEncoder`
"""

from __future__ import annotations

import dataclasses
import json
import os
import shutil
from typing import Any

from keras_bert.config import BertConfig
from keras_bert.models.encoder import BertEncoder

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

    @property
    def vocab_file(self) -> str:
        """Absolute path of `vocab.txt`."""
        return os.path.join(self.path, "vocab.txt")

    def load_encoder(self, dtype=None) -> BertEncoder:
        """The `BertEncoder` with this directory's weights."""
        encoder = BertEncoder(self.config, dtype=dtype)
        encoder.load_weights(os.path.join(self.path, ENCODER_WEIGHTS))
        return encoder

    def tokenizer(self, **kwargs):
        """The `keras_bert.text.BertTokenizer` for this model's vocab and casing."""
        from keras_bert.text.tokenizer import BertTokenizer

        return BertTokenizer(self.vocab_file, lower_case=self.lower_case, **kwargs)


def save_model_dir(encoder: BertEncoder, path: str, vocab_file: str, lower_case: bool,
                   metadata: dict[str, Any] | None = None) -> ModelDir:
    """Writes `encoder`, its vocab and tokenizer settings as a keras_bert model directory.

    The directory is written beside its final place and renamed into it, so an interrupted
    write never leaves a half-written model directory.
    """
    path = os.path.abspath(path)
    is_model_dir = os.path.exists(os.path.join(path, MANIFEST))
    if os.path.isdir(path) and os.listdir(path) and not is_model_dir:
        raise FileExistsError(f"{path} exists and is not a keras_bert model directory; "
                              "refusing to overwrite it")
    tmp = f"{path}.tmp-{os.getpid()}"
    shutil.rmtree(tmp, ignore_errors=True)
    os.makedirs(tmp)
    shutil.copyfile(vocab_file, os.path.join(tmp, "vocab.txt"))
    encoder.save_weights(os.path.join(tmp, ENCODER_WEIGHTS))
    manifest = {"format_version": FORMAT_VERSION, "config": encoder.config.to_dict(),
                "tokenizer": {"vocab_file": "vocab.txt", "lower_case": bool(lower_case)},
                "weights": ENCODER_WEIGHTS, "metadata": metadata or {}}
    with open(os.path.join(tmp, MANIFEST), "w", encoding="utf-8") as f:
        json.dump(manifest, f, indent=2)
        f.write("\n")
    if os.path.exists(path):
        shutil.rmtree(path)
    os.replace(tmp, path)
    return load_model_dir(path)


def load_model_dir(path: str) -> ModelDir:
    """Reads a keras_bert model directory (see `save_model_dir`)."""
    manifest_path = os.path.join(path, MANIFEST)
    if not os.path.exists(manifest_path):
        raise FileNotFoundError(
            f"{path} is not a keras_bert model directory (no {MANIFEST}); convert a Google or "
            "Hugging Face checkpoint with `keras-bert convert SRC DEST` first")
    with open(manifest_path, encoding="utf-8") as f:
        manifest = json.load(f)
    if manifest.get("format_version") != FORMAT_VERSION:
        raise ValueError(f"{manifest_path}: unsupported format_version "
                         f"{manifest.get('format_version')!r} (expected {FORMAT_VERSION})")
    return ModelDir(path=os.path.abspath(path), config=BertConfig.from_dict(manifest["config"]),
                    lower_case=manifest["tokenizer"]["lower_case"],
                    metadata=manifest.get("metadata", {}))


def load_encoder(path: str, dtype=None) -> BertEncoder:
    """Shortcut: the `BertEncoder` stored in a keras_bert model directory."""
    return load_model_dir(path).load_encoder(dtype=dtype)
