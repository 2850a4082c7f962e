"""Converts BERT checkpoint directories: Google TF1, Hugging Face, keras-hub presets or keras_bert
in; a keras_bert model directory, Google's layout, Hugging Face's or a keras-hub preset out."""

from __future__ import annotations

import json
import os

from keras_bert.checkpoints import google, huggingface, keras_hub
from keras_bert.checkpoints.formats import CHECKPOINT_MARKERS, detect_format
from keras_bert.checkpoints.model_dir import ModelDir, save_model_dir


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


def checkpoint_vocab(src: str) -> tuple[str, bool]:
    """`(vocab file, lower_case)` of checkpoint directory `src` (any supported format)."""
    fmt = detect_format(src)
    if fmt == "keras_hub":
        return keras_hub.read_preset_tokenizer(src)
    if fmt == "keras_bert":
        from keras_bert.checkpoints.model_dir import load_model_dir

        source = load_model_dir(src)
        return source.vocab_file, source.lower_case
    vocab_file = os.path.join(src, "vocab.txt")
    if not os.path.exists(vocab_file):
        raise FileNotFoundError(f"No vocab.txt in {src}")
    return vocab_file, infer_lower_case(src, vocab_file)


def checkpoint_rules(src: str) -> str:
    """The tokenizer rules of checkpoint directory `src`: a keras_bert directory's own,
    `google` for Google's release layout, `huggingface` for a Hugging Face one and for a
    keras-hub preset (see `keras_hub.RULES`)."""
    fmt = detect_format(src)
    if fmt == "keras_bert":
        from keras_bert.checkpoints.model_dir import load_model_dir

        return load_model_dir(src).rules
    return keras_hub.RULES if fmt == "keras_hub" else fmt


def read_checkpoint(src: str, lower_case: bool | None = None):
    """Loads the encoder of checkpoint directory `src` (any supported format).

    Returns `(encoder, vocab_file, lower_case, format)`; `lower_case` overrides the casing
    read from a keras_bert directory or inferred from a Google/HF one.
    """
    fmt = detect_format(src)
    vocab_file, found_lower_case = checkpoint_vocab(src)
    lower_case = found_lower_case if lower_case is None else lower_case
    if fmt == "keras_bert":
        from keras_bert.checkpoints.model_dir import load_model_dir

        return load_model_dir(src).load_encoder(), vocab_file, lower_case, fmt
    load = {"google": google.load_google_dir, "huggingface": huggingface.load_hf_dir,
            "keras_hub": keras_hub.load_keras_hub_preset}[fmt]
    return load(src), vocab_file, lower_case, fmt


def convert(src: str, dest: str, lower_case: bool | None = None,
            rules: str | None = None, encoder_only: bool = False,
            pair: bool = False) -> ModelDir:
    """Reads the checkpoint directory `src` (any supported format) and writes `dest` as a
    keras_bert model directory. Its tokenizer rules are `rules`, else those of the source
    (`checkpoint_rules`). A Hugging Face `BertFor*` model keeps its head (a task model
    directory, or pretraining heads; `pair`: its sequence classifier reads text pairs)
    unless `encoder_only`: see `keras_bert.checkpoints.hf_task_heads`. A Google release
    keeps its `cls/` pretraining heads the same way."""
    if detect_format(src) == "huggingface":
        from keras_bert.checkpoints.hf_task_heads import convert_hf

        vocab_file, found_lower_case = checkpoint_vocab(src)
        return convert_hf(src, dest, vocab_file,
                          found_lower_case if lower_case is None else lower_case,
                          rules or checkpoint_rules(src), encoder_only=encoder_only, pair=pair)
    if detect_format(src) == "google" and not encoder_only:
        from keras_bert.checkpoints import heads

        if heads.google_has_heads(src):
            vocab_file, found_lower_case = checkpoint_vocab(src)
            return heads.convert_google_with_heads(
                src, dest, vocab_file, found_lower_case if lower_case is None else lower_case,
                rules or checkpoint_rules(src))
    encoder, vocab_file, lower_case, fmt = read_checkpoint(src, lower_case)
    return save_model_dir(encoder, dest, vocab_file, lower_case,
                          metadata={"converted_from": os.path.abspath(src), "format": fmt},
                          rules=rules or checkpoint_rules(src))


def write_checkpoint(src: str, dest: str, to: str, lower_case: bool | None = None,
                     encoder_only: bool = False) -> str:
    """Writes the encoder of checkpoint directory `src` to `dest` in Google's (`to="google"`),
    Hugging Face's (`to="huggingface"`) or keras-hub's preset (`to="keras_hub"`) layout, with
    its vocab; returns `dest`. A keras_bert task model directory (or one with pretraining
    heads) goes to Hugging Face as the matching `BertFor*` model unless `encoder_only`.

    `dest` must be empty, missing, or already a directory of that format.
    """
    if to not in CHECKPOINT_MARKERS:
        raise ValueError(f"Unknown checkpoint layout {to!r}: expected one of "
                         f"{sorted(CHECKPOINT_MARKERS)}")
    marker = CHECKPOINT_MARKERS[to]
    if os.path.isdir(dest) and os.listdir(dest) and marker not in os.listdir(dest):
        raise FileExistsError(f"{dest} exists and holds no {marker}; refusing to write a "
                              f"{to} checkpoint into it")
    if to == "huggingface" and not encoder_only and detect_format(src) == "keras_bert":
        from keras_bert.checkpoints.hf_task_heads import save_hf_task_dir

        path = save_hf_task_dir(src, dest, lower_case)
        if path is not None:
            return path
    encoder, vocab_file, lower_case, _ = read_checkpoint(src, lower_case)
    if to == "google":
        return google.save_google_dir(encoder, dest, vocab_file)
    if to == "keras_hub":
        return keras_hub.save_keras_hub_preset(encoder, dest, vocab_file, lower_case)
    return huggingface.save_hf_dir(encoder, dest, vocab_file, lower_case)
