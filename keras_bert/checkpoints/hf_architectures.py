"""Hugging Face BERT models with their heads: the Hugging Face side.

This module reads and writes Hugging Face's `BertFor*` directories (config, mapping tables of
the heads, the pretraining heads); the task heads become task models in
`keras_bert.tasks.task_conversion`, which `keras-bert convert` and `from_pretrained` use, so that a
task model is built by its own class. `config.json`'s `architectures[0]` picks what is
kept:

| Hugging Face                            | keras_bert model directory                  |
| --------------------------------------- | ------------------------------------------- |
| `BertForSequenceClassification`         | `classify`, `regress` or `multilabel` task  |
| `BertForTokenClassification`            | `tag` task                                  |
| `BertForQuestionAnswering`              | `squad` task                                |
| `BertForMaskedLM`, `BertForPreTraining` | encoder + `pretraining_heads.weights.h5`    |
| `BertModel`, none                       | encoder                                     |
| any other with head weights             | refused (`ValueError`) unless `encoder_only` |

Sequence classification by `problem_type`: `regression` (or none, with one label) is
`regress`, `multi_label_classification` `multilabel` (thresholds 0.5),
`single_label_classification` (or none, with several labels) `classify`; HF's pooler +
dropout + `classifier` is `BertClassifier(pooling="pooled")`. Labels: `id2label` in id order
(HF's `LABEL_0`... kept when that is all there is). Weights HF's class lacks (the pooler of
token classification, QA and masked LM models; a masked LM's next sentence head) keep their
initial values and are listed in the manifest's `metadata.initialised`.

Task block `seq_length` (the default serving truncation length; `export --seq-length` /
`--max-length` override it): the longest input the model takes, i.e. the least of the
tokenizer's `model_max_length`, `max_position_embeddings` and 512. Question answering: at
most 384 with `doc_stride` 128 and `max_query_length` 64, and always an answer (`version_2`
false): the defaults of transformers' question-answering pipeline.

The reverse (`save_hf_task_dir`, `convert TASK_DIR OUT --to huggingface`) writes the
matching `BertFor*` weights and `id2label`, so that `from_pretrained` loads the head.
"""

from __future__ import annotations

import dataclasses
import json
import os

import numpy as np

from keras_bert.checkpoints import huggingface, pretraining_heads
from keras_bert.checkpoints.mapping import Rule, assign_checked, from_format, to_format
from keras_bert.checkpoints.model_dir import ModelDir, load_model_dir, save_model_dir
from keras_bert.checkpoints.variables import encoder_variables
from keras_bert.config import BertConfig
from keras_bert.models.encoder import BertEncoder
from keras_bert.models.pretrainer import BertPretrainer

SEQUENCE = "BertForSequenceClassification"
TOKEN = "BertForTokenClassification"
QA = "BertForQuestionAnswering"
MASKED_LM = "BertForMaskedLM"
PRETRAINING = "BertForPreTraining"

# Canonical names of a task head (`task_head_variables`) -> Hugging Face keys, per head type.
SEQUENCE_TABLE = [Rule("head/kernel", "classifier.weight", transpose=True),
                  Rule("head/bias", "classifier.bias")]
TOKEN_TABLE = list(SEQUENCE_TABLE)  # same names: HF calls both heads `classifier`
SPAN_TABLE = [Rule("head/kernel", "qa_outputs.weight", transpose=True),
              Rule("head/bias", "qa_outputs.bias")]
MASKED_LM_TABLE = [r for r in pretraining_heads.HF_HEAD_TABLE if r.ours.startswith("mlm/")]
PRETRAINING_TABLE = list(pretraining_heads.HF_HEAD_TABLE)


@dataclasses.dataclass(frozen=True)
class HFHead:
    """One `BertFor*` class: its head's mapping table and whether its `bert` has a pooler."""

    table: list
    pooler: bool


HEADS = {SEQUENCE: HFHead(SEQUENCE_TABLE, pooler=True),
         TOKEN: HFHead(TOKEN_TABLE, pooler=False),
         QA: HFHead(SPAN_TABLE, pooler=False),
         MASKED_LM: HFHead(MASKED_LM_TABLE, pooler=False),
         PRETRAINING: HFHead(PRETRAINING_TABLE, pooler=True)}
TASK_ARCHITECTURES = (SEQUENCE, TOKEN, QA)  # kept as task models by keras_bert.tasks
MAX_SEQ_LENGTH, QA_SEQ_LENGTH, QA_STRIDE, QA_QUERY_LENGTH = 512, 384, 128, 64
HEAD_PREFIXES = ("cls.", "classifier.", "qa_outputs.")


def read_hf_config(src: str) -> dict:
    """`config.json` of a Hugging Face model directory."""
    with open(os.path.join(src, "config.json"), encoding="utf-8") as f:
        return json.load(f)


