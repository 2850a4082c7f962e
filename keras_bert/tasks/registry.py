"""The task kinds: one table of their names, the class of each, and the hook of each for
fine-tuned heads in other checkpoint layouts.

A kind's `name` is what a model directory records (`keras_bert.json`: `metadata.task.kind`)
and what `keras-bert finetune --task` takes; its class is the Keras model a Python user
holds (`keras_bert.tasks.<folder>.model`). This module imports no TensorFlow, so the
command line reads the names without loading it; the classes and hooks are imported when
asked for. Adding a kind is a new folder under `keras_bert/tasks/` and one line in `KINDS`
(and its class in the package's exports: `docs/layout.md`). Nothing else compares kind
names: code that needs a kind's behaviour asks its class.
"""

from __future__ import annotations

import dataclasses
import importlib


@dataclasses.dataclass(frozen=True)
class Kind:
    """One task kind: its saved `name`, the `module:Class` of its model, whether
    `keras-bert finetune` trains it, and `checkpoints`: the module of its folder that reads
    and writes its fine-tuned heads in other checkpoint layouts, if any.

    A `checkpoints` module is the hook through which the checkpoint layouts stay free of
    kinds (`keras_bert.checkpoints` knows none): `read_head(checkpoint)` is the fine-tuned
    model of one of its kinds that an opened checkpoint (`keras_bert.checkpoints.opened`)
    holds, as a `keras_bert.tasks.task_conversion.HeldModel`, or None; `hf_head(model,
    source)` says how its model goes to Hugging Face (a `task_conversion.HFTaskHead`);
    `HF_HEAD` is the Hugging Face class it reads and writes (a
    `keras_bert.checkpoints.hf_architectures.HFHead`: its name and head table)."""

    name: str
    model: str
    finetune: bool = True
    checkpoints: str | None = None

    def model_class(self) -> type:
        """The kind's model class (imports its module, and with it TensorFlow)."""
        module, cls = self.model.split(":")
        return getattr(importlib.import_module(f"keras_bert.tasks.{module}"), cls)

    def checkpoint_hooks(self):
        """The kind's `checkpoints` module (imported), or None."""
        if self.checkpoints is None:
            return None
        return importlib.import_module(f"keras_bert.tasks.{self.checkpoints}")


_CLASSIFIERS = "text_classification.checkpoints"
KINDS: dict[str, Kind] = {kind.name: kind for kind in (
    Kind("classify", "text_classification.model:TextClassifier", checkpoints=_CLASSIFIERS),
    Kind("multilabel", "text_classification.multilabel:MultiLabelClassifier",
         checkpoints=_CLASSIFIERS),
    Kind("regress", "text_classification.model:TextRegressor", checkpoints=_CLASSIFIERS),
    Kind("tag", "token_classification.model:TokenClassifier",
         checkpoints="token_classification.checkpoints"),
    Kind("squad", "question_answering.model:QuestionAnswerer",
         checkpoints="question_answering.checkpoints"),
    Kind("embed", "text_embedding.model:TextEmbedder", finetune=False),
)}
FINETUNE_KINDS = tuple(name for name, kind in KINDS.items() if kind.finetune)
# What a model directory without a task block is: a plain encoder, which embeds.
ENCODER_KIND = "embed"


def kind(name: str | None) -> Kind:
    """The `Kind` saved under `name`; a `ValueError` naming the known kinds otherwise."""
    if name not in KINDS:
        raise ValueError(f"unknown task kind {name!r}; expected one of {tuple(KINDS)}")
    return KINDS[name]


def task_class(name: str | None) -> type:
    """The model class of the kind `name` (`kind(name).model_class()`)."""
    return kind(name).model_class()


def checkpoint_hooks() -> list:
    """The kinds' `checkpoints` modules (`Kind.checkpoints`), each once, in table order."""
    names = dict.fromkeys(kind.checkpoints for kind in KINDS.values() if kind.checkpoints)
    return [importlib.import_module(f"keras_bert.tasks.{name}") for name in names]


def kind_of_class(model_class: type) -> Kind:
    """The entry of a task model class."""
    return kind(model_class.kind)
