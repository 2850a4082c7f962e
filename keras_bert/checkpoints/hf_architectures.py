"""Hugging Face's `BertFor*` classes: the Hugging Face side of their heads.

`HuggingFaceCheckpoint` is a Hugging Face directory opened in memory (`config.json` parsed
once, the weights read once); an `HFHead` is one class's head table (canonical names ->
Hugging Face keys) and whether its `bert` has a pooler. `config.json`'s `architectures[0]`
says what a directory holds:

* a task kind's class: read as the task model of that kind, by the kind's folder, which
  holds the class's `HFHead` (`keras_bert/tasks/<kind>/checkpoints.py`: `HF_HEAD`, handed
  to `assign` and `write_hf_task_dir`): this package names no kind;
* `BertForMaskedLM`, `BertForPreTraining` (`PRETRAINING_CLASSES`): read as encoder +
  `pretraining_heads.weights.h5` (`convert_hf`);
* `BertModel`, none: read as encoder;
* any other with head weights (any module beside `BertModel`'s own): refused
  (`ValueError`) unless `encoder_only` or a kind keeps it (`refuse_unkept_heads`).

Weights HF's class lacks (the pooler of a class built without one, a masked LM's next
sentence head) keep their initial values and are listed in the manifest's
`metadata.initialised`. A task head's default serving length (`serving_length`) is the least
of the tokenizer's `model_max_length`, `max_position_embeddings` and 512.

The reverse (`write_hf_task_dir`, `convert TASK_DIR OUT --to huggingface`) writes the
matching `BertFor*` weights and `id2label`, so that `from_pretrained` loads the head;
`save_hf_pretraining_dir` writes the pretraining heads.
"""

from __future__ import annotations

import dataclasses
import functools
import json
import os

import numpy as np

from keras_bert.checkpoints import huggingface, pretraining_heads
from keras_bert.checkpoints.mapping import Rule, assign_checked, from_format, to_format
from keras_bert.checkpoints.model_dir import ModelDir, load_model_dir, save_model_dir
from keras_bert.checkpoints.opened import Checkpoint
from keras_bert.checkpoints.variables import encoder_variables
from keras_bert.config import BertConfig
from keras_bert.models.encoder import BertEncoder
from keras_bert.models.pretrainer import BertPretrainer

MASKED_LM = "BertForMaskedLM"
PRETRAINING = "BertForPreTraining"
# What `architectures` says of a model without a head: its `bert` always has a pooler.
HEADLESS = (None, "BertModel")


@dataclasses.dataclass(frozen=True)
class HFHead:
    """One `BertFor*` class: its name (`architectures[0]`), its head's mapping table
    (canonical names -> Hugging Face keys) and whether its `bert` has a pooler."""

    architecture: str
    table: tuple[Rule, ...]
    pooler: bool


PRETRAINING_CLASSES = {head.architecture: head for head in (
    HFHead(MASKED_LM, tuple(r for r in pretraining_heads.HF_HEAD_TABLE
                            if r.ours.startswith("mlm/")), pooler=False),
    HFHead(PRETRAINING, tuple(pretraining_heads.HF_HEAD_TABLE), pooler=True))}
MAX_SEQ_LENGTH = 512


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


def dropped_heads(keys: list[str]) -> list[str]:
    """The head modules of HF weights (`keys`, after `normalize_keys`) left out of a
    conversion: those beside `BertModel`'s own."""
    return sorted({k.rsplit(".", 1)[0] for k in keys if huggingface.is_head_key(k)})


def classifier_dropout(config: dict) -> float:
    """The dropout before a `BertFor*` class's classifier: `classifier_dropout`, else
    `hidden_dropout_prob` (0.1), as transformers builds it."""
    dropout = config.get("classifier_dropout")
    return float(config.get("hidden_dropout_prob", 0.1) if dropout is None else dropout)


