"""Converts BERT checkpoint directories: Google TF1, Hugging Face, keras-hub presets or keras_bert
in; a keras_bert model directory, Google's layout, Hugging Face's or a keras-hub preset out.
Each layout is a `CheckpointFormat` (`formats.py`); these functions dispatch on them. A source
may be a hub id (`hf://...`, `kaggle://...`: `hub_ids.local_checkpoint` fetches it)."""

from __future__ import annotations

import os

from keras_bert.activation_names import APPROXIMATE, BY_FORMAT, EXACT
from keras_bert.checkpoints.formats import (
    WRITABLE,
    checkpoint_format,
    detect_format,
    infer_lower_case,
    open_checkpoint,
)
from keras_bert.checkpoints.hub_ids import local_checkpoint
from keras_bert.checkpoints.model_dir import ModelDir, save_model_dir
from keras_bert.checkpoints.opened import Checkpoint

__all__ = ["checkpoint_rules", "checkpoint_vocab", "convert", "detect_format",
           "infer_lower_case", "open_checkpoint", "read_checkpoint", "with_approximate_gelu",
           "write_checkpoint", "write_model_dir"]


def checkpoint_vocab(src: str) -> tuple[str, bool]:
    """`(vocab file, lower_case)` of checkpoint directory `src` (any supported format)."""
    src = local_checkpoint(src)
    return detect_format(src).vocab(src)


def checkpoint_rules(src: str) -> str:
    """The tokenizer rules of checkpoint directory `src`: a keras_bert directory's own,
    `google` for Google's release layout, `huggingface` for a Hugging Face one and for a
    keras-hub preset (see `keras_hub.RULES`)."""
    src = local_checkpoint(src)
    return detect_format(src).rules(src)


def read_checkpoint(src: str, lower_case: bool | None = None):
    """Loads the encoder of checkpoint directory `src` (any supported format).

    Returns `(encoder, vocab_file, lower_case, format name)`; `lower_case` overrides the
    casing read from a keras_bert directory or inferred from a Google/HF one.
    """
    src = local_checkpoint(src)
    fmt = detect_format(src)
    vocab_file, found_lower_case = fmt.vocab(src)
    lower_case = found_lower_case if lower_case is None else lower_case
    return fmt.read_encoder(src), vocab_file, lower_case, fmt.name


def convert(src: str, dest: str, lower_case: bool | None = None,
            rules: str | None = None, encoder_only: bool = False) -> ModelDir:
    """Reads the checkpoint directory `src` (any supported format) and writes `dest` as a
    keras_bert model directory. Its tokenizer rules are `rules`, else those of the source
    (`checkpoint_rules`). A Hugging Face `BertForMaskedLM` / `BertForPreTraining` model or a
    Google release keeps its pretraining heads unless `encoder_only`; a fine-tuned task head
    is refused here (`keras_bert.tasks.task_conversion.convert`, which `keras-bert convert`
    runs, keeps it as the task model of its kind)."""
    return write_model_dir(open_checkpoint(src, lower_case, rules), dest, encoder_only)


def write_model_dir(checkpoint: Checkpoint, dest: str, encoder_only: bool = False) -> ModelDir:
    """Writes the opened `checkpoint` as the keras_bert model directory `dest`: its encoder,
    with the pretraining heads its layout keeps unless `encoder_only`."""
    converted = checkpoint.format.convert_with_heads(checkpoint, dest, encoder_only=encoder_only)
    if converted is not None:
        return converted
    return save_model_dir(checkpoint.load_encoder(), dest, checkpoint.vocab_file,
                          checkpoint.lower_case, metadata=checkpoint.provenance,
                          rules=checkpoint.rules)


def with_approximate_gelu(encoder):
    """A `BertEncoder` with `encoder`'s weights that computes GELU with the tanh
    approximation, as Google's, Model Garden's and keras-hub's code do: how a model with the
    exact GELU goes to their layouts on purpose (its outputs move by up to a few 1e-3). An encoder
    without the exact GELU is returned as it is."""
    if encoder.config.hidden_act != EXACT:
        return encoder
    from keras_bert.models.encoder import BertEncoder

    approximated = BertEncoder(encoder.config.replace(hidden_act=APPROXIMATE),
                               dtype=encoder.dtype_policy)
    approximated.set_weights(encoder.get_weights())
    return approximated


def write_checkpoint(src: str, dest: str, to: str, lower_case: bool | None = None,
                     encoder_only: bool = False, approximate_gelu: bool = False) -> str:
    """Writes the encoder of checkpoint directory `src` to `dest` in Google's (`to="google"`),
    Hugging Face's (`to="huggingface"`) or keras-hub's preset (`to="keras_hub"`) layout, with
    its vocab; returns `dest`. A keras_bert task model directory (or one with pretraining
    heads) goes to Hugging Face as the matching `BertFor*` model unless `encoder_only`.

    A model with the exact GELU is refused by the layouts that compute only the tanh
    approximation (Google's, Model Garden's, keras-hub's) unless `approximate_gelu`, which
    writes it with the approximation (`with_approximate_gelu`).

    `dest` must be empty, missing, or already a directory of that format.
    """
    src = local_checkpoint(src)
    target = checkpoint_format(to)
    if not target.writable:
        raise ValueError(f"Unknown checkpoint layout {to!r}: expected one of {sorted(WRITABLE)}")
    if approximate_gelu and EXACT in BY_FORMAT[target.name].writes:
        raise ValueError(f"approximate_gelu (--approximate-gelu) is for the layouts without the "
                         f"exact GELU; {target.name}'s layout writes it as it is")
    if os.path.isdir(dest) and os.listdir(dest) and target.marker not in os.listdir(dest):
        raise FileExistsError(f"{dest} exists and holds no {target.marker}; refusing to write "
                              f"a {target.name} checkpoint into it")
    if not encoder_only:
        path = target.write_with_heads(src, detect_format(src), dest, lower_case)
        if path is not None:
            return path
    encoder, vocab_file, lower_case, _ = read_checkpoint(src, lower_case)
    if approximate_gelu:
        encoder = with_approximate_gelu(encoder)
    return target.write_encoder(encoder, dest, vocab_file, lower_case)
