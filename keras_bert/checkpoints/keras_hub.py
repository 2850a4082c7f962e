"""keras-hub BERT presets (Kaggle Models' Keras BERT layout), read and written without keras-hub.

    PRESET/
      config.json                        `keras_hub>BertBackbone` and its arguments
      model.weights.h5                   Keras weights, read and written here with h5py
      tokenizer.json                     `keras_hub>BertTokenizer` (`lowercase`, `strip_accents`)
      assets/tokenizer/vocabulary.txt    WordPiece vocabulary
      metadata.json                      versions, parameter count

The h5 file holds one group per Keras layer, named after the layer's class:
`layers/transformer_encoder`, `layers/transformer_encoder_1`, ...; the mapping table calls
the first one `transformer_encoder_0`. Attention kernels are `EinsumDense` kernels with the
heads as their own axis (`[hidden, heads, head_size]`, output `[heads, head_size, hidden]`),
merged into our `[in, out]` on reading and split again on writing.

keras-hub's BERT is always GELU with the tanh approximation (its `BertBackbone` builds every
`TransformerEncoder` with `gelu_approximate`) and LayerNorm epsilon 1e-12: a preset reads as
`hidden_act="gelu_approximate"` (`keras_bert.activation_names.KERAS_HUB`), and a model with
the exact GELU (Hugging Face's `gelu`) is refused unless it is approximated on purpose
(`convert --approximate-gelu`: all-MiniLM-L6-v2's `sequence_output` moves by up to 4e-3).
One `dropout` serves keras-hub's hidden and attention dropout.

Tokenizer rules: keras-hub's `BertTokenizer` (TF Text `FastWordpieceTokenizer` after its
own regex split) follows neither rule set exactly; `huggingface` fits best, since keras-hub
strips accents before lower-casing, lower-cases capital sigma to `σ` (Unicode case folding)
and maps words over 100 bytes to `[UNK]` (HF: 100 characters, Google: 200, `ς`, lower-case
first). Left different: keras-hub folds case with NFKC (`ﬁ` -> `fi`, `ß` -> `ss`), splits
words at `Cc`/`Cf` characters where both rule sets drop them, keeps private-use characters
(as Google does; HF drops them), and its uncased presets keep accents unless `strip_accents`
is set (a written preset sets it with `lowercase`).
"""

from __future__ import annotations

import datetime
import json
import os
import re
import shutil

import numpy as np

from keras_bert.activation_names import KERAS_HUB
from keras_bert.checkpoints.mapping import Rule, assign_checked, from_format, to_format
from keras_bert.checkpoints.variables import encoder_variables
from keras_bert.config import BertConfig
from keras_bert.models.encoder import BertEncoder

CONFIG_FILE = "config.json"
WEIGHTS_FILE = "model.weights.h5"
TOKENIZER_FILE = "tokenizer.json"
METADATA_FILE = "metadata.json"
VOCAB_PATH = os.path.join("assets", "tokenizer", "vocabulary.txt")
# keras-nlp, keras-hub's former name, wrote the same layout under its own package name.
BACKBONES = ("keras_hub>BertBackbone", "keras_nlp>BertBackbone")
TOKENIZERS = ("keras_hub>BertTokenizer", "keras_nlp>BertTokenizer")
RULES = "huggingface"
# The keras-hub release whose preset layout `save_keras_hub_preset` writes (and tests load).
KERAS_HUB_VERSION = "0.32.0"
LAYER_NORM_EPSILON = 1e-12

_L = "layers/transformer_encoder_{i}"
_ATT = f"{_L}/_self_attention_layer"


def _vars(ours: str, group: str, names=("kernel", "bias")) -> list[Rule]:
    return [Rule(f"{ours}/{name}", f"{group}/vars/{n}") for n, name in enumerate(names)]


# Canonical name -> dataset path in keras-hub's `model.weights.h5`.
ENCODER_TABLE = [
    Rule("embeddings/word_embeddings", "layers/reversible_embedding/vars/0"),
    Rule("embeddings/position_embeddings", "layers/position_embedding/vars/0"),
    Rule("embeddings/type_embeddings", "layers/embedding/vars/0"),
    *_vars("embeddings/layer_norm", "layers/layer_normalization", ("gamma", "beta")),
    *[r for p in ("query", "key", "value")
      for r in _vars(f"layer_{{i}}/attention/{p}", f"{_ATT}/{p}_dense")],
    *_vars("layer_{i}/attention/output", f"{_ATT}/output_dense"),
    *_vars("layer_{i}/attention_layer_norm", f"{_L}/_self_attention_layer_norm",
           ("gamma", "beta")),
    *_vars("layer_{i}/intermediate", f"{_L}/_feedforward_intermediate_dense"),
    *_vars("layer_{i}/output", f"{_L}/_feedforward_output_dense"),
    *_vars("layer_{i}/output_layer_norm", f"{_L}/_feedforward_layer_norm", ("gamma", "beta")),
    *_vars("pooler", "layers/dense"),
]

