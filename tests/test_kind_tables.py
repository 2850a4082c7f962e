"""What a task kind knows of other layouts is its folder's: the Hugging Face class it reads
and writes (`architectures[0]`, `BertFor...`) and that class's head table sit in the kind's
folder (`checkpoints.py`: `HF_HEAD`), and no code outside it, its registry line, the job
layer and the command line spells them (`tests/test_imports.py` keeps the kinds' classes
and modules so; this keeps their Hugging Face names so)."""

from __future__ import annotations

import ast
import os
import re

import pytest

from tests.support.package_walk import modules_outside_kind_folders

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
# Where a kind's Hugging Face names may be spelled outside its folder.
ALLOWED = ("keras_bert/tasks/registry.py", "keras_bert/jobs/", "keras_bert/cli/")


def kind_hf_names() -> tuple[set[str], set[str]]:
    """`(exact, inside)`: the string literals that spell a kind's Hugging Face table (its
    class's name, its head's keys, the head's module as a key prefix), and the regex
    fragments of its head's module (`qa_outputs\\.`) that a literal may hold inside."""
    from keras_bert.tasks.registry import checkpoint_hooks

    heads = [hooks.HF_HEAD for hooks in checkpoint_hooks()]
    keys = {rule.theirs for head in heads for rule in head.table}
    prefixes = {key.rsplit(".", 1)[0] + "." for key in keys}
    exact = {head.architecture for head in heads} | keys | prefixes
    return exact, {re.escape(prefix) for prefix in prefixes}


def kind_hf_names_outside_their_folders() -> list[str]:
    """Where code outside the kinds' folders and `ALLOWED` spells a kind's Hugging Face
    class or head table in a string literal: `path:line literal`."""
    exact, inside = kind_hf_names()
    found = []
    for rel, tree in modules_outside_kind_folders(ALLOWED):
        for node in ast.walk(tree):
            if isinstance(node, ast.Constant) and isinstance(node.value, str) and (
                    node.value in exact or any(part in node.value for part in inside)):
                found.append(f"{rel}:{node.lineno} {node.value!r}")
    return found


def test_each_kind_holds_its_hugging_face_class():
    from keras_bert.checkpoints.hf_architectures import PRETRAINING_CLASSES, HFHead
    from keras_bert.tasks.registry import checkpoint_hooks

    heads = [hooks.HF_HEAD for hooks in checkpoint_hooks()]
    assert all(isinstance(head, HFHead) for head in heads)
    assert {head.architecture for head in heads} == {
        "BertForSequenceClassification", "BertForTokenClassification",
        "BertForQuestionAnswering"}
    assert not {head.architecture for head in heads} & set(PRETRAINING_CLASSES)


def test_kind_hf_names_sit_in_their_folders():
    """`keras_bert.checkpoints` names no kind's class or head: the kinds hand theirs in."""
    exact, inside = kind_hf_names()
    assert {"BertForTokenClassification", "qa_outputs.weight", "classifier."} <= exact
    assert "qa_outputs\\." in inside
    assert kind_hf_names_outside_their_folders() == []


def kind_export_options_in_the_exporters() -> list[str]:
    """Where a function of `keras_bert/export/` takes a kind's export option by name (a
    field of a kind's `export_options_class`): `path:line function(parameter)`."""
    import dataclasses

    from keras_bert.tasks.registry import KINDS

    fields = {field.name for kind in KINDS.values()
              if kind.model_class().export_options_class is not None
              for field in dataclasses.fields(kind.model_class().export_options_class)}
    found = []
    for root, _, files in os.walk(os.path.join(REPO, "keras_bert", "export")):
        for name in sorted(files):
            if not name.endswith(".py"):
                continue
            rel = os.path.relpath(os.path.join(root, name), REPO).replace(os.sep, "/")
            with open(os.path.join(root, name), encoding="utf-8") as f:
                tree = ast.parse(f.read())
            for node in ast.walk(tree):
                if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                    arguments = node.args.args + node.args.kwonlyargs
                    found += [f"{rel}:{node.lineno} {node.name}({a.arg})" for a in arguments
                              if a.arg in fields]
    return found


def test_the_exporters_take_a_kinds_options_as_one_object():
    """`pooling` (an embedder's) and `null_score_threshold` (a question answerer's) reach
    the exporters as the kind's typed options (`task_options`), which they pass on unread."""
    from keras_bert.tasks.registry import task_class

    embedder, answerer = task_class("embed"), task_class("squad")
    assert embedder.export_options(pooling="cls").pooling == "cls"
    assert answerer.export_options(null_score_threshold=1).null_score_threshold == 1.0
    assert task_class("classify").export_options(pooling=None) is None
    with pytest.raises(ValueError, match="pooling: not an option of a TextClassifier's export"):
        task_class("classify").export_options(pooling="mean")
    with pytest.raises(ValueError, match="null_score_threshold: not an option of a Text"):
        embedder.export_options(null_score_threshold=1.5)
    assert kind_export_options_in_the_exporters() == []
