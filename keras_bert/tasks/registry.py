"""The task kinds: one table of their names, and the class of each.

A kind's `name` is what a model directory records (`keras_bert.json`: `metadata.task.kind`)
and what `keras-bert finetune --task` takes; its class is the Keras model a Python user
holds (`keras_bert.tasks.<folder>.model`). This module imports no TensorFlow, so the
command line reads the names without loading it; the classes are imported when asked for.
Adding a kind is a new folder under `keras_bert/tasks/` and one line in `KINDS`. Nothing
else compares kind names: code that needs a kind's behaviour asks its class.
"""

from __future__ import annotations

import dataclasses
import importlib


@dataclasses.dataclass(frozen=True)
class Kind:
    """One task kind: its saved `name`, the `module:Class` of its model, whether
    `keras-bert finetune` trains it, and the Hugging Face `BertFor*` architecture (and
    sequence classification's `problem_type`) its checkpoints have there."""

    name: str
    model: str
    finetune: bool = True
    hf_architecture: str | None = None
    hf_problem: str | None = None

    def model_class(self) -> type:
        """The kind's model class (imports its module, and with it TensorFlow)."""
        module, cls = self.model.split(":")
        return getattr(importlib.import_module(f"keras_bert.tasks.{module}"), cls)


_SEQUENCE = "BertForSequenceClassification"
KINDS: dict[str, Kind] = {kind.name: kind for kind in (
    Kind("classify", "text_classification.model:TextClassifier",
         hf_architecture=_SEQUENCE, hf_problem="single_label_classification"),
    Kind("multilabel", "text_classification.multilabel:MultiLabelClassifier",
         hf_architecture=_SEQUENCE, hf_problem="multi_label_classification"),
    Kind("regress", "text_classification.model:TextRegressor",
         hf_architecture=_SEQUENCE, hf_problem="regression"),
    Kind("tag", "token_classification.model:TokenClassifier",
         hf_architecture="BertForTokenClassification"),
    Kind("squad", "question_answering.model:QuestionAnswerer",
         hf_architecture="BertForQuestionAnswering"),
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


def hf_kind(architecture: str | None, problem: str | None = None) -> Kind | None:
    """The kind of a Hugging Face `BertFor*` task model (`problem`: its `problem_type`, for
    sequence classification), or None for an architecture that is not a task model."""
    for entry in KINDS.values():
        if entry.hf_architecture == architecture and entry.hf_problem == problem:
            return entry
    return None


def kind_of_class(model_class: type) -> Kind:
    """The entry of a task model class."""
    return kind(model_class.kind)
