"""Hugging Face BERT weights (`config.json` + `model.safetensors`), read and written with NumPy.

Accepts `BertModel` keys (`embeddings.*`, `encoder.layer.N.*`, `pooler.dense.*`) and keys
with the `bert.` prefix of `BertForPreTraining` / `BertForMaskedLM` / task models; old
`LayerNorm.gamma`/`beta` names are read too. `pytorch_model.bin` is read when torch is
installed. Linear weights are `[out, in]` there and are transposed.
"""

from __future__ import annotations

import json
import os
import re

import numpy as np

from keras_bert.checkpoints.mapping import (
    CheckpointMismatchError,
    Rule,
    assign_checked,
    from_format,
    to_format,
)
from keras_bert.checkpoints.variables import encoder_variables
from keras_bert.config import BertConfig
from keras_bert.models.encoder import BertEncoder

_L = "encoder.layer.{i}"


def _linear(ours: str, theirs: str) -> list[Rule]:
    return [Rule(f"{ours}/kernel", f"{theirs}.weight", transpose=True),
            Rule(f"{ours}/bias", f"{theirs}.bias")]


def _norm(ours: str, theirs: str) -> list[Rule]:
    return [Rule(f"{ours}/gamma", f"{theirs}.weight"), Rule(f"{ours}/beta", f"{theirs}.bias")]


# Canonical name -> Hugging Face `BertModel` state-dict key.
ENCODER_TABLE = [
    Rule("embeddings/word_embeddings", "embeddings.word_embeddings.weight"),
    Rule("embeddings/position_embeddings", "embeddings.position_embeddings.weight"),
    Rule("embeddings/type_embeddings", "embeddings.token_type_embeddings.weight"),
    *_norm("embeddings/layer_norm", "embeddings.LayerNorm"),
    *[r for p in ("query", "key", "value")
      for r in _linear(f"layer_{{i}}/attention/{p}", f"{_L}.attention.self.{p}")],
    *_linear("layer_{i}/attention/output", f"{_L}.attention.output.dense"),
    *_norm("layer_{i}/attention_layer_norm", f"{_L}.attention.output.LayerNorm"),
    *_linear("layer_{i}/intermediate", f"{_L}.intermediate.dense"),
    *_linear("layer_{i}/output", f"{_L}.output.dense"),
    *_norm("layer_{i}/output_layer_norm", f"{_L}.output.LayerNorm"),
    *_linear("pooler", "pooler.dense"),
]

# `BertModel`'s own modules: every other top-level module of a `BertFor*` class's weights is
# its head (`cls` for pretraining, a task head beside it), whichever class it is: the heads
# keras_bert keeps are read by the code that keeps them (`pretraining_heads`, a task kind's
# folder), so that this module names none.
BODY = ("embeddings.", "encoder.", "pooler.")
POSITION_IDS = r"^embeddings\.position_ids$"  # a buffer older transformers saved


def outside(*modules: str) -> str:
    """A regex of the keys outside `BODY` and `modules` (prefixes ending in `.`)."""
    return "^(?!" + "|".join(re.escape(m) for m in (*BODY, *modules)) + ")"


# Keys that are not encoder weights: the buffer and every head.
IGNORED = (POSITION_IDS, outside())


def is_head_key(key: str) -> bool:
    """Whether a key (after `normalize_keys`) is a head's: outside `BertModel`'s modules."""
    return not key.startswith(BODY)

WEIGHT_FILES = ("model.safetensors", "model.safetensors.index.json", "pytorch_model.bin")


