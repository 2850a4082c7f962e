"""The quick start end to end in `--quick` mode: pretrain, task, fine-tune, export, serve +
query over gRPC and REST, attention PNG, artefacts where it says they are."""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys

import numpy as np
import pytest

from keras_bert.tasks.readers import TextExample

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SCRIPT = os.path.join(REPO, "examples", "quickstart.py")


def _load_quickstart():
    if "quickstart_example" not in sys.modules:
        spec = importlib.util.spec_from_file_location("quickstart_example", SCRIPT)
        module = importlib.util.module_from_spec(spec)
        sys.modules[spec.name] = module  # (dataclasses look their module up there)
        spec.loader.exec_module(module)
    return sys.modules["quickstart_example"]


@pytest.mark.slow  # over 30 s in CI's durations log (session 17)
def test_quick_mode_end_to_end(tmp_path):
    out = tmp_path / "qs"
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3")
    result = subprocess.run([sys.executable, SCRIPT, "--quick", "--out", str(out)], cwd=REPO,
                            env=env, capture_output=True, text=True, timeout=400)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    log = result.stdout
    for stage in range(1, 7):
        assert f"==> [{stage}/6]" in log
    assert "held-out MLM accuracy" in log and "held-out accuracy" in log
    assert "server stopped (exit status 0)" in log

    summary = json.loads((out / "quickstart.json").read_text())
    quickstart = _load_quickstart()
    answers = summary["served"]["answers"]
    assert [a["text"] for a in answers] == quickstart.QUERIES
    for answer in answers:
        assert answer["grpc"] == answer["rest"] in ("moby_dick", "sotu")
        assert f"gRPC {answer['grpc']:>9}" in log
    # The served answers are the fine-tuned model's own (labels, probabilities to 1e-5).
    from keras_bert.checkpoints.task_dir import load_task_model

    loaded = load_task_model(str(out / "finetune" / "model"))
    own = loaded.task_kind.predict(loaded.serving_module(), [
        TextExample(a["text"]) for a in answers])
    assert [o["label"] for o in own] == [a["grpc"] for a in answers]
    np.testing.assert_allclose([max(o["probabilities"]) for o in own],
                               [a["probability"] for a in answers], atol=1e-5)
    # Quick mode (10 pretraining steps, 3 epochs on 64 sentences per class) learns the
    # task: 0.711 on the 128 balanced held-out sentences (AMD EPYC, session 8); chance is
    # 0.5, and the same run on shuffled training labels scores 0.500 (docs/runs.md).
    assert summary["finetuning"]["accuracy"] >= 0.6
    assert summary["pretraining"]["mlm_frequency_baseline"] > 0
    for name, path in summary["artefacts"].items():
        assert os.path.exists(path), name
        assert path in log
    assert os.path.exists(os.path.join(summary["artefacts"]["export (TF Serving base dir)"],
                                       "1", "saved_model.pb"))
    with open(summary["artefacts"]["attention heat map"], "rb") as f:
        assert f.read(8) == b"\x89PNG\r\n\x1a\n"
    fine_tuning = json.loads((out / "finetune" / "metrics.json").read_text())
    assert fine_tuning["eval"]["accuracy"] == summary["finetuning"]["accuracy"]
    assert fine_tuning["train_examples"] == fine_tuning["eval_examples"] == 128


def test_refuses_to_empty_a_folder_it_did_not_write(tmp_path):
    quickstart = _load_quickstart()
    (tmp_path / "precious.txt").write_text("keep me")
    with pytest.raises(SystemExit, match="not written by the quick start"):
        quickstart.prepare_out(str(tmp_path))
    assert (tmp_path / "precious.txt").exists()
    # Its own output is replaced by a new run.
    own = tmp_path / "own"
    quickstart.prepare_out(str(own))
    (own / "old.txt").write_text("from an earlier run")
    quickstart.prepare_out(str(own))
    assert os.listdir(own) == [quickstart.MARKER]