def architecture(config: dict) -> str | None:
    """`architectures[0]` of a HF config, or None."""
    return (config.get("architectures") or [None])[0]


def hf_label_names(config: dict) -> list[str]:
    """`id2label` in id order (HF's `LABEL_i` names when the config has none)."""
    id2label = {int(k): str(v) for k, v in (config.get("id2label") or {}).items()}
    if not id2label:
        return [f"LABEL_{i}" for i in range(int(config.get("num_labels", 2)))]
    if sorted(id2label) != list(range(len(id2label))):
        raise ValueError(f"config.json id2label ids {sorted(id2label)} are not 0..N-1")
    return [id2label[i] for i in range(len(id2label))]


def serving_length(src: str, config: dict) -> int:
    """The tokenizer's `model_max_length`, `max_position_embeddings` and 512: the least."""
    length = min(MAX_SEQ_LENGTH, int(config.get("max_position_embeddings", MAX_SEQ_LENGTH)))
    path = os.path.join(src, "tokenizer_config.json")
    if os.path.exists(path):
        with open(path, encoding="utf-8") as f:
            limit = json.load(f).get("model_max_length")
        if isinstance(limit, int) and limit >= 3:
            length = min(length, limit)
    return length


def dropped_heads(ignored: list[str]) -> list[str]:
    """The head modules of HF weights left out of a conversion (`ignored` keys)."""
    return sorted({k.rsplit(".", 1)[0] for k in ignored if k.startswith(HEAD_PREFIXES)})


def convert_hf(src: str, dest: str, vocab_file: str, lower_case: bool, rules: str,
               encoder_only: bool = False, pair: bool = False) -> ModelDir:
    """Writes the HF model directory `src` as a keras_bert model directory `dest`: the
    encoder, with a masked LM / pretraining model's heads (`encoder_only`: the encoder
    alone). A task head (`TASK_ARCHITECTURES`) is kept by `keras_bert.tasks.task_conversion`;
    here it is refused, as is a head keras_bert has no equivalent for."""
    config = read_hf_config(src)
    arch = architecture(config)
    if pair and (encoder_only or arch != SEQUENCE):
        raise ValueError(f"pairs (--pair) are read by sequence classifiers; {src} is a "
                         f"{arch}{' converted encoder-only' if encoder_only else ''}")
    if arch in TASK_ARCHITECTURES and not encoder_only:
        raise ValueError(f"{src} is a {arch} with a fine-tuned head: keras_bert.tasks.convert "
                         "(keras-bert convert) keeps it as a task model; encoder_only=True "
                         "converts the encoder alone")
    bert_config = BertConfig.from_hf_dict(config)
    save = dict(vocab=vocab_file, lower_case=lower_case, rules=rules)
    if not encoder_only and arch in (MASKED_LM, PRETRAINING):
        pretrainer = BertPretrainer.from_bert_config(bert_config)
        report = pretraining_heads.load_hf_pretrainer_weights(pretrainer, src)
        return save_model_dir(pretrainer.encoder, dest, metadata={
            "converted_from": os.path.abspath(src), "format": "huggingface",
            "architecture": arch, "initialised": report.initialised,
            "dropped": dropped_heads(report.ignored)}, **save, write_extra=lambda directory:
            pretraining_heads.save_pretraining_heads(pretrainer, directory, skip=report.initialised))
    encoder = BertEncoder(bert_config)
    metadata = load_hf_weights(src, encoder, encoder_only=encoder_only)
    return save_model_dir(encoder, dest, metadata=metadata, **save)


def load_hf_weights(src: str, encoder, head: dict | None = None,
                    encoder_only: bool = False) -> dict:
    """Assigns the HF weights of `src` to `encoder` and, given, to the head's variables
    (`head`: canonical name -> variable, `task_head_variables`) through its architecture's
    table. Returns the provenance a model directory records (`dropped`: HF head modules
    left out; `initialised`: our weights the checkpoint lacks). Raises `ValueError` when a
    head would be dropped without `encoder_only`."""
    config = read_hf_config(src)
    arch = architecture(config)
    targets, table = encoder_variables(encoder), list(huggingface.ENCODER_TABLE)
    if head is not None:
        targets, table = {**targets, **head}, table + HEADS[arch].table
    no_pooler = [] if HEADS.get(arch, HFHead([], True)).pooler else ["^pooler/"]
    state = huggingface.normalize_keys(huggingface.read_weights(src))
    arrays, ignored, origin = from_format(table, state, huggingface.IGNORED)
    dropped = dropped_heads(ignored)
    if head is None and dropped and not encoder_only:
        raise ValueError(
            f"{src} is a {arch or 'model without architectures'} whose head keras_bert cannot "
            f"keep ({', '.join(dropped)}; heads kept: {', '.join(HEADS)}); pass "
            "--encoder-only (encoder_only=True) to convert the encoder alone")
    initialised = assign_checked(targets, arrays, source=f"weights {src}", optional=no_pooler,
                                 origin=origin)
    return {"converted_from": os.path.abspath(src), "format": "huggingface",
            "architecture": arch, "dropped": dropped, "initialised": initialised}