def normalize_keys(state: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """Drops the `bert.` prefix and renames old `LayerNorm.gamma/beta` to `weight/bias`."""
    out = {}
    for key, value in state.items():
        key = key[len("bert."):] if key.startswith("bert.") else key
        key = re.sub(r"LayerNorm\.gamma$", "LayerNorm.weight", key)
        key = re.sub(r"LayerNorm\.beta$", "LayerNorm.bias", key)
        out[key] = value
    return out


def shard_files(index_path: str) -> list[str]:
    """The weight files that a sharded checkpoint's index (`*.index.json`) names.

    Each must be a plain file name beside the index: a name that leaves the model directory
    (`../x`, `/etc/x`, `sub/../../x`, a link to elsewhere) is refused with a `ValueError`.
    In Hugging Face's cache a snapshot's files are links into its repository's `blobs/`
    (`hub_ids` reads `hf://` ids there): a shard beside the index may link there.
    """
    with open(index_path, encoding="utf-8") as f:
        try:
            weight_map = json.load(f)["weight_map"]
        except (json.JSONDecodeError, KeyError, TypeError) as e:
            raise ValueError(f"{index_path}: not a weights index ({e})") from None
    if not isinstance(weight_map, dict):
        raise ValueError(f"{index_path}: weight_map is not an object")
    directory = os.path.realpath(os.path.dirname(index_path))
    repository = os.path.dirname(os.path.dirname(directory))  # REPO/snapshots/COMMIT
    blobs = (os.path.join(repository, "blobs")
             if os.path.basename(os.path.dirname(directory)) == "snapshots" else None)
    shards = []
    for name in sorted({str(v) for v in weight_map.values()}):
        beside = os.path.normpath(os.path.join(directory, name))
        path = os.path.realpath(beside)
        cached = blobs is not None and os.path.dirname(beside) == directory and (
            os.path.dirname(path) == blobs)
        if os.path.isabs(name) or (os.path.dirname(path) != directory and not cached):
            raise ValueError(f"{index_path}: the shard {name!r} is outside the model "
                             f"directory {directory}; refusing to read it")
        shards.append(beside if cached else path)  # a blob's name has no file type
    return shards


def read_weights(path: str) -> dict[str, np.ndarray]:
    """All tensors of a HF model directory (or a single weights file) as NumPy arrays."""
    if os.path.isdir(path):
        for name in WEIGHT_FILES:
            if os.path.exists(os.path.join(path, name)):
                return read_weights(os.path.join(path, name))
        raise FileNotFoundError(f"No weights in {path}; expected one of {WEIGHT_FILES}")
    if path.endswith(".index.json"):
        state = {}
        for shard in shard_files(path):
            state.update(read_weights(shard))
        return state
    if path.endswith(".safetensors"):
        from safetensors.numpy import load_file

        return load_file(path)
    if path.endswith(".bin"):
        try:
            import torch
        except ImportError:
            raise ImportError(f"Reading {path} needs torch; convert it to safetensors or "
                              "install torch (pip install torch==2.13.0)") from None
        state = torch.load(path, map_location="cpu", weights_only=True)
        return {k: v.float().numpy() if v.is_floating_point() else v.numpy()
                for k, v in state.items()}
    raise ValueError(f"Unknown weights file type: {path}")


def load_hf_weights(encoder: BertEncoder, path: str, optional=()) -> list[str]:
    """Loads HF BERT weights into `encoder`; returns the ignored key names.

    `optional` lists regexes of canonical names allowed to be absent (e.g. `^pooler/` for a
    `BertForMaskedLM` checkpoint, which has no pooler). Raises `CheckpointMismatchError`
    (nothing assigned) on a missing, unknown or mis-shaped variable.
    """
    state = normalize_keys(read_weights(path))
    arrays, ignored, origin = from_format(ENCODER_TABLE, state, IGNORED)
    assign_checked(encoder_variables(encoder), arrays, source=f"weights {path}",
                   optional=optional, origin=origin)
    return ignored


def load_hf_dir(path: str, dtype=None) -> BertEncoder:
    """Builds a `BertEncoder` from a HF BERT directory (`config.json` + weights)."""
    config_path = os.path.join(path, "config.json")
    if not os.path.exists(config_path):
        raise FileNotFoundError(f"No config.json in {path}")
    with open(config_path, encoding="utf-8") as f:
        config = BertConfig.from_hf_dict(json.load(f))
    encoder = BertEncoder(config, dtype=dtype)
    load_hf_weights(encoder, path)
    return encoder


def encoder_to_hf_state(encoder: BertEncoder) -> dict[str, np.ndarray]:
    """The encoder's weights as a HF `BertModel` state dict (NumPy, contiguous)."""
    ours = {name: v.numpy() for name, v in encoder_variables(encoder).items()}
    return {k: np.ascontiguousarray(v) for k, v in to_format(ENCODER_TABLE, ours).items()}


def write_hf_dir(path: str, config: dict, state: dict[str, np.ndarray],
                 vocab_file: str | None = None, lower_case: bool | None = None) -> str:
    """Writes a HF model directory: `config.json`, `model.safetensors`, optionally
    `vocab.txt` and `tokenizer_config.json`."""
    from safetensors.numpy import save_file

    os.makedirs(path, exist_ok=True)
    with open(os.path.join(path, "config.json"), "w", encoding="utf-8") as f:
        json.dump(config, f, indent=2, sort_keys=True)
        f.write("\n")
    save_file(state, os.path.join(path, "model.safetensors"), metadata={"format": "pt"})
    if vocab_file:
        with open(vocab_file, encoding="utf-8") as src, \
                open(os.path.join(path, "vocab.txt"), "w", encoding="utf-8") as dst:
            dst.write(src.read())
    if lower_case is not None:
        with open(os.path.join(path, "tokenizer_config.json"), "w", encoding="utf-8") as f:
            json.dump({"do_lower_case": lower_case, "tokenizer_class": "BertTokenizer"}, f)
    return path


def save_hf_dir(encoder: BertEncoder, path: str, vocab_file: str | None = None,
                lower_case: bool | None = None) -> str:
    """Writes `config.json`, `model.safetensors` (and `vocab.txt`) loadable by `BertModel`."""
    return write_hf_dir(path, encoder.config.to_hf_dict(), encoder_to_hf_state(encoder),
                        vocab_file, lower_case)


__all__ = ["CheckpointMismatchError", "ENCODER_TABLE", "load_hf_dir", "load_hf_weights",
           "read_weights", "save_hf_dir", "write_hf_dir"]
