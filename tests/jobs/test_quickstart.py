"""The main job end to end in `--quick` mode, run from the built wheel: a fresh virtual
environment gets the wheels `python -m build` makes (the package with its `serving` extra,
and the client), and `keras-bert quickstart --quick` runs there, outside the repository:
pretrain, task, fine-tune, export, serve + query over gRPC and REST, attention PNG,
artefacts where it says they are."""

from __future__ import annotations

import json
import os
import subprocess

import numpy as np
import pytest

from keras_bert.jobs import quickstart
from tests.export.runtimes import new_environment
from tests.support.built_distributions import built_distributions

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def wheel_environment(folder) -> str:
    """A new environment holding the built wheels (with the `serving` extra) at
    constraints.txt's versions; its `bin` folder."""
    built = built_distributions()
    python = new_environment(folder, built["keras-bert-client"].wheel + "[grpc]",
                             built["keras-bert-tf"].wheel + "[serving]")
    return os.path.dirname(python)


@pytest.mark.slow  # over 30 s in CI's durations log docs/runs/ci-durations-2026-11-26-8c1e29d.md
@pytest.mark.timeout(1500)
def test_quick_mode_end_to_end_from_the_built_wheel(tmp_path):
    bin_dir = wheel_environment(tmp_path / "venv")
    out = tmp_path / "qs"
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3")
    work = tmp_path / "work"  # not the repository: nothing of the checkout is importable
    work.mkdir()
    where = subprocess.run([os.path.join(bin_dir, "python"), "-c",
                            "import keras_bert, keras_bert_client; print(keras_bert.__file__,"
                            " keras_bert_client.__file__)"], cwd=work, capture_output=True,
                           text=True, check=True).stdout.split()
    assert all(path.startswith(str(tmp_path / "venv")) for path in where), where
    result = subprocess.run([os.path.join(bin_dir, "keras-bert"), "quickstart", "--quick",
                             "--out", str(out)], cwd=work, env=env, capture_output=True,
                            text=True, timeout=900)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    # Only the job's own notes (the precision chosen): TensorFlow's start-up lines held back.
    assert all(line.startswith("precision: ") for line in result.stderr.splitlines()), \
        result.stderr[-2000:]
    log = result.stdout
    assert f"next: {bin_dir}/keras-bert serve" in log
    for stage in range(1, 7):
        assert f"==> [{stage}/6]" in log
    assert "held-out MLM accuracy" in log and "held-out accuracy" in log
    assert "server stopped (exit status 0)" in log

    summary = json.loads((out / "quickstart.json").read_text())
    answers = summary["served"]["answers"]
    assert [a["text"] for a in answers] == quickstart.QUERIES
    for answer in answers:
        assert answer["grpc"] == answer["rest"] in ("moby_dick", "sotu")
        assert f"gRPC {answer['grpc']:>9}" in log
    # The served answers are the fine-tuned model's own (labels, probabilities to 1e-5).
    from keras_bert.tasks.task_model import TextTaskModel

    own = TextTaskModel.load(str(out / "finetune" / "model")).predict(
        [a["text"] for a in answers])
    assert list(own["label"]) == [a["grpc"] for a in answers]
    np.testing.assert_allclose(own["probabilities"].max(axis=1),
                               [a["probability"] for a in answers], atol=1e-5)
    # Quick mode (10 pretraining steps, 3 epochs on 64 sentences per class) learns the
    # task: 0.711 on the 128 balanced held-out sentences (AMD EPYC, 2026-11-25); chance is
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
    (tmp_path / "precious.txt").write_text("keep me")
    with pytest.raises(ValueError, match="not written by the quick start"):
        quickstart.prepare_out(str(tmp_path))
    assert (tmp_path / "precious.txt").exists()
    # Its own output is replaced by a new run.
    own = tmp_path / "own"
    quickstart.prepare_out(str(own))
    (own / "old.txt").write_text("from an earlier run")
    quickstart.prepare_out(str(own))
    assert os.listdir(own) == [quickstart.MARKER]
