"""`bench/accelerator.py` and what travels with it (`bench/accelerator_data.py`): a lent GPU
gives one call, so a failing part must not lose the others; the fine-tuned weights come back
in files small enough for that machine to send; and a model fitted under Keras' JAX backend
answers the same in its TensorFlow export, loaded as TF Serving loads it."""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys

import numpy as np
import pytest

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def test_weights_travel_in_files_under_the_limit_and_come_back_equal(tmp_path, monkeypatch):
    from bench import accelerator_data

    monkeypatch.setattr(accelerator_data, "CHUNK_BYTES", 1000)
    rng = np.random.default_rng(0)
    # 1,600 bytes: over the limit alone, so cut into row blocks; then two small ones.
    weights = [rng.normal(size=(100, 8)).astype("float16"),
               rng.normal(size=(8,)).astype("float16"), np.array(0.5, "float16")]
    files = accelerator_data.write_weights(str(tmp_path), weights)
    assert len(files) >= 2
    for name in files:
        with np.load(tmp_path / name) as data:
            assert sum(data[k].nbytes for k in data.files) <= 1000, name
    shapes = [list(w.shape) for w in weights]
    back = accelerator_data.read_weights(str(tmp_path), files, shapes)
    for sent, received in zip(weights, back, strict=True):
        assert received.dtype == np.float32 and np.array_equal(received, sent)
    # A file lost on the way: an error naming the weight, never a short weight.
    with pytest.raises(ValueError, match=r"weight 0 \(\[100, 8\]\) is of shape"):
        accelerator_data.read_weights(str(tmp_path), files[1:], shapes)


def test_a_failing_part_is_recorded_and_the_run_goes_on(tmp_path):
    from bench.accelerator import _part, _write

    path = tmp_path / "result.json"
    args = argparse.Namespace(strict=False, json=str(path))
    result = {"pretraining": [_part(args, lambda: 1 / 0), _part(args, lambda: {"batch": 8})]}
    _write(args, result)
    rows = json.loads(path.read_text())["pretraining"]
    assert rows == [{"error": "ZeroDivisionError: division by zero"}, {"batch": 8}]
    with pytest.raises(ZeroDivisionError):  # --strict, as the quick mode runs
        _part(argparse.Namespace(strict=True, json=None), lambda: 1 / 0)


def test_the_report_has_a_table_per_part_that_ran_and_no_blank_lines():
    from bench.accelerator import report

    step = {"model": "base", "batch": 8, "sequences_per_s": 123.4, "model_tflops": 1.5,
            "mfu": 0.25, "ms_per_step": 64.8}
    tune = {"train": 40, "held_out": 20, "epochs": 1, "precision": "float32", "fit_s": 3.0,
            "examples_per_s": 13.3, "accuracy": 0.75, "majority": 0.5}
    both = report({"pretraining": [step], "finetuning": tune}, "float32").splitlines()
    assert both[2].split("|")[5].strip() == "123.4" and both[3] == ""
    assert "0.7500" in both[-1]
    for result in ({"pretraining": [], "finetuning": tune},  # --skip-pretraining
                   {"pretraining": [step]},                   # --skip-finetuning
                   {"pretraining": [], "finetuning": {"error": "OOM"}}):
        lines = report(result, "float32").splitlines()
        assert lines[0] and lines[-1], lines  # neither starts nor ends with a blank line
    failed = report({"pretraining": [], "finetuning": {"error": "OOM"}}, "float32")
    assert failed == "fine-tuning failed: OOM"


def _bench(*arguments, backend="tensorflow") -> str:
    env = dict(os.environ, KERAS_BACKEND=backend)
    run = subprocess.run([sys.executable, "bench/accelerator.py", *arguments], cwd=REPO,
                         env=env, capture_output=True, text=True, timeout=600)
    assert run.returncode == 0, run.stderr[-3000:]
    return run.stdout


@pytest.mark.slow  # three processes, ~30 s; CI runs it once a cycle
@pytest.mark.needs_jax
def test_a_model_fitted_under_jax_answers_the_same_in_its_tensorflow_export(tmp_path):
    data, answers = str(tmp_path / "data"), str(tmp_path / "answers")
    _bench("prepare", data, "--quick")
    _bench("run", "--data", data, "--skip-pretraining", "--epochs", "1", "--strict",
           "--answers", answers, backend="jax")
    out = "\n" + _bench("verify", "--quick", "--data", data, "--answers", answers)
    result = json.loads(out[out.rindex("\n{") + 1:])  # the JSON it prints last
    assert result["held_out"] == 32 and result["single_window"] == 1.0
    # float32 on both sides, the same float16-rounded weights: only summation order differs.
    assert result["export_vs_float32_max_abs"] < 1e-5
    assert result["labels_equal_float32"] == 1.0
