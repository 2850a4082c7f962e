"""`keras-bert audit DIR [--target ...]`: report, exit status, op and function named."""

from __future__ import annotations

import json

import pytest
import tensorflow as tf
import tensorflow_text as tf_text

from keras_bert.cli import main
from keras_bert.export.op_audit import load_op_list
from tests.export.helpers import make_tiny_model_dir


@pytest.fixture(scope="module")
def exported(tmp_path_factory):
    """A real `keras-bert export` of a tiny encoder."""
    root = tmp_path_factory.mktemp("audit")
    model_dir = make_tiny_model_dir(root / "tiny")
    assert main(["export", model_dir, str(root / "base"), "--version", "1"]) == 0
    return str(root / "base" / "1")


def test_passing_export_exits_0(exported, capsys):
    capsys.readouterr()
    assert main(["audit", exported]) == 0
    out = capsys.readouterr().out
    assert out.startswith("ok: ") and "TensorFlow Serving 2.13 to 2.20" in out
    assert main(["audit", exported, "--json", "--list-ops"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["ok"] and report["missing"] == {} and report["target"] == "serving-2.13+"
    assert "FastWordpieceTokenizeWithOffsets" in report["ops"]


def test_old_op_list_without_a_tf_text_op_exits_1_naming_it(exported, tmp_path, capsys):
    # A "model server" registering core TF 2.13 and TF Text 2.12.1 minus the wordpiece op.
    ops = (load_op_list("tf-2.13-core") | load_op_list("tf-text-2.12.1")) - {
        "FastWordpieceTokenizeWithOffsets"}
    listed = tmp_path / "old-server.txt"
    listed.write_text("\n".join(sorted(ops)) + "\n")
    capsys.readouterr()
    assert main(["audit", exported, "--target", str(listed)]) == 1
    err = capsys.readouterr().err
    line = next(x for x in err.splitlines() if "FastWordpieceTokenizeWithOffsets:" in x)
    # Named with the graph functions that call it (the tokenizer's branches) and the
    # signatures that reach them.
    assert "used in " in line and "(signature serving_default)" in line
    assert "(signature serving_default)" in line and "(signature preprocess)" in line
    assert main(["audit", exported, "--target", str(listed), "--json"]) == 1
    missing = json.loads(capsys.readouterr().out)["missing"]
    assert list(missing) == ["FastWordpieceTokenizeWithOffsets"]
    assert "serving_default" in missing["FastWordpieceTokenizeWithOffsets"]["reached_from"]


def test_round_robin_trim_fails_default_target(tmp_path, capsys):
    trimmer = tf_text.RoundRobinTrimmer(max_seq_length=4)

    @tf.function(input_signature=[tf.TensorSpec([None, None], tf.int32)] * 2)
    def trim(a, b):
        trimmed = trimmer.trim([tf.RaggedTensor.from_tensor(a, padding=0),
                                tf.RaggedTensor.from_tensor(b, padding=0)])
        return {"a": trimmed[0].flat_values, "b": trimmed[1].flat_values}

    module = tf.Module()
    module.trim = trim
    path = str(tmp_path / "round_robin")
    tf.saved_model.save(module, path, signatures={"serving_default": trim})
    capsys.readouterr()
    assert main(["audit", path]) == 1
    err = capsys.readouterr().err
    assert "TFText>RoundRobinTrim: used in __inference_trim" in err
    assert "(target serving-2.20 has it)" in err
    assert main(["audit", path, "--target", "serving-2.20"]) == 0


def test_not_a_saved_model_or_unknown_target_exits_2(exported, tmp_path, capsys):
    assert main(["audit", str(tmp_path)]) == 2
    assert "no saved_model.pb" in capsys.readouterr().err
    assert main(["audit", exported, "--target", "serving-1.0"]) == 2
    assert "Unknown target 'serving-1.0'" in capsys.readouterr().err
