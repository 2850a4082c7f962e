"""Exports that more than one file of tests/export reads (session scope: built once per
worker, by whichever of those files runs there first; `--dist loadfile` puts both files on
one worker in about half of the README tier's runs, and then the second file builds
nothing)."""

from __future__ import annotations

import pytest

from keras_bert.tasks.task_dir import export_model
from tests.export.helpers import LITERT_LABELS, LITERT_SEQ, make_tiny_task_dir
from tests.support.tokenizer_parity import uncased_vocab_path


@pytest.fixture(scope="session")
def litert_classifier_dir(tmp_path_factory) -> str:
    """A tiny classifier (`LITERT_SEQ` tokens, `LITERT_LABELS`, the uncased vocabulary) with
    the GELU of Google's releases (the tanh approximation), as a task directory."""
    root = tmp_path_factory.mktemp("litert_classifier")
    return make_tiny_task_dir(root, {"kind": "classify", "seq_length": LITERT_SEQ},
                              LITERT_LABELS, vocab_file=uncased_vocab_path(),
                              hidden_act="gelu_approximate")


@pytest.fixture(scope="session")
def litert_classifier_file(litert_classifier_dir, tmp_path_factory):
    """Its LiteRT export (float32, TF Text's FastBertTokenizer in the file): the reference
    file of `test_litert.py` and the interpreter's of `test_litert_runtime.py`. Tests read
    it and never write next to it."""
    root = tmp_path_factory.mktemp("litert_classifier_file")
    return export_model(litert_classifier_dir, str(root / "lite"), format="litert",
                        tokenizer="fast-bert")
