"""`keras_bert.export.runtime_check` and `keras-bert audit --runtime`: loading an export in a
real TensorFlow runtime finds what the op-name audit cannot (variables that do not restore,
kernels missing for a dtype)."""

import json
import sys

import keras
import numpy as np
import pytest
import tensorflow as tf

from keras_bert.cli import main
from keras_bert.export import runtime_check
from keras_bert.export.op_audit import audit
from keras_bert.export.runtime_check import check_in_runtime, missing_ops_in
from keras_bert.export.session_bundle import SessionBundle, probe, sample_inputs
from tests.export.runtimes import runtime_python


class _KerasInModule(tf.Module):
    """The export pattern TF Serving cannot restore (tensorflow/serving#2250): a Keras 3
    model held by a `tf.Module` and saved with `tf.saved_model.save`."""

    def __init__(self):
        super().__init__()
        self.model = keras.Sequential([keras.Input((3,)), keras.layers.Dense(2)])

    @tf.function(input_signature=[tf.TensorSpec([None, 3], tf.float32, name="x")])
    def serve(self, x):
        return {"y": self.model(x)}


class _HalfCholesky(tf.Module):
    """`Cholesky` is a registered op, but no kernel takes float16."""

    @tf.function(input_signature=[tf.TensorSpec([2, 2], tf.float16, name="m")])
    def serve(self, m):
        return {"l": tf.linalg.cholesky(m + tf.eye(2, dtype=tf.float16))}


@pytest.fixture(scope="module")
def broken_exports(tmp_path_factory):
    root = tmp_path_factory.mktemp("broken")
    paths = {}
    for name, module in [("keras_in_module", _KerasInModule()), ("half", _HalfCholesky())]:
        paths[name] = str(root / name)
        tf.saved_model.save(module, paths[name], signatures={"serving_default": module.serve})
    return paths


def test_sample_inputs_follow_the_signature(broken_exports):
    with SessionBundle(broken_exports["half"]) as bundle:
        inputs = sample_inputs(bundle.signature_def("serving_default"))
    assert inputs["m"].shape == (2, 2) and inputs["m"].dtype == np.float16


def answering_runtime(export_dir: str, folder) -> str:
    """An interpreter for `check_in_runtime` that answers with the `probe` of `export_dir`
    (the Session load and the signatures' runs a runtime's process does), run here in this
    Python's TensorFlow: a script printing that line, not a second TensorFlow process (~5 s
    each on 2 busy cores; `test_an_export_passes_in_tf_serving_2_13_to_2_19_runtime` and the
    runtime matrix start real ones, slow)."""
    answer = folder / "probe.json"
    answer.write_text(json.dumps(probe(export_dir)) + "\n", encoding="utf-8")
    runtime = folder / "python"
    runtime.write_text(f"#!/bin/sh\ncat '{answer}'\n", encoding="utf-8")
    runtime.chmod(0o755)
    return str(runtime)


@pytest.fixture(scope="module")
def reports(broken_exports, tmp_path_factory):
    """Each broken export checked once by `check_in_runtime`, whose runtime answers with the
    export's `probe` in this Python's TensorFlow (`answering_runtime`), for the API's tests
    and the command line's."""
    return {name: check_in_runtime(path, answering_runtime(path, tmp_path_factory.mktemp(name)))
            for name, path in broken_exports.items()}


@pytest.fixture
def cli_runtime(monkeypatch, reports, broken_exports):
    """`keras-bert audit --runtime` given the fixture's reports instead of a second process
    per export: the command asks for this export in this Python, as a user's would (its own
    process: `test_an_export_passes_in_tf_serving_2_13_to_2_19_runtime`, slow)."""
    by_path = {path: reports[name] for name, path in broken_exports.items()}

    def check(export_dir, python):
        assert python == sys.executable
        return by_path[export_dir]

    monkeypatch.setattr(runtime_check, "check_in_runtime", check)


def test_variables_that_do_not_restore_are_reported(broken_exports, reports, cli_runtime,
                                                    capsys):
    path = broken_exports["keras_in_module"]
    assert audit(path).ok  # op names alone cannot see it
    report = reports["keras_in_module"]
    assert not report.ok and report.load_error is None
    assert "Could not find variable" in report.signature_errors["serving_default"]
    assert main(["audit", path, "--runtime", sys.executable]) == 1
    assert "Could not find variable" in capsys.readouterr().err


def test_missing_kernels_are_named(broken_exports, reports, cli_runtime, capsys):
    path = broken_exports["half"]
    assert audit(path).ok
    report = reports["half"]
    assert report.missing_ops == {"Cholesky": ["serving_default"]}
    assert "op Cholesky: no kernel in this runtime" in report.message()
    assert main(["audit", path, "--runtime", sys.executable, "--json"]) == 1
    result = json.loads(capsys.readouterr().out)
    assert result["ok"] is False and result["runtimes"][0]["missing_ops"] == {
        "Cholesky": ["serving_default"]}


def test_missing_ops_in_messages():
    assert missing_ops_in("Op type not registered 'TFText>RoundRobinTrim' in binary") == [
        "TFText>RoundRobinTrim"]
    assert missing_ops_in("nothing here") == []


@pytest.mark.slow(env="tf-2.12.1")  # with the runtime matrix's 2.12.1 runs
def test_an_export_passes_in_tf_serving_2_13_to_2_19_runtime(tmp_path, capsys):
    from keras_bert.tasks.task_dir import export_model
    from tests.export.helpers import make_tiny_task_dir

    task_dir = make_tiny_task_dir(tmp_path, {"kind": "classify", "seq_length": 16}, ["a", "b"])
    exported = export_model(task_dir, str(tmp_path / "export"))
    python = runtime_python("tensorflow-2.12.1")
    assert main(["audit", exported.path, "--runtime", python]) == 0
    out = capsys.readouterr().out
    assert "op names are in the op registries" in out
    assert "loads and runs every signature in TensorFlow 2.12.1" in out
