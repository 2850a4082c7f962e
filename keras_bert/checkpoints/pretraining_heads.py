"""BERT's pretraining heads in Google TF1, Hugging Face and Model Garden checkpoints (and TF
Hub `model_with_mlm` SavedModels), with the encoder.

Canonical names of the heads (the common language of the tables below):
`mlm/transform/{kernel,bias}`, `mlm/layer_norm/{gamma,beta}`, `mlm/output_bias`,
`nsp/{kernel,bias}` (kernels `[in, out]`). The masked LM output projection is tied to the word
embeddings and has no variable of its own: Google and Model Garden store none; Hugging
Face's `cls.predictions.decoder.weight` is checked to equal the word embeddings. Model
Garden's pretrainer has no next sentence head.

A whole pretrainer (encoder + heads) is validated in one piece before anything is assigned,
so a failed load leaves the model untouched. The next sentence head and the pooler may be
absent as a group (a `BertForMaskedLM` checkpoint has neither): they keep their initial
values and the loaders report them.
"""

from __future__ import annotations

import dataclasses
import json
import os
import warnings

import keras
import numpy as np

from keras_bert.checkpoints import google, huggingface, model_garden
from keras_bert.checkpoints.mapping import (
    CheckpointMismatchError,
    Rule,
    assign_checked,
    from_format,
    to_format,
)
from keras_bert.checkpoints.variables import encoder_variables
from keras_bert.config import BertConfig
from keras_bert.models.pretrainer import BertPretrainer

# Canonical name -> Google TF1 name. `output_weights` of the NSP head is [2, hidden]: [out, in].
GOOGLE_HEAD_TABLE = [
    Rule("mlm/transform/kernel", "cls/predictions/transform/dense/kernel"),
    Rule("mlm/transform/bias", "cls/predictions/transform/dense/bias"),
    Rule("mlm/layer_norm/gamma", "cls/predictions/transform/LayerNorm/gamma"),
    Rule("mlm/layer_norm/beta", "cls/predictions/transform/LayerNorm/beta"),
    Rule("mlm/output_bias", "cls/predictions/output_bias"),
    Rule("nsp/kernel", "cls/seq_relationship/output_weights", transpose=True),
    Rule("nsp/bias", "cls/seq_relationship/output_bias"),
]

# Canonical name -> Hugging Face `BertForPreTraining` key (after `normalize_keys`).
HF_HEAD_TABLE = [
    Rule("mlm/transform/kernel", "cls.predictions.transform.dense.weight", transpose=True),
    Rule("mlm/transform/bias", "cls.predictions.transform.dense.bias"),
    Rule("mlm/layer_norm/gamma", "cls.predictions.transform.LayerNorm.weight"),
    Rule("mlm/layer_norm/beta", "cls.predictions.transform.LayerNorm.bias"),
    Rule("mlm/output_bias", "cls.predictions.bias"),
    Rule("nsp/kernel", "cls.seq_relationship.weight", transpose=True),
    Rule("nsp/bias", "cls.seq_relationship.bias"),
]

# Canonical name -> Model Garden's masked LM head (`BertPretrainerV2`'s `MaskedLM`, named
# under its pretrainer: the `mlm` subobject of an `export_tfhub --export_type model_with_mlm`
# SavedModel holds the same names). Its decoder is the word embeddings, as here.
MODEL_GARDEN_HEAD_TABLE = [
    Rule("mlm/transform/kernel", "bert/cls/predictions/transform/dense/kernel"),
    Rule("mlm/transform/bias", "bert/cls/predictions/transform/dense/bias"),
    Rule("mlm/layer_norm/gamma", "bert/cls/predictions/transform/LayerNorm/gamma"),
    Rule("mlm/layer_norm/beta", "bert/cls/predictions/transform/LayerNorm/beta"),
    Rule("mlm/output_bias", "bert/cls/predictions/output_bias/bias"),
]

