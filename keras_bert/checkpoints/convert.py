"""Converts a Google or Hugging Face BERT checkpoint directory into a keras_bert model directory."""

from __future__ import annotations

import json
import os

from keras_bert.checkpoints import google, huggingface
from keras_bert.checkpoints.model_dir import MANIFEST, ModelDir, save_model_dir


def detect_format(path: str) -> str:
    """`google`, `huggingface` or `keras_bert`, from the files in directory `path`."""
    if not os.path.isdir(path):
        raise FileNotFoundError(f"Not a directory: {path}")
    files = set(os.listdir(path))
    if MANIFEST in files:
        return "keras_bert"
    if "bert_config.json" in files:
        return "google"
    if "config.json" in files and files & set(huggingface.WEIGHT_FILES):
        return "huggingface"
    raise ValueError(f"{path} holds neither a Google BERT checkpoint (bert_config.json + "
                     f"bert_model.ckpt.*) nor Hugging Face weights (config.json + one of "
                     f"{huggingface.WEIGHT_FILES})")


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


def convert(src: str, dest: str, lower_case: bool | None = None) -> ModelDir:
    """Reads the checkpoint directory `src` (any supported format) and writes `dest`."""
    fmt = detect_format(src)
    vocab_file = os.path.join(src, "vocab.txt")
    if not os.path.exists(vocab_file):
        raise FileNotFoundError(f"No vocab.txt in {src}")
    if fmt == "google":
        encoder = google.load_google_dir(src)
    elif fmt == "huggingface":
        encoder = huggingface.load_hf_dir(src)
    else:
        from keras_bert.checkpoints.model_dir import load_model_dir

        source = load_model_dir(src)
        encoder = source.load_encoder()
        lower_case = source.lower_case if lower_case is None else lower_case
    if lower_case is None:
        lower_case = infer_lower_case(src, vocab_file)
    return save_model_dir(encoder, dest, vocab_file, lower_case,
                          metadata={"converted_from": os.path.abspath(src), "format": fmt})
