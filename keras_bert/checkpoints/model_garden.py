"""Model Garden's BERT encoder (`official.nlp.modeling.networks.BertEncoder`) as TensorFlow
stores it: its TF2 object-based checkpoints (`tf.train.Checkpoint(encoder=...)`: Model
Garden's releases, its trainer's and `BertPretrainerV2`'s checkpoints) and the `variables/`
of the TF Hub / Kaggle `tensorflow/bert` SavedModels that its `export_tfhub` writes
(`tf_hub.py` reads their vocabulary and casing).

Both are read with `tf.train.load_checkpoint`: nothing of a foreign graph is executed. Their
checkpoint keys are object paths that number objects by position (`encoder/layer_with_weights-4/
_attention_layer/...` in a checkpoint, `variables/17/...` in a SavedModel), so `ENCODER_TABLE`
maps what both record beside each key in the object graph (`full_name`): the variable names
Model Garden gives the encoder (`transformer/layer_0/self_attention/query/kernel`), the same in
both layouts and in every object that holds the encoder (a `BertPretrainerV2`, a classifier).

The attention projections are einsum kernels there: query/key/value `[hidden, heads,
head_size]` (bias `[heads, head_size]`) and the output `[heads, head_size, hidden]`; they are
reshaped to the `[in, out]` dense kernels of this package (heads concatenated in order), and
the number of heads is read from them. Model Garden's `gelu` is the tanh approximation
(`official.modeling.activations.gelu`), so its encoders read as `gelu_approximate`
(`keras_bert.activation_names.MODEL_GARDEN`).
"""

from __future__ import annotations

import json
import os
import re

import numpy as np
import tensorflow as tf

from keras_bert.activation_names import APPROXIMATE, MODEL_GARDEN
from keras_bert.checkpoints import google
from keras_bert.checkpoints.mapping import Rule, assign_checked, from_format
from keras_bert.checkpoints.variables import encoder_variables
from keras_bert.config import BertConfig
from keras_bert.models.encoder import BertEncoder

_L = "transformer/layer_{i}"

# Canonical name -> Model Garden's variable name (before the einsum reshapes above).
ENCODER_TABLE = [
    Rule("embeddings/word_embeddings", "word_embeddings/embeddings"),
    Rule("embeddings/position_embeddings", "position_embedding/embeddings"),
    Rule("embeddings/type_embeddings", "type_embeddings/embeddings"),
    Rule("embeddings/layer_norm/gamma", "embeddings/layer_norm/gamma"),
    Rule("embeddings/layer_norm/beta", "embeddings/layer_norm/beta"),
    *[Rule(f"layer_{{i}}/attention/{p}/{w}", f"{_L}/self_attention/{p}/{w}")
      for p in ("query", "key", "value") for w in ("kernel", "bias")],
    Rule("layer_{i}/attention/output/kernel", f"{_L}/self_attention/attention_output/kernel"),
    Rule("layer_{i}/attention/output/bias", f"{_L}/self_attention/attention_output/bias"),
    Rule("layer_{i}/attention_layer_norm/gamma", f"{_L}/self_attention_layer_norm/gamma"),
    Rule("layer_{i}/attention_layer_norm/beta", f"{_L}/self_attention_layer_norm/beta"),
    Rule("layer_{i}/intermediate/kernel", f"{_L}/intermediate/kernel"),
    Rule("layer_{i}/intermediate/bias", f"{_L}/intermediate/bias"),
    Rule("layer_{i}/output/kernel", f"{_L}/output/kernel"),
    Rule("layer_{i}/output/bias", f"{_L}/output/bias"),
    Rule("layer_{i}/output_layer_norm/gamma", f"{_L}/output_layer_norm/gamma"),
    Rule("layer_{i}/output_layer_norm/beta", f"{_L}/output_layer_norm/beta"),
    Rule("pooler/kernel", "pooler_transform/kernel"),
    Rule("pooler/bias", "pooler_transform/bias"),
]