HF_DECODER_WEIGHT = "cls.predictions.decoder.weight"
HF_DECODER_BIAS = "cls.predictions.decoder.bias"

# What a pretrainer load skips: the encoder loaders' lists without their `cls` entries.
# Google: optimizer slots and counters. HF: buffers, task heads and other `cls.*` heads (such
# as AntiBERTy's species/chain classifiers), but not the pretraining heads themselves.
GOOGLE_IGNORED = tuple(p for p in google.IGNORED if p != r"^cls/")
HF_IGNORED = (huggingface.POSITION_IDS,
              huggingface.outside("cls.predictions.", "cls.seq_relationship."))

MODEL_GARDEN_IGNORED = tuple(p for p in model_garden.IGNORED if p != r"(^|/)cls/")

# Groups that may be absent as a whole (left initialised, reported).
OPTIONAL_GROUPS = ("nsp/", "pooler/")


@dataclasses.dataclass
class LoadReport:
    """What a pretrainer load did besides assigning: `ignored` checkpoint names, and the
    canonical names left `initialised` because the checkpoint has no such group."""

    ignored: list[str]
    initialised: list[str]


def head_variables(pretrainer: BertPretrainer) -> dict[str, keras.Variable]:
    """The heads' variables by canonical name (the tied table is the encoder's)."""
    mlm, nsp = pretrainer.mlm_head, pretrainer.nsp_head
    return {
        "mlm/transform/kernel": mlm.dense.kernel,
        "mlm/transform/bias": mlm.dense.bias,
        "mlm/layer_norm/gamma": mlm.layer_norm.gamma,
        "mlm/layer_norm/beta": mlm.layer_norm.beta,
        "mlm/output_bias": mlm.output_bias,
        "nsp/kernel": nsp.dense.kernel,
        "nsp/bias": nsp.dense.bias,
    }


def pretrainer_variables(pretrainer: BertPretrainer) -> dict[str, keras.Variable]:
    """Every variable of `pretrainer` (encoder and heads) by canonical name."""
    out = {**encoder_variables(pretrainer.encoder), **head_variables(pretrainer)}
    assert len(out) == len(pretrainer.weights), "pretrainer_variables() misses a variable"
    return out


def _assign(pretrainer: BertPretrainer, arrays, ignored, origin, source: str) -> LoadReport:
    targets = pretrainer_variables(pretrainer)
    optional = [f"^{group}" for group in OPTIONAL_GROUPS
                if not any(name.startswith(group) for name in arrays)]
    kept = assign_checked(targets, arrays, source=source, optional=optional, origin=origin)
    return LoadReport(ignored=ignored, initialised=kept)


def warn_initialised(report: LoadReport, path: str) -> None:
    if report.initialised:
        groups = sorted({name.split("/")[0] for name in report.initialised})
        warnings.warn(f"{path} has no {' and no '.join(groups)} weights; they keep their "
                      f"initial values: {report.initialised}", stacklevel=3)


# ----- Google TF1 ------------------------------------------------------------------------


def load_google_pretrainer_weights(pretrainer: BertPretrainer, path: str) -> LoadReport:
    """Loads a Google TF1 checkpoint (encoder + `cls/...` heads) into `pretrainer`.

    Raises `CheckpointMismatchError` (nothing assigned) if a variable is missing, unknown or
    of the wrong shape; the next sentence head and the pooler may be absent as a group.
    """
    table = google.ENCODER_TABLE + GOOGLE_HEAD_TABLE
    arrays, ignored, origin = from_format(table, google.read_checkpoint(path), GOOGLE_IGNORED)
    return _assign(pretrainer, arrays, ignored, origin, source=f"checkpoint {path}")