_FIRST_LAYER = re.compile(r"^layers/transformer_encoder(?=/)")
_ZEROTH_LAYER = re.compile(r"^layers/transformer_encoder_0(?=/)")
_QKV = re.compile(r"/attention/(query|key|value)/(kernel|bias)$")
_ATT_OUT = re.compile(r"/attention/output/kernel$")


def is_keras_hub_preset(path: str) -> bool:
    """Whether directory `path` looks like a keras-hub preset: `config.json` and
    `model.weights.h5`, with a serialized Keras object in `config.json` or a
    `metadata.json` naming a Keras version."""
    files = set(os.listdir(path))
    if not {CONFIG_FILE, WEIGHTS_FILE} <= files:
        return False
    config = _read_json(os.path.join(path, CONFIG_FILE))
    if isinstance(config, dict) and "registered_name" in config:
        return True
    metadata = _read_json(os.path.join(path, METADATA_FILE)) if METADATA_FILE in files else {}
    return isinstance(metadata, dict) and bool(
        metadata.keys() & {"keras_version", "keras_hub_version", "keras_nlp_version"})


def _read_json(path: str):
    try:
        with open(path, encoding="utf-8") as f:
            return json.load(f)
    except (OSError, ValueError):
        return None


def _serialized(path: str, accepted: tuple[str, ...], what: str) -> dict:
    """The `config` of the serialized Keras object in `path`, checking its class."""
    d = _read_json(path)
    if not isinstance(d, dict):
        raise ValueError(f"{path}: not a JSON object of a serialized Keras {what}")
    name = d.get("registered_name")
    if name not in accepted:
        raise ValueError(f"{path}: the preset holds a {name or d.get('class_name')!r}, not a "
                         f"BERT {what} ({accepted[0]}); only keras-hub BERT presets convert")
    return d.get("config") or {}


def read_preset_config(path: str) -> BertConfig:
    """The `BertConfig` of keras-hub preset directory `path` (see the module docstring)."""
    c = _serialized(os.path.join(path, CONFIG_FILE), BACKBONES, "backbone")
    try:
        dropout = float(c.get("dropout", 0.1))
        return BertConfig(
            vocab_size=int(c["vocabulary_size"]), hidden_size=int(c["hidden_dim"]),
            num_layers=int(c["num_layers"]), num_heads=int(c["num_heads"]),
            intermediate_size=int(c["intermediate_dim"]), hidden_act=KERAS_HUB.read(None, path),
            hidden_dropout=dropout, attention_dropout=dropout,
            max_position_embeddings=int(c.get("max_sequence_length", 512)),
            type_vocab_size=int(c.get("num_segments", 2)),
            layer_norm_epsilon=LAYER_NORM_EPSILON)
    except KeyError as e:
        raise ValueError(f"{path}/{CONFIG_FILE}: BertBackbone config is missing "
                         f"{e.args[0]!r}") from None


def read_preset_tokenizer(path: str) -> tuple[str, bool]:
    """`(vocabulary file, lower_case)` of keras-hub preset directory `path`."""
    read_preset_config(path)  # a preset of another model is refused by its backbone's name
    tok_path, vocab = os.path.join(path, TOKENIZER_FILE), os.path.join(path, VOCAB_PATH)
    for needed in (tok_path, vocab):
        if not os.path.exists(needed):
            raise FileNotFoundError(f"{path} is a keras-hub preset without a tokenizer (no "
                                    f"{os.path.relpath(needed, path)}); save the "
                                    "BertTokenizer into it with save_to_preset")
    config = _serialized(tok_path, TOKENIZERS, "tokenizer")
    return vocab, bool(config.get("lowercase", False))


def read_weights(path: str) -> dict[str, np.ndarray]:
    """Every array of a Keras `.weights.h5` file by dataset path (bfloat16 as float32);
    the first transformer layer's group is named `transformer_encoder_0`."""
    import h5py

    file = os.path.join(path, WEIGHTS_FILE) if os.path.isdir(path) else path
    if not os.path.exists(file):
        raise FileNotFoundError(f"No {WEIGHTS_FILE} in {path} (sharded keras-hub weights, "
                                "model.weights.json, are not supported)")
    arrays = {}

    def visit(name, item):
        if isinstance(item, h5py.Dataset):
            value = np.asarray(item)
            if item.attrs.get("dtype") == "bfloat16":
                import ml_dtypes

                value = np.array(item, dtype=ml_dtypes.bfloat16).astype(np.float32)
            arrays[_FIRST_LAYER.sub("layers/transformer_encoder_0", name)] = value

    try:
        with h5py.File(file, "r") as f:
            f.visititems(visit)
    except OSError as e:
        raise ValueError(f"{file}: not a readable HDF5 weights file ({e})") from None
    return arrays


