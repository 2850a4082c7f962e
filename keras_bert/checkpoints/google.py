"""Google's released BERT checkpoints (TF1 `bert_model.ckpt` + `bert_config.json` + `vocab.txt`).

Read with `tf.train.load_checkpoint` (no TF1 graph code) and written with the `SaveV2` op, so
the files are the ones Google's `modeling.py` reads and writes. That code computes its "gelu"
with the tanh approximation: a release reads as `gelu_approximate`, and a model with the exact
GELU is refused by the writer, which has no name for it (`keras_bert.activation_names.GOOGLE`).
"""

from __future__ import annotations

import glob
import os

import numpy as np
import tensorflow as tf

from keras_bert.activation_names import GOOGLE
from keras_bert.checkpoints.mapping import Rule, assign_checked, from_format, to_format
from keras_bert.checkpoints.variables import encoder_variables
from keras_bert.config import BertConfig
from keras_bert.models.encoder import BertEncoder

_L = "bert/encoder/layer_{i}"

# Canonical name -> Google TF1 variable name. Kernels are [in, out] in both.
ENCODER_TABLE = [
    Rule("embeddings/word_embeddings", "bert/embeddings/word_embeddings"),
    Rule("embeddings/position_embeddings", "bert/embeddings/position_embeddings"),
    Rule("embeddings/type_embeddings", "bert/embeddings/token_type_embeddings"),
    Rule("embeddings/layer_norm/gamma", "bert/embeddings/LayerNorm/gamma"),
    Rule("embeddings/layer_norm/beta", "bert/embeddings/LayerNorm/beta"),
    *[Rule(f"layer_{{i}}/attention/{p}/{w}", f"{_L}/attention/self/{p}/{w}")
      for p in ("query", "key", "value") for w in ("kernel", "bias")],
    Rule("layer_{i}/attention/output/kernel", f"{_L}/attention/output/dense/kernel"),
    Rule("layer_{i}/attention/output/bias", f"{_L}/attention/output/dense/bias"),
    Rule("layer_{i}/attention_layer_norm/gamma", f"{_L}/attention/output/LayerNorm/gamma"),
    Rule("layer_{i}/attention_layer_norm/beta", f"{_L}/attention/output/LayerNorm/beta"),
    Rule("layer_{i}/intermediate/kernel", f"{_L}/intermediate/dense/kernel"),
    Rule("layer_{i}/intermediate/bias", f"{_L}/intermediate/dense/bias"),
    Rule("layer_{i}/output/kernel", f"{_L}/output/dense/kernel"),
    Rule("layer_{i}/output/bias", f"{_L}/output/dense/bias"),
    Rule("layer_{i}/output_layer_norm/gamma", f"{_L}/output/LayerNorm/gamma"),
    Rule("layer_{i}/output_layer_norm/beta", f"{_L}/output/LayerNorm/beta"),
    Rule("pooler/kernel", "bert/pooler/dense/kernel"),
    Rule("pooler/bias", "bert/pooler/dense/bias"),
]

# Variables of released checkpoints that are not part of the encoder: pretraining heads
# (loaded by the pretrainer), optimizer slots and the step counter.
IGNORED = (r"^cls/", r"/adam_[mv]$", r"^global_step$", r"^bad_steps$", r"^good_steps$",
           r"^loss_scale$")


def find_checkpoint_prefix(path: str) -> str:
    """The checkpoint prefix for a directory or a prefix (`.../bert_model.ckpt`)."""
    if os.path.exists(path + ".index"):
        return path
    if os.path.isdir(path):
        preferred = os.path.join(path, "bert_model.ckpt")
        if os.path.exists(preferred + ".index"):
            return preferred
        latest = tf.train.latest_checkpoint(path)
        if latest:
            return latest
        indexes = sorted(glob.glob(os.path.join(path, "*.index")))
        if len(indexes) == 1:
            return indexes[0][: -len(".index")]
        if indexes:
            raise ValueError(f"Several checkpoints in {path}: {indexes}; pass a prefix")
    raise FileNotFoundError(f"No TF checkpoint (*.index) found at {path}")


def read_checkpoint(path: str, names_only: bool = False) -> dict[str, np.ndarray]:
    """Every variable of a TF checkpoint as NumPy arrays, by name (`names_only`: their
    shapes instead, nothing read). A damaged one is a `ValueError` naming it."""
    prefix = find_checkpoint_prefix(path)
    try:
        reader = tf.train.load_checkpoint(prefix)
        shapes = reader.get_variable_to_shape_map()
        return shapes if names_only else {name: reader.get_tensor(name) for name in shapes}
    except tf.errors.OpError as e:
        problem = (e.message or str(e)).strip().splitlines()[0]
        raise ValueError(f"{prefix}: not a readable TensorFlow checkpoint ({problem})") from e


def load_google_weights(encoder: BertEncoder, path: str) -> list[str]:
    """Loads a Google TF1 BERT checkpoint into `encoder`; returns the ignored variable names.

    Raises `CheckpointMismatchError` (nothing assigned) if a variable is missing, unknown or
    of the wrong shape.
    """
    arrays, ignored, origin = from_format(ENCODER_TABLE, read_checkpoint(path), IGNORED)
    assign_checked(encoder_variables(encoder), arrays, source=f"checkpoint {path}",
                   origin=origin)
    return ignored


def load_google_dir(path: str, dtype=None) -> BertEncoder:
    """Builds a `BertEncoder` from a released Google BERT directory (`bert_config.json`)."""
    config = BertConfig.from_json_file(os.path.join(path, "bert_config.json"))
    encoder = BertEncoder(config, dtype=dtype)
    load_google_weights(encoder, path)
    return encoder


def save_google_checkpoint(encoder: BertEncoder, prefix: str,
                           extra: dict[str, np.ndarray] | None = None) -> str:
    """Writes `encoder`'s weights as a TF1 checkpoint with Google's variable names.

    `extra` adds more named arrays (e.g. the `cls/...` heads). Returns the prefix.
    """
    ours = {name: v.numpy() for name, v in encoder_variables(encoder).items()}
    arrays = to_format(ENCODER_TABLE, ours)
    arrays.update(extra or {})
    names = sorted(arrays)
    os.makedirs(os.path.dirname(os.path.abspath(prefix)), exist_ok=True)
    tf.raw_ops.SaveV2(prefix=prefix, tensor_names=names, shape_and_slices=[""] * len(names),
                      tensors=[tf.constant(arrays[n]) for n in names])
    return prefix


def save_google_dir(encoder: BertEncoder, path: str, vocab_file: str | None = None) -> str:
    """Writes a directory in Google's released layout: config, checkpoint and vocab. A model
    whose activation Google's code cannot compute (the exact GELU) is refused before anything
    is written."""
    GOOGLE.write(encoder.config.hidden_act)
    os.makedirs(path, exist_ok=True)
    encoder.config.save_json(os.path.join(path, "bert_config.json"), flavor="google")
    save_google_checkpoint(encoder, os.path.join(path, "bert_model.ckpt"))
    if vocab_file:
        tf.io.gfile.copy(vocab_file, os.path.join(path, "vocab.txt"), overwrite=True)
    return path
