"""`keras-bert convert / tokenize / finetune / predict / export` run from an installed
wheel, in a folder outside the repository, on the real all-MiniLM-L6-v2 weights, and the
export run as TF Serving runs it (the Session loader, TF Text as kernel libraries:
tests/export/run_session_bundle.py) by that environment's TensorFlow: what the environments
with a preinstalled TensorFlow check (tests/test_oldest_supported.py,
tests/test_install_next_to_tensorflow.py)."""

from __future__ import annotations

import csv
import json
import os
import subprocess

import numpy as np

from tests.export.helpers import read_outputs, run_session_jobs
from tests.export.run_session_bundle import save_arrays
from tests.support.reference import minilm_dir

POSITIVE = ["a wonderful warm film", "great acting and a fine story", "I loved every minute",
            "a joy to watch", "brilliant and moving", "the best film this year"]
NEGATIVE = ["a dull tired film", "bad acting and a weak story", "I hated every minute",
            "a chore to watch", "boring and flat", "the worst film this year"]
def _write_csv(path: str, rows: list[tuple[str, str]]) -> str:
    with open(path, "w", newline="", encoding="utf-8") as f:
        writer = csv.writer(f)
        writer.writerow(["text", "label"])
        writer.writerows(rows)
    return path


def run_commands(bin_dir: str, work: str, env: dict | None = None) -> dict:
    """Runs the commands with `bin_dir`'s `keras-bert` in `work`; asserts each exits 0 and
    answers consistently; returns what they printed, for the caller's own checks."""
    env = dict(env or os.environ, TF_CPP_MIN_LOG_LEVEL="3", CUDA_VISIBLE_DEVICES="")
    keras_bert = os.path.join(bin_dir, "keras-bert")

    def run(*args: str, stdin: str | None = None) -> str:
        done = subprocess.run([keras_bert, *args], cwd=work, env=env, input=stdin,
                              capture_output=True, text=True, timeout=900)
        assert done.returncode == 0, (args, done.stdout[-2000:], done.stderr[-3000:])
        return done.stdout

    run("convert", minilm_dir(), "models/minilm")
    ids = run("tokenize", "--model", "models/minilm", stdin="Call me Ishmael.\n").split()
    assert ids[:2] == ["2655", "2033"]  # BERT uncased's "call", "me"
    labelled = [(t, "pos") for t in POSITIVE] + [(t, "neg") for t in NEGATIVE]
    train = _write_csv(os.path.join(work, "train.csv"), labelled * 4)
    evaluation = _write_csv(os.path.join(work, "eval.csv"), labelled)
    run("finetune", "--task", "classify", "--model", "models/minilm", "--train", train,
        "--eval", evaluation, "--out", "runs/cls", "--epochs", "1", "--seq-length", "16",
        "--batch-size", "8", "--quiet",
        # float32 on every host: `auto` is mixed bfloat16 on a CPU with AMX, where `predict`
        # and the export agree to bfloat16's rounding (1.2e-4 here), not to the 1e-4 below.
        "--precision", "float32")
    metrics = json.load(open(os.path.join(work, "runs", "cls", "metrics.json")))
    assert 0 <= metrics["eval"]["accuracy"] <= 1
    predicted = [json.loads(line) for line in
                 run("predict", "runs/cls/model", "--input", evaluation).splitlines()]
    run("export", "runs/cls/model", "exports/cls")
    inputs, outputs = os.path.join(work, "in.npz"), os.path.join(work, "out.npz")
    save_arrays(inputs, {"text": np.array([t.encode() for t, _ in labelled], object)})
    run_session_jobs(os.path.join(bin_dir, "python"), [{
        "export": os.path.join(work, "exports", "cls", "1"), "signature": "serving_default",
        "inputs": inputs, "outputs": outputs}], work)
    served = read_outputs(outputs)
    assert "error" not in served, served
    assert [v.decode() for v in served["label"].tolist()] == [
        row["label"] for row in predicted]
    np.testing.assert_allclose(served["probabilities"],
                               [row["probabilities"] for row in predicted], atol=1e-4)
    return {"ids": ids, "metrics": metrics, "predicted": predicted}
