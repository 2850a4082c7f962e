"""A fine-tuned model directory is read once, and a model in memory exports without one.

`keras-bert export MODEL_DIR` (`task_dir.export_model`) opens each file of the directory at
most once: the manifest, the vocabulary, the labels and the two weight files. A model's
`export` writes the TF Serving version from the model in memory: no model directory is
written on the way (the save-and-reload it replaced wrote one to a temporary directory).
`save` writes the directory without reading any of it back, and what it returns is what a
later load reads.
"""

from __future__ import annotations

import builtins
import collections
import os

import h5py
import numpy as np
import pytest

from keras_bert import TextClassifier
from keras_bert.checkpoints import model_dir as model_dir_module
from keras_bert.export.session_bundle import SessionBundle
from keras_bert.tasks import task_dir as task_dir_module
from keras_bert.tasks.task_dir import export_model

LABELS = ["other", "whale"]
TEXTS = ["a whale in the sea", "the ship sailed", "whale and ship"]


@pytest.fixture(scope="module")
def classifier(model_dir):
    return TextClassifier.from_pretrained(model_dir, labels=LABELS, seq_length=16,
                                          precision="float32")


def _opened_under(monkeypatch, root: str) -> collections.Counter:
    """Counts the files under `root` opened for reading, by Python or by h5py."""
    opened: collections.Counter = collections.Counter()
    real_open, real_h5 = builtins.open, h5py.File

    def tracked_open(file, mode="r", *args, **kwargs):
        if isinstance(file, (str, os.PathLike)) and "r" in mode and str(file).startswith(root):
            opened[os.path.relpath(str(file), root)] += 1
        return real_open(file, mode, *args, **kwargs)

    def tracked_h5(name, mode="r", *args, **kwargs):
        if isinstance(name, (str, os.PathLike)) and mode == "r" and str(name).startswith(root):
            opened[os.path.relpath(str(name), root)] += 1
        return real_h5(name, mode, *args, **kwargs)

    monkeypatch.setattr(builtins, "open", tracked_open)
    monkeypatch.setattr(h5py, "File", tracked_h5)
    return opened


def test_keras_bert_export_reads_the_directory_once(classifier, tmp_path, monkeypatch):
    path = classifier.save(str(tmp_path / "model"))
    files = sorted(os.listdir(path))
    opened = _opened_under(monkeypatch, path)
    exported = export_model(path, str(tmp_path / "served"), target=None)
    monkeypatch.undo()
    assert set(opened) == set(files), (opened, files)  # every file read ...
    assert max(opened.values()) == 1, opened  # ... once
    with SessionBundle(exported.path) as bundle:
        served = bundle.run("serving_default", {"text": np.array(TEXTS, object)})
    np.testing.assert_array_equal(served["logits"], classifier.predict(TEXTS)["logits"])


def test_export_from_memory_writes_no_model_directory(classifier, tmp_path, monkeypatch):
    def refuse(*args, **kwargs):
        raise AssertionError("export wrote a model directory")

    for module, name in ((model_dir_module, "save_model_dir"),
                         (task_dir_module, "save_model_dir"),
                         (task_dir_module, "write_task_dir"), (TextClassifier, "save")):
        monkeypatch.setattr(module, name, refuse)
    before = set(os.listdir(tmp_path))
    version = classifier.export(str(tmp_path / "served"), target=None)
    assert set(os.listdir(tmp_path)) - before == {"served"}
    assert sorted(os.listdir(os.path.join(version, "assets"))) == ["labels.txt", "vocab.txt"]
    with open(os.path.join(version, "assets", "labels.txt"), encoding="utf-8") as f:
        assert f.read().split() == LABELS
    with open(os.path.join(version, "assets", "vocab.txt"), encoding="utf-8") as f:
        assert f.read().splitlines() == list(classifier.preprocessor.tokenizer.vocab)


def test_save_reads_nothing_back_and_returns_what_a_load_reads(classifier, tmp_path,
                                                               monkeypatch):
    from keras_bert.checkpoints.model_dir import load_model_dir
    from keras_bert.tasks.task_dir import write_task_dir

    path = str(tmp_path / "model")
    for replacing in (False, True):  # a new directory, then one replacing it
        opened = _opened_under(monkeypatch, str(tmp_path))
        written = write_task_dir(classifier.network, classifier.preprocessor, path,
                                 classifier._task_block(), classifier.labels)
        monkeypatch.undo()
        assert dict(opened) == {}, (replacing, opened)
        assert written == load_model_dir(path)
    assert sorted(os.listdir(tmp_path)) == ["model"]  # nothing left beside it
