"""Hugging Face BERT models with their heads <-> keras_bert model directories.

`config.json`'s `architectures[0]` picks what `keras-bert convert HF_DIR DEST` keeps:

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

from keras_bert.checkpoints import heads, huggingface
from keras_bert.checkpoints.mapping import Rule, assign_checked, from_format, to_format
from keras_bert.checkpoints.model_dir import ModelDir, load_model_dir, save_model_dir
from keras_bert.checkpoints.task_dir import build_task_model, load_task_model, save_task_model
from keras_bert.checkpoints.variables import encoder_variables
from keras_bert.config import BertConfig, default_doc_stride
from keras_bert.models.encoder import BertEncoder
from keras_bert.models.pretrainer import BertPretrainer
from keras_bert.tasks.labels import LabelVocab
from keras_bert.tasks.registry import task_kind

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
MASKED_LM_TABLE = [r for r in heads.HF_HEAD_TABLE if r.ours.startswith("mlm/")]
PRETRAINING_TABLE = list(heads.HF_HEAD_TABLE)


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
# Sequence classification's `problem_type` <-> our task kind (both directions).
KIND_OF_PROBLEM = {"single_label_classification": "classify", "regression": "regress",
                   "multi_label_classification": "multilabel"}
ARCHITECTURE_OF_KIND = {**{kind: SEQUENCE for kind in KIND_OF_PROBLEM.values()},
                        "tag": TOKEN, "squad": QA}
PROBLEM_OF_KIND = {kind: problem for problem, kind in KIND_OF_PROBLEM.items()}
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


def task_block(src: str, config: dict, arch: str, pair: bool = False):
    """`(task block, LabelVocab or None)` of a HF task model (see the module docstring)."""
    length = serving_length(src, config)
    dropout = config.get("classifier_dropout")
    dropout = float(config.get("hidden_dropout_prob", 0.1) if dropout is None else dropout)
    if arch == QA:
        return {"kind": "squad", "seq_length": min(length, QA_SEQ_LENGTH),
                "max_query_length": QA_QUERY_LENGTH, "doc_stride": QA_STRIDE,
                "version_2": False}, None
    names = hf_label_names(config)
    try:
        labels = LabelVocab(names)
    except ValueError as e:
        raise ValueError(f"{src}/config.json id2label: {e}") from None
    if arch == TOKEN:
        return {"kind": "tag", "seq_length": length, "num_classes": len(names),
                "doc_stride": default_doc_stride(length), "dropout": dropout}, labels
    problem = config.get("problem_type") or (
        "regression" if len(names) == 1 else "single_label_classification")
    if problem not in KIND_OF_PROBLEM:
        raise ValueError(f"{src}/config.json: unknown problem_type {problem!r}; expected one "
                         f"of {sorted(KIND_OF_PROBLEM)}")
    kind = task_kind(KIND_OF_PROBLEM[problem])
    task = {"kind": kind.name, "seq_length": length, "pair": bool(pair), "text_column": "text",
            "text_b_column": "text_b" if pair else None, "pooling": "pooled",
            "dropout": dropout}
    if not kind.labelled:
        if len(names) != 1:
            raise ValueError(f"{src}: a regression head with {len(names)} outputs; keras_bert "
                             "regresses one score")
        return task, None
    return {**task, "num_classes": len(names), **kind.untuned_settings(labels)}, labels


def task_head_variables(model) -> dict:
    """The head's dense kernel and bias of a `BertClassifier`, `BertTagger` or `BertSpanQA`."""
    (layer,) = model.head_layers
    dense = getattr(layer, "dense", layer)
    return {"head/kernel": dense.kernel, "head/bias": dense.bias}


def _dropped_heads(ignored: list[str]) -> list[str]:
    return sorted({k.rsplit(".", 1)[0] for k in ignored if k.startswith(HEAD_PREFIXES)})