@dataclasses.dataclass
class HuggingFaceCheckpoint(Checkpoint):
    """A Hugging Face directory opened: `config` is its `config.json` (parsed once, when
    opened); `state`, its weights by normalised key, is read once when first needed."""

    config: dict = dataclasses.field(default_factory=dict)

    @property
    def architecture(self) -> str | None:
        """`architectures[0]` of the config, or None."""
        return architecture(self.config)

    @functools.cached_property
    def state(self) -> dict[str, np.ndarray]:
        """The weights, by Hugging Face key (`huggingface.normalize_keys`)."""
        return huggingface.normalize_keys(huggingface.read_weights(self.path))

    def new_encoder(self, dtype=None) -> BertEncoder:
        """A `BertEncoder` of the config, its weights not yet assigned (`assign`)."""
        return BertEncoder(BertConfig.from_hf_dict(self.config), dtype=dtype)

    def load_encoder(self, dtype=None) -> BertEncoder:
        """The encoder with its weights (a head beside it is left out: see
        `refuse_unkept_heads`)."""
        encoder = self.new_encoder(dtype)
        self.assign(encoder)
        return encoder

    def assign(self, encoder: BertEncoder, head: dict | None = None,
               hf_head: HFHead | None = None) -> dict:
        """Assigns the weights to `encoder` and, given, to the head's variables (`head`:
        canonical name -> variable, `head/kernel` and `head/bias`) through `hf_head`'s table
        (the class's, which its kind's folder holds), all checked before any is assigned.
        Returns the provenance a model directory records (`dropped`: HF head modules left
        out; `initialised`: our weights the checkpoint lacks)."""
        arch = self.architecture
        targets, table = encoder_variables(encoder), list(huggingface.ENCODER_TABLE)
        if head is not None:
            targets, table = {**targets, **head}, table + list(hf_head.table)
        optional = [] if self.pooler_required(hf_head) else ["^pooler/"]
        arrays, ignored, origin = from_format(table, self.state, huggingface.IGNORED)
        initialised = assign_checked(targets, arrays, source=f"weights {self.path}",
                                     optional=optional, origin=origin)
        return {**self.provenance, "architecture": arch, "dropped": dropped_heads(ignored),
                "initialised": initialised}

    def pooler_required(self, hf_head: HFHead | None = None) -> bool:
        """Whether the weights must hold a pooler: as `hf_head` (or a pretraining class)
        says; a `BertModel` always has one, and any other `BertFor*` class may be one that
        Hugging Face builds without it (its token classification, question answering and
        masked LM classes), so there the pooler may be absent as a whole."""
        known = hf_head or PRETRAINING_CLASSES.get(self.architecture)
        return known.pooler if known is not None else self.architecture in HEADLESS

    def refuse_unkept_heads(self, kept: tuple[str, ...] = ()) -> None:
        """A `ValueError` when the weights hold a head of a class keras_bert keeps none of:
        neither a pretraining class (`PRETRAINING_CLASSES`) nor one of `kept` (the task
        kinds' classes, which `keras_bert.tasks` passes: this package knows no kind)."""
        heads = [*kept, *PRETRAINING_CLASSES]
        if self.architecture in heads:
            return
        dropped = dropped_heads(list(self.state))
        if dropped:
            tasks = "" if kept else (
                "; keras_bert.tasks.task_conversion.convert (keras-bert convert) keeps the "
                "task kinds' heads")
            raise ValueError(
                f"{self.path} is a {self.architecture or 'model without architectures'} whose "
                f"head keras_bert cannot keep ({', '.join(dropped)}; heads kept: "
                f"{', '.join(heads)}{tasks}); pass --encoder-only (encoder_only=True) to "
                "convert the encoder alone")

    def serving_length(self) -> int:
        """The longest input the model takes (`serving_length`)."""
        return serving_length(self.path, self.config)


def convert_hf(checkpoint: HuggingFaceCheckpoint, dest: str,
               encoder_only: bool = False) -> ModelDir:
    """Writes the opened HF `checkpoint` as a keras_bert model directory `dest`: the encoder,
    with a masked LM / pretraining model's heads (`encoder_only`: the encoder alone). Any
    other head is refused (`refuse_unkept_heads`): a task kind's is kept by
    `keras_bert.tasks.task_conversion` (`keras-bert convert`), which asks the kinds first."""
    src, arch = checkpoint.path, checkpoint.architecture
    save = dict(vocab=checkpoint.vocab_file, lower_case=checkpoint.lower_case,
                rules=checkpoint.rules)
    if not encoder_only and arch in (MASKED_LM, PRETRAINING):
        pretrainer = BertPretrainer.from_bert_config(BertConfig.from_hf_dict(checkpoint.config))
        report = pretraining_heads.load_hf_pretrainer_weights(pretrainer, src)
        return save_model_dir(pretrainer.encoder, dest, metadata={
            **checkpoint.provenance, "architecture": arch, "initialised": report.initialised,
            "dropped": dropped_heads(report.ignored)}, **save, write_extra=lambda directory:
            pretraining_heads.save_pretraining_heads(pretrainer, directory,
                                                     skip=report.initialised))
    if not encoder_only:
        checkpoint.refuse_unkept_heads()
    encoder = checkpoint.new_encoder()
    return save_model_dir(encoder, dest, metadata=checkpoint.assign(encoder), **save)


# ----- keras_bert -> Hugging Face ----------------------------------------------------------


def _bert_state(encoder, pooler: bool) -> dict[str, np.ndarray]:
    return {f"bert.{k}": v for k, v in huggingface.encoder_to_hf_state(encoder).items()
            if pooler or not k.startswith("pooler.")}


def write_hf_task_dir(dest: str, encoder, hf_head: HFHead, head: dict, label_names: list[str],
                      vocab_file: str, lower_case: bool, problem: str | None = None,
                      dropout: float | None = None) -> str:
    """Writes `encoder` and a task head's arrays (`head`: canonical name -> array) as the
    Hugging Face `hf_head` class's directory `dest` (weights, `id2label`, `problem_type`),
    so that `from_pretrained` loads the head."""
    config = encoder.config.to_hf_dict()
    config.update(architectures=[hf_head.architecture],
                  id2label={str(i): n for i, n in enumerate(label_names)},
                  label2id={n: i for i, n in enumerate(label_names)})
    if problem is not None:
        config["problem_type"] = problem
    if dropout is not None:
        config["classifier_dropout"] = dropout
    state = _bert_state(encoder, hf_head.pooler)
    state.update({k: np.ascontiguousarray(v)
                  for k, v in to_format(list(hf_head.table), head).items()})
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


__all__ = ["PRETRAINING_CLASSES", "HFHead", "HuggingFaceCheckpoint", "architecture",
           "classifier_dropout", "convert_hf", "hf_label_names", "read_hf_config",
           "save_hf_pretraining_dir", "serving_length", "write_hf_task_dir"]
