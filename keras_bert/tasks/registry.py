"""The task kinds by the name a model directory records (`metadata.task.kind`)."""

from __future__ import annotations

from keras_bert.tasks.classification import ClassifyTask, RegressTask
from keras_bert.tasks.embedding import EmbedTask
from keras_bert.tasks.multilabel import MultiLabelTask
from keras_bert.tasks.question_answering import SpanQATask
from keras_bert.tasks.tagging import TagTask
from keras_bert.tasks.task import Task

TASK_KINDS: dict[str, Task] = {task.name: task for task in (
    ClassifyTask(), MultiLabelTask(), RegressTask(), TagTask(), SpanQATask(), EmbedTask())}
FINETUNE_TASKS = tuple(name for name, task in TASK_KINDS.items() if task.finetunable)


def task_kind(name: str) -> Task:
    """The `Task` saved under `name`; a `ValueError` naming the known kinds otherwise."""
    if name not in TASK_KINDS:
        raise ValueError(f"unknown task kind {name!r}; expected one of {tuple(TASK_KINDS)}")
    return TASK_KINDS[name]