def convert_hf(src: str, dest: str, vocab_file: str, lower_case: bool, rules: str,
               encoder_only: bool = False, pair: bool = False) -> ModelDir:
    """Writes the HF model directory `src` as a keras_bert model directory `dest`, with its
    head as described in the module docstring (`encoder_only`: the encoder alone; `pair`:
    a sequence classifier reads text pairs). Raises `ValueError` for a head it cannot keep."""
    config = read_hf_config(src)
    arch = architecture(config)
    head = None if encoder_only else HEADS.get(arch)
    if pair and (head is None or arch != SEQUENCE):
        raise ValueError(f"pairs (--pair) are read by sequence classifiers; {src} is a "
                         f"{arch}{' converted encoder-only' if encoder_only else ''}")
    bert_config = BertConfig.from_hf_dict(config)
    no_pooler = [] if HEADS.get(arch, HFHead([], True)).pooler else ["^pooler/"]
    metadata = {"converted_from": os.path.abspath(src), "format": "huggingface",
                "architecture": arch}
    save = dict(vocab_file=vocab_file, lower_case=lower_case, rules=rules)
    if head is not None and arch in (MASKED_LM, PRETRAINING):
        pretrainer = BertPretrainer.from_bert_config(bert_config)
        report = heads.load_hf_pretrainer_weights(pretrainer, src)
        return save_model_dir(pretrainer.encoder, dest, metadata={
            **metadata, "initialised": report.initialised,
            "dropped": _dropped_heads(report.ignored)}, **save, write_extra=lambda directory:
            heads.save_pretraining_heads(pretrainer, directory, skip=report.initialised))
    encoder = BertEncoder(bert_config)
    targets, table, model, task, labels = encoder_variables(encoder), huggingface.ENCODER_TABLE, \
        None, None, None
    if head is not None:
        task, labels = task_block(src, config, arch, pair)
        model = build_task_model(task["kind"], encoder, task, labels)
        targets, table = {**targets, **task_head_variables(model)}, table + head.table
    state = huggingface.normalize_keys(huggingface.read_weights(src))
    arrays, ignored, origin = from_format(table, state, huggingface.IGNORED)
    dropped = _dropped_heads(ignored)
    if head is None and dropped and not encoder_only:
        raise ValueError(
            f"{src} is a {arch or 'model without architectures'} whose head keras_bert cannot "
            f"keep ({', '.join(dropped)}; heads kept: {', '.join(HEADS)}); pass "
            "--encoder-only (encoder_only=True) to convert the encoder alone")
    metadata.update(dropped=dropped, initialised=assign_checked(
        targets, arrays, source=f"weights {src}", optional=no_pooler, origin=origin))
    if model is None:
        return save_model_dir(encoder, dest, metadata=metadata, **save)
    return save_task_model(model, dest, vocab_file, lower_case, task, labels, rules=rules,
                           metadata=metadata)


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
    elif os.path.exists(os.path.join(model_dir.path, heads.PRETRAINING_HEADS)):
        has_nsp = not any(n.startswith("nsp/") for n in meta.get("initialised", []))
        lines.append(f"kept the {arch} heads: masked LM{' and next sentence' * has_nsp} "
                     f"({heads.PRETRAINING_HEADS}; pretrain --init {model_dir.path} continues "
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


def save_hf_task_dir(src: str, dest: str, lower_case: bool | None = None) -> str | None:
    """Writes keras_bert model directory `src` as the matching HF `BertFor*` directory
    (weights, `id2label`, `problem_type`); None when `src` has no head to write."""
    source = load_model_dir(src)
    lower_case = source.lower_case if lower_case is None else lower_case
    arch = ARCHITECTURE_OF_KIND.get((source.metadata.get("task") or {}).get("kind"))
    if arch is not None:
        loaded = load_task_model(src)
        model, task = loaded.model, loaded.task
        if getattr(model, "pooling", "pooled") != "pooled":
            raise ValueError(f"{src}: a {task['kind']} head on {model.pooling} pooling has no "
                             f"{arch} equivalent (it classifies the pooler's output); pass "
                             "--encoder-only to write the encoder alone")
        config = model.encoder.config.to_hf_dict()
        head = {k: v.numpy() for k, v in task_head_variables(model).items()}
        width = head["head/bias"].shape[0]  # HF's num_labels: 2 for the start/end of QA
        names = loaded.labels.names if loaded.labels is not None else [
            f"LABEL_{i}" for i in range(width)]
        config.update(architectures=[arch], id2label={str(i): n for i, n in enumerate(names)},
                      label2id={n: i for i, n in enumerate(names)})
        if task["kind"] in PROBLEM_OF_KIND:
            config["problem_type"] = PROBLEM_OF_KIND[task["kind"]]
        if "dropout" in task:
            config["classifier_dropout"] = task["dropout"]
        state = _bert_state(model.encoder, HEADS[arch].pooler)
        state.update({k: np.ascontiguousarray(v)
                      for k, v in to_format(HEADS[arch].table, head).items()})
        return huggingface.write_hf_dir(dest, config, state, source.vocab_file, lower_case)
    if not os.path.exists(os.path.join(source.path, heads.PRETRAINING_HEADS)):
        return None
    pretrainer = BertPretrainer(source.load_encoder())
    report = heads.load_pretraining_heads(pretrainer, source.path)
    if not any(n.startswith("nsp/") for n in report.initialised):
        return heads.save_hf_pretrainer(pretrainer, dest, source.vocab_file, lower_case)
    config = pretrainer.config.to_hf_dict()
    config["architectures"] = [MASKED_LM]
    state = {k: v for k, v in heads.pretrainer_to_hf_state(pretrainer).items()
             if not k.startswith(("cls.seq_relationship.", "bert.pooler."))}
    return huggingface.write_hf_dir(dest, config, state, source.vocab_file, lower_case)


__all__ = ["ARCHITECTURE_OF_KIND", "HEADS", "KIND_OF_PROBLEM", "convert_hf", "describe",
           "hf_label_names", "save_hf_task_dir", "serving_length", "task_block",
           "task_head_variables"]