# Names that are not the encoder's: the masked LM head (`BertPretrainerV2`'s `cls/predictions`,
# a SavedModel's `mlm` subobject: `pretraining_heads.MODEL_GARDEN_HEAD_TABLE` reads it), a
# classifier's head (`tasks/text_classification/checkpoints.py` reads it), the save counter
# and the SavedModel's `do_lower_case` (an unnamed `Variable`).
IGNORED = (r"(^|/)cls/", r"^sentence_prediction/", r"^save_counter$", r"^Variable(_\d+)?$")

MLM_MARKER = "bert/cls/predictions/output_bias/bias"  # a model_with_mlm / pretrainer's head
OBJECT_GRAPH = "_CHECKPOINTABLE_OBJECT_GRAPH"
WORD_EMBEDDINGS = "word_embeddings/embeddings"


def _object_graph(reader):
    from tensorflow.core.protobuf import trackable_object_graph_pb2

    graph = trackable_object_graph_pb2.TrackableObjectGraph()
    graph.ParseFromString(reader.get_tensor(OBJECT_GRAPH))
    return graph


def variable_names(prefix: str) -> dict[str, str]:
    """`{variable name: checkpoint key}` of the object-based checkpoint `prefix`, without
    optimizer slots and the optimizer's own variables; `{}` for a name-based (TF1)
    checkpoint. A damaged one is a `ValueError` naming it."""
    try:
        reader = tf.train.load_checkpoint(prefix)
        if OBJECT_GRAPH not in reader.get_variable_to_shape_map():
            return {}
        graph = _object_graph(reader)
    except tf.errors.OpError as e:
        problem = (e.message or str(e)).strip().splitlines()[0]
        raise ValueError(f"{prefix}: not a readable TensorFlow checkpoint ({problem})") from e
    names, twice = {}, set()
    for node in graph.nodes:
        for attribute in node.attributes:
            key = attribute.checkpoint_key
            if ".OPTIMIZER_SLOT" in key or key.startswith("optimizer/"):
                continue
            name = re.sub(r":\d+$", "", attribute.full_name)
            if names.setdefault(name, key) != key:
                twice.add(name)
    # A name held twice is ambiguous unless the load ignores it (several save counters).
    twice = sorted(n for n in twice if not any(re.search(p, n) for p in IGNORED))
    if twice:
        raise ValueError(f"{prefix}: several variables are called {twice[0]!r}; a checkpoint "
                         f"of one BERT encoder has one")
    return names


def read_named(prefix: str) -> dict[str, np.ndarray]:
    """The variables of object-based checkpoint `prefix` as arrays, by variable name."""
    reader = tf.train.load_checkpoint(prefix)
    return {name: reader.get_tensor(key) for name, key in variable_names(prefix).items()}


def holds_encoder(names) -> bool:
    """Whether variable names `names` include a Model Garden BERT encoder's."""
    return WORD_EMBEDDINGS in names and any(n.startswith("transformer/layer_0/") for n in names)