def _merge_heads(arrays: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """EinsumDense attention kernels/biases with a heads axis -> our `[in, out]` / `[out]`."""
    out = {}
    for name, a in arrays.items():
        if _QKV.search(name) and a.ndim == (3 if name.endswith("kernel") else 2):
            a = a.reshape(a.shape[0], -1) if name.endswith("kernel") else a.reshape(-1)
        elif _ATT_OUT.search(name) and a.ndim == 3:
            a = a.reshape(-1, a.shape[-1])
        out[name] = a
    return out


def _split_heads(arrays: dict[str, np.ndarray], num_heads: int) -> dict[str, np.ndarray]:
    """Inverse of `_merge_heads`."""
    out = {}
    for name, a in arrays.items():
        if _QKV.search(name):
            a = a.reshape(*a.shape[:-1], num_heads, -1)
        elif _ATT_OUT.search(name):
            a = a.reshape(num_heads, -1, a.shape[-1])
        out[name] = a
    return out


def load_keras_hub_weights(encoder: BertEncoder, path: str) -> None:
    """Loads a keras-hub BERT preset's `model.weights.h5` into `encoder`. Raises
    `CheckpointMismatchError` (nothing assigned) on a missing, unknown or mis-shaped array."""
    arrays, _, origin = from_format(ENCODER_TABLE, read_weights(path))
    assign_checked(encoder_variables(encoder), _merge_heads(arrays),
                   source=f"keras-hub preset {path}", origin=origin)


def load_keras_hub_preset(path: str, dtype=None) -> BertEncoder:
    """Builds a `BertEncoder` from keras-hub BERT preset directory `path`."""
    encoder = BertEncoder(read_preset_config(path), dtype=dtype)
    load_keras_hub_weights(encoder, path)
    return encoder


def _serialize(module: str, class_name: str, config: dict, dtype: str) -> dict:
    policy = {"module": "keras", "class_name": "DTypePolicy", "config": {"name": dtype},
              "registered_name": None}
    return {"module": f"keras_hub.src.models.bert.{module}", "class_name": class_name,
            "config": {"name": module, "trainable": True, "dtype": policy, **config},
            "registered_name": f"keras_hub>{class_name}"}


def backbone_config(config: BertConfig) -> dict:
    """The `BertBackbone` arguments for `config`; refuses what keras-hub cannot run."""
    KERAS_HUB.write(config.hidden_act)  # refuses what its one activation is not
    if config.layer_norm_epsilon != LAYER_NORM_EPSILON:
        raise ValueError(f"keras-hub's BertBackbone uses LayerNorm epsilon 1e-12; a model "
                         f"with {config.layer_norm_epsilon} cannot be written as a keras-hub "
                         "preset")
    return {"vocabulary_size": config.vocab_size, "num_layers": config.num_layers,
            "num_heads": config.num_heads, "hidden_dim": config.hidden_size,
            "intermediate_dim": config.intermediate_size, "dropout": config.hidden_dropout,
            "max_sequence_length": config.max_position_embeddings,
            "num_segments": config.type_vocab_size}


def _write_json(path: str, value: dict) -> None:
    with open(path, "w", encoding="utf-8") as f:
        f.write(json.dumps(value, indent=4))


def save_keras_hub_preset(encoder: BertEncoder, path: str, vocab_file: str,
                          lower_case: bool) -> str:
    """Writes `encoder` and its vocab as a keras-hub BERT preset directory that
    `keras_hub.models.BertBackbone.from_preset` and `BertTokenizer.from_preset` load."""
    import h5py
    import keras

    config = encoder.config
    arguments = backbone_config(config)
    ours = {name: v.numpy() for name, v in encoder_variables(encoder).items()}
    arrays = to_format(ENCODER_TABLE, _split_heads(ours, config.num_heads))
    os.makedirs(os.path.join(path, os.path.dirname(VOCAB_PATH)), exist_ok=True)
    with h5py.File(os.path.join(path, WEIGHTS_FILE), "w") as f:
        f.create_group("vars").attrs["name"] = "bert_backbone"
        for name in sorted(arrays):
            f[_ZEROTH_LAYER.sub("layers/transformer_encoder", name)] = \
                np.ascontiguousarray(arrays[name], dtype=np.float32)
    _write_json(os.path.join(path, CONFIG_FILE),
                _serialize("bert_backbone", "BertBackbone", arguments, "float32"))
    _write_json(os.path.join(path, TOKENIZER_FILE), _serialize(
        "bert_tokenizer", "BertTokenizer",
        {"config_file": TOKENIZER_FILE, "vocabulary": None, "sequence_length": None,
         "lowercase": bool(lower_case), "strip_accents": bool(lower_case), "split": True,
         "suffix_indicator": "##", "oov_token": "[UNK]", "special_tokens": None,
         "special_tokens_in_strings": False}, "int32"))
    shutil.copyfile(vocab_file, os.path.join(path, VOCAB_PATH))
    _write_json(os.path.join(path, METADATA_FILE), {
        "keras_version": keras.version(), "keras_hub_version": KERAS_HUB_VERSION,
        "parameter_count": int(sum(a.size for a in ours.values())),
        "date_saved": datetime.datetime.now().strftime("%Y-%m-%d@%H:%M:%S"),
        "tasks": ["MaskedLM", "TextClassifier", "TextEmbedder"]})
    return path


__all__ = ["ENCODER_TABLE", "RULES", "is_keras_hub_preset", "load_keras_hub_preset",
           "read_preset_config", "read_preset_tokenizer", "save_keras_hub_preset"]
