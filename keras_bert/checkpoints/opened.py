"""A checkpoint opened in memory: what `from_pretrained` builds a model on and `keras-bert
convert` writes from (`formats.open_checkpoint`, `CheckpointFormat.open`).

Opening reads the vocabulary and tokenizer settings (and what a layout needs to say what it
holds: a Hugging Face `config.json`, Model Garden's variables); the encoder is built from the
checkpoint's own arrays when it is asked for, once, in the dtype the caller asks for. Nothing
is written on the way: a model directory exists only where a caller writes one.
"""

from __future__ import annotations

import dataclasses
import functools
import os


@dataclasses.dataclass
class Checkpoint:
    """A checkpoint directory `path` of one layout (`format`, a `CheckpointFormat`), opened:
    its vocabulary file, casing and tokenizer rules (the source's, or those the caller
    chose)."""

    path: str
    format: object
    vocab_file: str
    lower_case: bool
    rules: str

    def load_encoder(self, dtype=None):
        """A `BertEncoder` with the checkpoint's weights, computing in `dtype` (a Keras dtype
        policy or its name; None: the global one)."""
        return self.format.read_encoder(self.path, dtype=dtype)

    def tokenizer(self):
        """The `keras_bert.text.BertTokenizer` of its vocabulary, casing and rules."""
        from keras_bert.text.tokenizer import BertTokenizer

        return BertTokenizer(self.vocab_file, lower_case=self.lower_case, rules=self.rules)

    @property
    def provenance(self) -> dict:
        """What a model directory written from it records: where it came from, its layout."""
        return {"converted_from": os.path.abspath(self.path), "format": self.format.name}

    def refuse_unkept_heads(self, kept: tuple[str, ...] = ()) -> None:
        """Raises `ValueError` when the checkpoint holds a head that nothing keeps (nor a
        kind, nor its layout's conversion): only a Hugging Face layout names such heads
        (`kept`: the Hugging Face classes the task kinds keep)."""


@dataclasses.dataclass
class ModelGardenCheckpoint(Checkpoint):
    """A layout of Model Garden's encoder variables (a TF2 checkpoint, a TF Hub SavedModel):
    `named`, its variables by Model Garden's names, are read once and serve the encoder and
    whatever reads a head beside it."""

    @functools.cached_property
    def named(self) -> dict:
        """The variables by Model Garden's names (`model_garden.read_named`)."""
        return self.format.named(self.path)

    def load_encoder(self, dtype=None):
        """The encoder of `named` (read once)."""
        return self.format.encoder_of(self.named, self.path, dtype=dtype)