def load_google_pretrainer(path: str, dtype=None, **kwargs) -> BertPretrainer:
    """Builds a `BertPretrainer` from a Google BERT directory (`bert_config.json` + ckpt);
    `kwargs` go to `BertPretrainer` (e.g. `nsp_loss_weight`).

    Warns (`UserWarning`) when heads or the pooler are absent and left initialised.
    """
    config = BertConfig.from_json_file(os.path.join(path, "bert_config.json"))
    pretrainer = BertPretrainer.from_bert_config(config, dtype=dtype, **kwargs)
    warn_initialised(load_google_pretrainer_weights(pretrainer, path), path)
    return pretrainer


def pretrainer_to_google_heads(pretrainer: BertPretrainer) -> dict[str, np.ndarray]:
    """The heads' weights under Google's `cls/...` names."""
    ours = {name: v.numpy() for name, v in head_variables(pretrainer).items()}
    return to_format(GOOGLE_HEAD_TABLE, ours)


def save_google_pretrainer(pretrainer: BertPretrainer, path: str,
                           vocab_file: str | None = None) -> str:
    """Writes Google's layout (`bert_config.json`, `bert_model.ckpt` with the `cls/` heads)."""
    os.makedirs(path, exist_ok=True)
    pretrainer.config.save_json(os.path.join(path, "bert_config.json"), flavor="google")
    google.save_google_checkpoint(pretrainer.encoder, os.path.join(path, "bert_model.ckpt"),
                                  extra=pretrainer_to_google_heads(pretrainer))
    if vocab_file:
        with open(vocab_file, encoding="utf-8") as src, \
                open(os.path.join(path, "vocab.txt"), "w", encoding="utf-8") as dst:
            dst.write(src.read())
    return path


# ----- Hugging Face ------------------------------------------------------------------------