def merge_heads(arrays: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """The einsum attention kernels as dense `[in, out]` kernels (see the module docstring)."""
    out = {}
    for name, value in arrays.items():
        if name.endswith("/attention/output/kernel") and value.ndim == 3:
            value = value.reshape(-1, value.shape[-1])
        elif re.search(r"/attention/(query|key|value)/kernel$", name) and value.ndim == 3:
            value = value.reshape(value.shape[0], -1)
        elif re.search(r"/attention/(query|key|value)/bias$", name) and value.ndim == 2:
            value = value.reshape(-1)
        out[name] = value
    return out


def infer_config(shapes: dict[str, tuple], hidden_act: str = APPROXIMATE) -> BertConfig:
    """The `BertConfig` that Model Garden variables of these shapes (by variable name) were
    made with; their activation is not stored in the variables and comes as `hidden_act`."""
    if "embedding_projection/kernel" in shapes:
        raise ValueError("factorized embeddings (embedding_width != hidden_size, an "
                         "embedding_projection) are not supported by keras_bert's BertEncoder")
    vocab_size, hidden = shapes[WORD_EMBEDDINGS]
    layers = {int(m.group(1)) for name in shapes
              if (m := re.match(r"transformer/layer_(\d+)/", name))}
    query = shapes[f"{_L.format(i=0)}/self_attention/query/kernel"]
    return BertConfig(
        vocab_size=int(vocab_size), hidden_size=int(hidden), num_layers=len(layers),
        num_heads=int(query[1]) if len(query) == 3 else _missing_heads(),
        intermediate_size=int(shapes[f"{_L.format(i=0)}/intermediate/kernel"][1]),
        hidden_act=hidden_act,
        max_position_embeddings=int(shapes["position_embedding/embeddings"][0]),
        type_vocab_size=int(shapes["type_embeddings/embeddings"][0]))


def _missing_heads() -> int:
    raise ValueError("the attention kernels are not einsum kernels [hidden, heads, head_size]; "
                     "the number of heads cannot be read from them")


def load_named_encoder(named: dict[str, np.ndarray], source: str,
                       hidden_act: str = APPROXIMATE, dtype=None) -> BertEncoder:
    """A `BertEncoder` of the Model Garden variables `named` (by variable name). Anything
    that is neither the encoder's nor in `IGNORED` is a `CheckpointMismatchError` naming it."""
    if not holds_encoder(named):
        raise ValueError(f"{source} holds no Model Garden BERT encoder (no variable "
                         f"{WORD_EMBEDDINGS} and transformer/layer_0/...); found "
                         f"{', '.join(sorted(named)[:5]) or 'no variables'}")
    config = infer_config({n: np.shape(v) for n, v in named.items()}, hidden_act)
    arrays, _, origin = from_format(ENCODER_TABLE, named, IGNORED)
    encoder = BertEncoder(config, dtype=dtype)
    assign_checked(encoder_variables(encoder), merge_heads(arrays), source=source,
                   origin=origin)
    return encoder


# ----- Model Garden TF2 checkpoints ------------------------------------------------------


def checkpoint_prefix(path: str) -> str | None:
    """The prefix of the object-based checkpoint holding a BERT encoder in directory `path`,
    else None (no checkpoint, several, a TF1 one or one of something else)."""
    try:
        prefix = google.find_checkpoint_prefix(path)
    except (FileNotFoundError, ValueError):
        return None
    try:
        return prefix if holds_encoder(variable_names(prefix)) else None
    except ValueError:
        return None


def config_activation(path: str) -> str:
    """The activation of `bert_config.json` beside a checkpoint, as Model Garden reads it."""
    config_file = os.path.join(path, "bert_config.json")
    if not os.path.exists(config_file):
        return MODEL_GARDEN.read(None, path)
    with open(config_file, encoding="utf-8") as f:
        return MODEL_GARDEN.read(json.load(f).get("hidden_act"), config_file)


def load_checkpoint_dir(path: str, dtype=None) -> BertEncoder:
    """The `BertEncoder` of the Model Garden TF2 checkpoint in directory `path` (its shapes
    give the configuration; a `bert_config.json` beside it, its activation)."""
    prefix = checkpoint_prefix(path)
    if prefix is None:
        raise ValueError(f"{path} holds no object-based (TF2) checkpoint of a BERT encoder")
    return load_named_encoder(read_named(prefix), f"checkpoint {prefix}",
                              config_activation(path), dtype=dtype)


# ----- Writing: the object paths of Model Garden's functional BertEncoder -------------------

# Model Garden variable name -> its object path under `encoder/` in a checkpoint of the
# functional `BertEncoder` (Keras numbers the layers that hold weights in order: the three
# embeddings, their layer norm, the transformer layers, then the pooler at 4 + layers).
_BLOCK_PATHS = {
    "self_attention/query": "_attention_layer/_query_dense",
    "self_attention/key": "_attention_layer/_key_dense",
    "self_attention/value": "_attention_layer/_value_dense",
    "self_attention/attention_output": "_attention_layer/_output_dense",
    "self_attention_layer_norm": "_attention_layer_norm",
    "intermediate": "_intermediate_dense",
    "output": "_output_dense",
    "output_layer_norm": "_output_layer_norm",
}
_EMBEDDING_PATHS = {"word_embeddings/embeddings": "layer_with_weights-0/embeddings",
                    "position_embedding/embeddings": "layer_with_weights-1/embeddings",
                    "type_embeddings/embeddings": "layer_with_weights-2/embeddings",
                    "embeddings/layer_norm/gamma": "layer_with_weights-3/gamma",
                    "embeddings/layer_norm/beta": "layer_with_weights-3/beta"}


def object_path(name: str, num_layers: int) -> str:
    """The object path (under `encoder/`) of Model Garden variable `name`."""
    if name in _EMBEDDING_PATHS:
        return _EMBEDDING_PATHS[name]
    if name.startswith("pooler_transform/"):
        return f"layer_with_weights-{4 + num_layers}/{name.rsplit('/', 1)[1]}"
    m = re.fullmatch(r"transformer/layer_(\d+)/(.+)/(\w+)", name)
    return f"layer_with_weights-{4 + int(m.group(1))}/{_BLOCK_PATHS[m.group(2)]}/{m.group(3)}"


def _split_heads(name: str, value: np.ndarray, config: BertConfig) -> np.ndarray:
    """Inverse of `merge_heads` for one canonical variable."""
    heads, size = config.num_heads, config.head_size
    if name.endswith("/attention/output/kernel"):
        return value.reshape(heads, size, -1)
    if re.search(r"/attention/(query|key|value)/kernel$", name):
        return value.reshape(value.shape[0], heads, size)
    if re.search(r"/attention/(query|key|value)/bias$", name):
        return value.reshape(heads, size)
    return value


def save_checkpoint_dir(encoder: BertEncoder, path: str, vocab_file: str) -> str:
    """Writes `encoder` as a Model Garden TF2 checkpoint directory: `bert_model.ckpt` (and its
    `checkpoint` state file; the object graph that
    `tf.train.Checkpoint(encoder=BertEncoder(...)).restore` matches), Model Garden's
    `bert_config.json` and `vocab.txt`. Model Garden computes its `gelu` with
    the tanh approximation, so an encoder with the exact GELU is refused
    (`activation_names.UnwritableActivationError`), before anything is written."""
    config = encoder.config
    google_config = config.to_google_dict(MODEL_GARDEN)
    root = tf.Module()
    root.encoder = tf.Module()
    by_canonical = {n: v.numpy() for n, v in encoder_variables(encoder).items()}
    for rule in ENCODER_TABLE:
        for canonical in [n for n in by_canonical if rule.to_theirs(n) is not None]:
            name = rule.to_theirs(canonical)
            value = _split_heads(canonical, by_canonical.pop(canonical), config)
            *parents, leaf = object_path(name, config.num_layers).split("/")
            node = root.encoder
            for part in parents:
                if not hasattr(node, part):
                    setattr(node, part, tf.Module())
                node = getattr(node, part)
            setattr(node, leaf, tf.Variable(value, name=name))
    os.makedirs(path, exist_ok=True)
    checkpoint = tf.train.Checkpoint(encoder=root.encoder)
    # Made on first use, and expected by restores that assert every object matched (as
    # Model Garden's exporter does), since `Checkpoint.save` always writes one.
    checkpoint.save_counter.assign(1)
    checkpoint.write(os.path.join(path, "bert_model.ckpt"))
    # for latest_checkpoint
    with open(os.path.join(path, "checkpoint"), "w", encoding="utf-8") as f:
        f.write('model_checkpoint_path: "bert_model.ckpt"\n'
                'all_model_checkpoint_paths: "bert_model.ckpt"\n')
    with open(os.path.join(path, "bert_config.json"), "w", encoding="utf-8") as f:
        json.dump(google_config, f, indent=2)
    tf.io.gfile.copy(vocab_file, os.path.join(path, "vocab.txt"), overwrite=True)
    return path
