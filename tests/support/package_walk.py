"""What the import-rule tests read: the package's modules outside the task kinds' folders."""

from __future__ import annotations

import ast
import os

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
KIND_FOLDERS = ("text_classification", "token_classification", "question_answering",
                "text_embedding")


def modules_outside_kind_folders(allowed: tuple[str, ...]):
    """`(path relative to the repository, AST)` of each module of `keras_bert` outside the
    kinds' folders and the paths (or path prefixes) in `allowed`."""
    for root, _, files in os.walk(os.path.join(REPO, "keras_bert")):
        for name in sorted(files):
            rel = os.path.relpath(os.path.join(root, name), REPO).replace(os.sep, "/")
            if not name.endswith(".py") or rel.startswith(allowed) or any(
                    rel.startswith(f"keras_bert/tasks/{folder}/") for folder in KIND_FOLDERS):
                continue
            with open(os.path.join(root, name), encoding="utf-8") as f:
                yield rel, ast.parse(f.read())