def _untie_hf(state: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """Checks and drops HF's tied copies: the decoder weight (= word embeddings) and the
    decoder bias (= `cls.predictions.bias`, used in its place when that one is absent)."""
    state = dict(state)
    decoder = state.pop(HF_DECODER_WEIGHT, None)
    if decoder is not None:
        words = state.get("embeddings.word_embeddings.weight")
        if words is None or np.shape(words) != np.shape(decoder) \
                or not np.array_equal(words, decoder):
            raise CheckpointMismatchError(
                f"{HF_DECODER_WEIGHT} is not tied to embeddings.word_embeddings.weight (it "
                "differs or has no counterpart); BertMaskedLMHead needs a tied output projection")
    decoder_bias = state.pop(HF_DECODER_BIAS, None)
    if decoder_bias is not None:
        bias = state.setdefault("cls.predictions.bias", decoder_bias)
        if np.shape(bias) != np.shape(decoder_bias) or not np.array_equal(bias, decoder_bias):
            raise CheckpointMismatchError(
                f"{HF_DECODER_BIAS} differs from cls.predictions.bias (they are tied)")
    return state


def load_hf_pretrainer_weights(pretrainer: BertPretrainer, path: str) -> LoadReport:
    """Loads HF `BertForPreTraining` / `BertForMaskedLM` weights into `pretrainer`.

    `path` is a directory or a weights file (`model.safetensors`, `pytorch_model.bin`, ...).
    Old `LayerNorm.gamma/beta` names are accepted. `cls.predictions.decoder.weight`, when
    present, must equal the word embeddings. Raises `CheckpointMismatchError` (nothing
    assigned) on a missing, unknown or mis-shaped variable; the next sentence head and the
    pooler may be absent as a group (`BertForMaskedLM`).
    """
    state = _untie_hf(huggingface.normalize_keys(huggingface.read_weights(path)))
    table = huggingface.ENCODER_TABLE + HF_HEAD_TABLE
    arrays, ignored, origin = from_format(table, state, HF_IGNORED)
    return _assign(pretrainer, arrays, ignored, origin, source=f"weights {path}")


def load_hf_pretrainer(path: str, dtype=None, **kwargs) -> BertPretrainer:
    """Builds a `BertPretrainer` from a HF BERT directory (`config.json` + weights);
    `kwargs` go to `BertPretrainer` (e.g. `nsp_loss_weight`).

    Warns (`UserWarning`) when heads or the pooler are absent and left initialised.
    """
    config_path = os.path.join(path, "config.json")
    if not os.path.exists(config_path):
        raise FileNotFoundError(f"No config.json in {path}")
    with open(config_path, encoding="utf-8") as f:
        config = BertConfig.from_hf_dict(json.load(f))
    pretrainer = BertPretrainer.from_bert_config(config, dtype=dtype, **kwargs)
    warn_initialised(load_hf_pretrainer_weights(pretrainer, path), path)
    return pretrainer


def pretrainer_to_hf_state(pretrainer: BertPretrainer) -> dict[str, np.ndarray]:
    """The weights as a HF `BertForPreTraining` state dict (without the tied copies, as HF
    itself saves them)."""
    state = {f"bert.{k}": v for k, v in huggingface.encoder_to_hf_state(pretrainer.encoder).items()}
    ours = {name: v.numpy() for name, v in head_variables(pretrainer).items()}
    state.update({k: np.ascontiguousarray(v) for k, v in to_format(HF_HEAD_TABLE, ours).items()})
    return state


def save_hf_pretrainer(pretrainer: BertPretrainer, path: str, vocab_file: str | None = None,
                       lower_case: bool | None = None) -> str:
    """Writes `config.json` and `model.safetensors` loadable by HF `BertForPreTraining`."""

    config = pretrainer.config.to_hf_dict()
    config["architectures"] = ["BertForPreTraining"]
    return huggingface.write_hf_dir(path, config, pretrainer_to_hf_state(pretrainer),
                                    vocab_file, lower_case)


__all__ = ["GOOGLE_HEAD_TABLE", "HF_HEAD_TABLE", "PRETRAINING_HEADS", "LoadReport",
           "head_variables", "load_google_pretrainer", "load_google_pretrainer_weights",
           "load_hf_pretrainer", "load_hf_pretrainer_weights", "load_model_dir_pretrainer",
           "load_pretraining_heads", "pretrainer_to_google_heads", "pretrainer_to_hf_state",
           "pretrainer_variables", "save_google_pretrainer", "save_hf_pretrainer",
           "save_pretraining_heads", "convert_google_with_heads", "google_has_heads"]


# ----- Model Garden: TF2 checkpoints and TF Hub SavedModels --------------------------------


def model_garden_pretrainer(named: dict[str, np.ndarray], source: str, hidden_act: str,
                            dtype=None, **kwargs) -> tuple[BertPretrainer, LoadReport]:
    """A `BertPretrainer` of Model Garden variables `named` (by variable name: encoder and
    masked LM head; it has no next sentence head, which is reported initialised)."""
    config = model_garden.infer_config({n: np.shape(v) for n, v in named.items()}, hidden_act)
    pretrainer = BertPretrainer.from_bert_config(config, dtype=dtype, **kwargs)
    arrays, ignored, origin = from_format(model_garden.ENCODER_TABLE + MODEL_GARDEN_HEAD_TABLE,
                                          named, MODEL_GARDEN_IGNORED)
    report = _assign(pretrainer, model_garden.merge_heads(arrays), ignored, origin, source)
    return pretrainer, report


def convert_model_garden_with_heads(checkpoint, hidden_act: str, dest: str):
    """Writes the opened Model Garden `checkpoint` (`opened.ModelGardenCheckpoint`: its
    variables with the masked LM head) as the keras_bert model directory `dest` plus
    `pretraining_heads.weights.h5`, as `convert_google_with_heads` does; returns the
    `ModelDir`."""
    from keras_bert.checkpoints.model_dir import save_model_dir

    pretrainer, report = model_garden_pretrainer(
        checkpoint.named, f"{checkpoint.format.name} {checkpoint.path}", hidden_act)
    return save_model_dir(pretrainer.encoder, dest, checkpoint.vocab_file, checkpoint.lower_case,
                          metadata={**checkpoint.provenance, "initialised": report.initialised},
                          rules=checkpoint.rules, write_extra=lambda directory:
                          save_pretraining_heads(pretrainer, directory, skip=report.initialised))


# ----- keras_bert model directories --------------------------------------------------------

PRETRAINING_HEADS = "pretraining_heads.weights.h5"


def save_pretraining_heads(pretrainer: BertPretrainer, model_dir: str, skip=()) -> str:
    """Writes the heads' variables (one HDF5 dataset per canonical name, those in `skip`
    left out) to `MODEL_DIR/pretraining_heads.weights.h5`; returns its path."""
    import h5py

    path = os.path.join(model_dir, PRETRAINING_HEADS)
    with h5py.File(path, "w") as f:
        for name, variable in head_variables(pretrainer).items():
            if name not in skip:
                f.create_dataset(name, data=np.asarray(variable.numpy(), np.float32))
    return path


def load_pretraining_heads(pretrainer: BertPretrainer, model_dir: str) -> LoadReport:
    """Loads `MODEL_DIR/pretraining_heads.weights.h5` into `pretrainer`'s heads, checked
    like a checkpoint (the next sentence head may be absent: it is then reported in
    `initialised`, with the pooler if the directory's conversion left it initialised)."""
    import h5py

    from keras_bert.checkpoints.model_dir import load_model_dir

    path = os.path.join(model_dir, PRETRAINING_HEADS)
    arrays = {}
    with h5py.File(path, "r") as f:
        f.visititems(lambda name, item: arrays.update({name: item[()]})
                     if isinstance(item, h5py.Dataset) else None)
    optional = [] if any(name.startswith("nsp/") for name in arrays) else ["^nsp/"]
    kept = assign_checked(head_variables(pretrainer), arrays, source=f"heads {path}",
                          optional=optional)
    pooler = [name for name in load_model_dir(model_dir).metadata.get("initialised", [])
              if name.startswith("pooler/")]
    return LoadReport(ignored=[], initialised=kept + pooler)


def google_has_heads(path: str) -> bool:
    """Whether the Google checkpoint in directory `path` holds the masked LM head."""
    return "cls/predictions/output_bias" in google.read_checkpoint(path, names_only=True)


def convert_google_with_heads(checkpoint, dest: str):
    """Writes the opened Google release `checkpoint` (with its `cls/` pretraining heads) as
    the keras_bert model directory `dest` plus `pretraining_heads.weights.h5`, so that
    `pretrain --init DEST` continues with the original heads; returns the `ModelDir`."""
    from keras_bert.checkpoints.model_dir import save_model_dir

    src = checkpoint.path
    config = BertConfig.from_json_file(os.path.join(src, "bert_config.json"))
    pretrainer = BertPretrainer.from_bert_config(config)
    report = load_google_pretrainer_weights(pretrainer, src)
    return save_model_dir(pretrainer.encoder, dest, checkpoint.vocab_file, checkpoint.lower_case,
                          metadata={**checkpoint.provenance, "initialised": report.initialised},
                          rules=checkpoint.rules, write_extra=lambda directory:
                          save_pretraining_heads(pretrainer, directory, skip=report.initialised))


def load_model_dir_pretrainer(path: str, dtype=None, **kwargs) -> BertPretrainer:
    """The encoder of keras_bert model directory `path` with the pretraining heads saved
    beside it (`pretraining_heads.weights.h5`: absent heads keep their initial values, with
    a warning), else fresh heads. `kwargs` go to `BertPretrainer`."""
    from keras_bert.checkpoints.model_dir import load_model_dir

    pretrainer = BertPretrainer(load_model_dir(path).load_encoder(dtype=dtype), **kwargs)
    if os.path.exists(os.path.join(path, PRETRAINING_HEADS)):
        warn_initialised(load_pretraining_heads(pretrainer, path), path)
    return pretrainer
