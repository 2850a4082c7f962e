"""The TF Hub / Kaggle Models `tensorflow/bert` encoder SavedModels (the encoders of the
"Classify text with BERT" tutorial, and what Kaggle notebooks attach under
`/kaggle/input/bert/tensorflow2/...`): `saved_model.pb`, `variables/`, `assets/vocab.txt`, as
Model Garden's `export_tfhub` writes them.

The weights are read from `variables/` with TensorFlow's checkpoint reader through Model
Garden's variable names (`model_garden.ENCODER_TABLE`); the SavedModel's graph is never run.
The vocabulary is the `vocab.txt` asset and the casing the `do_lower_case` variable the
exporter stores beside it; the activation comes from the Keras metadata the exporter writes
(`"inner_activation"`, Model Garden's tanh `gelu` in every released BERT), read with Model
Garden's names (`keras_bert.activation_names.MODEL_GARDEN`).
"""

from __future__ import annotations

import os
import re

import tensorflow as tf

from keras_bert.activation_names import MODEL_GARDEN
from keras_bert.checkpoints import model_garden
from keras_bert.models.encoder import BertEncoder

VARIABLES = os.path.join("variables", "variables")
VOCAB = os.path.join("assets", "vocab.txt")
LOWER_CASE_KEY = "do_lower_case/.ATTRIBUTES/VARIABLE_VALUE"
METADATA_FILES = ("keras_metadata.pb", "saved_model.pb")


def _not_bert(path: str, problem: str) -> ValueError:
    return ValueError(f"{path} is a SavedModel but not a BERT encoder of TF Hub / Model "
                      f"Garden's export: {problem}")


def _checked_prefix(path: str) -> str:
    """The SavedModel's variables (as a checkpoint prefix), checked to hold a BERT encoder."""
    prefix = os.path.join(path, VARIABLES)
    if not os.path.exists(prefix + ".index"):
        raise _not_bert(path, "it has no variables/variables.index (a preprocessing "
                              "SavedModel holds none: give the encoder)")
    try:
        names = model_garden.variable_names(prefix)
    except ValueError as e:
        raise _not_bert(path, str(e).split(": ", 1)[-1]) from None
    if not model_garden.holds_encoder(names):
        shown = ", ".join(sorted(names)[:4]) or "no variables"
        raise _not_bert(path, f"it has no variable {model_garden.WORD_EMBEDDINGS} and "
                              f"transformer/layer_0/... (found {shown}); a preprocessing "
                              f"SavedModel holds none: give the encoder")
    return prefix


def read_variables(path: str) -> dict:
    """The SavedModel's variables by name (its `mlm` subobject's too)."""
    return model_garden.read_named(_checked_prefix(path))


def read_vocab(path: str) -> tuple[str, bool]:
    """`(vocab file, lower_case)`: the `vocab.txt` asset and the `do_lower_case` variable."""
    prefix = _checked_prefix(path)
    vocab_file = os.path.join(path, VOCAB)
    if not os.path.exists(vocab_file):
        raise _not_bert(path, f"it has no {VOCAB} asset (a SentencePiece model such as "
                              f"ALBERT's is not a WordPiece BERT)")
    reader = tf.train.load_checkpoint(prefix)
    if not reader.has_tensor(LOWER_CASE_KEY):
        raise _not_bert(path, "it stores no do_lower_case; pass --lower-case or --cased")
    return vocab_file, bool(reader.get_tensor(LOWER_CASE_KEY))


def read_activation(path: str) -> str:
    """The encoder's activation (`BertConfig.hidden_act`) from the exporter's Keras metadata,
    by Model Garden's names; Model Garden's `gelu` (the tanh form) where none is recorded."""
    for name in METADATA_FILES:
        file = os.path.join(path, name)
        if not os.path.exists(file):
            continue
        with open(file, "rb") as f:
            found = set(re.findall(rb'"inner_activation": "(?:Text>)?([a-z_]+)"', f.read()))
        if len(found) > 1:
            raise _not_bert(path, f"its layers use several activations {sorted(found)}")
        if found:
            act = found.pop().decode()
            if act not in MODEL_GARDEN.reads:
                raise _not_bert(path, f"its activation {act!r} is not one of "
                                      f"{sorted(MODEL_GARDEN.reads)}")
            return MODEL_GARDEN.reads[act]
    return MODEL_GARDEN.read(None, path)


def load_saved_model_dir(path: str, dtype=None) -> BertEncoder:
    """The `BertEncoder` of the TF Hub BERT SavedModel in directory `path`."""
    return model_garden.load_named_encoder(read_variables(path), f"SavedModel {path}",
                                           read_activation(path), dtype=dtype)