def describe(model_dir: ModelDir) -> list[str]:
    """Lines saying which head a conversion kept, with its labels, and what it left out."""
    meta, lines = model_dir.metadata, []
    arch = meta.get("architecture") or "model"
    task = meta.get("task")
    if task:
        labels = task.get("labels") or []
        shown = ", ".join(labels[:10]) + (f" (+{len(labels) - 10} more)" if len(labels) > 10
                                          else "")
        lines.append(f"kept the {arch} head as a {task['kind']} model"
                     + (f", {len(labels)} labels: {shown}" if labels else "")
                     + f"; serving truncates at {task['seq_length']} tokens "
                       "(export --max-length / --seq-length override)")
    elif os.path.exists(os.path.join(model_dir.path, pretraining_heads.PRETRAINING_HEADS)):
        has_nsp = not any(n.startswith("nsp/") for n in meta.get("initialised", []))
        lines.append(f"kept the {arch} heads: masked LM{' and next sentence' * has_nsp} "
                     f"({pretraining_heads.PRETRAINING_HEADS}; pretrain --init {model_dir.path} continues "
                     "with them)")
    if meta.get("dropped"):
        lines.append(f"dropped: {', '.join(meta['dropped'])}")
    groups = sorted({n.split("/")[0] for n in meta.get("initialised", [])})
    if groups:
        lines.append(f"not in the checkpoint, left at their initial values: {', '.join(groups)}")
    return lines


# ----- keras_bert -> Hugging Face ----------------------------------------------------------


def _bert_state(encoder, pooler: bool) -> dict[str, np.ndarray]:
    return {f"bert.{k}": v for k, v in huggingface.encoder_to_hf_state(encoder).items()
            if pooler or not k.startswith("pooler.")}


def write_hf_task_dir(dest: str, encoder, arch: str, head: dict, label_names: list[str],
                      vocab_file: str, lower_case: bool, problem: str | None = None,
                      dropout: float | None = None) -> str:
    """Writes `encoder` and a task head's arrays (`head`: canonical name -> array) as the
    Hugging Face `arch` directory `dest` (weights, `id2label`, `problem_type`), so that
    `from_pretrained` loads the head."""
    config = encoder.config.to_hf_dict()
    config.update(architectures=[arch],
                  id2label={str(i): n for i, n in enumerate(label_names)},
                  label2id={n: i for i, n in enumerate(label_names)})
    if problem is not None:
        config["problem_type"] = problem
    if dropout is not None:
        config["classifier_dropout"] = dropout
    state = _bert_state(encoder, HEADS[arch].pooler)
    state.update({k: np.ascontiguousarray(v) for k, v in to_format(HEADS[arch].table,
                                                                   head).items()})
    return huggingface.write_hf_dir(dest, config, state, vocab_file, lower_case)


def save_hf_pretraining_dir(src: str, dest: str, lower_case: bool | None = None) -> str | None:
    """Writes keras_bert model directory `src` with pretraining heads as Hugging Face's
    `BertForPreTraining` (or `BertForMaskedLM` without a next sentence head); None when
    `src` has none."""
    source = load_model_dir(src)
    lower_case = source.lower_case if lower_case is None else lower_case
    if not os.path.exists(os.path.join(source.path, pretraining_heads.PRETRAINING_HEADS)):
        return None
    pretrainer = BertPretrainer(source.load_encoder())
    report = pretraining_heads.load_pretraining_heads(pretrainer, source.path)
    if not any(n.startswith("nsp/") for n in report.initialised):
        return pretraining_heads.save_hf_pretrainer(pretrainer, dest, source.vocab_file, lower_case)
    config = pretrainer.config.to_hf_dict()
    config["architectures"] = [MASKED_LM]
    state = {k: v for k, v in pretraining_heads.pretrainer_to_hf_state(pretrainer).items()
             if not k.startswith(("cls.seq_relationship.", "bert.pooler."))}
    return huggingface.write_hf_dir(dest, config, state, source.vocab_file, lower_case)


__all__ = ["HEADS", "TASK_ARCHITECTURES", "architecture", "convert_hf", "describe",
           "hf_label_names", "load_hf_weights", "read_hf_config", "save_hf_pretraining_dir",
           "serving_length", "write_hf_task_dir"]
