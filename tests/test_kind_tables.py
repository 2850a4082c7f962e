"""What a task kind knows of other layouts is its folder's: the Hugging Face class it reads
and writes (`architectures[0]`, `BertFor...`) and that class's head table sit in the kind's
folder (`checkpoints.py`: `HF_HEAD`), and no code outside it, its registry line, the job
layer and the command line spells them (`tests/test_imports.py` keeps the kinds' classes
and modules so; this keeps their Hugging Face names so)."""

from __future__ import annotations

import ast
import os
import re

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
KIND_FOLDERS = ("text_classification", "token_classification", "question_answering",
                "text_embedding")
# Where a kind's Hugging Face names may be spelled outside its folder.
ALLOWED = ("keras_bert/tasks/registry.py", "keras_bert/jobs/", "keras_bert/cli/")


def _modules_outside_kind_folders():
    """`(path relative to the repository, AST)` of each module of `keras_bert` outside the
    kinds' folders and `ALLOWED`."""
    for root, _, files in os.walk(os.path.join(REPO, "keras_bert")):
        for name in sorted(files):
            rel = os.path.relpath(os.path.join(root, name), REPO).replace(os.sep, "/")
            if not name.endswith(".py") or rel.startswith(ALLOWED) or any(
                    rel.startswith(f"keras_bert/tasks/{folder}/") for folder in KIND_FOLDERS):
                continue
            with open(os.path.join(root, name), encoding="utf-8") as f:
                yield rel, ast.parse(f.read())


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
    for rel, tree in _modules_outside_kind_folders():
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
