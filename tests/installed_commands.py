"""`keras-bert convert / tokenize / finetune / predict / export` run from an installed
wheel, in a folder outside the repository, on the real all-MiniLM-L6-v2 weights: what the
environments with a preinstalled TensorFlow check (tests/test_oldest_supported.py,
tests/test_install_next_to_tensorflow.py)."""

from __future__ import annotations

import csv
import json
import os
import subprocess

from tests.reference import minilm_dir

POSITIVE = ["a wonderful warm film", "great acting and a fine story", "I loved every minute",
            "a joy to watch", "brilliant and moving", "the best film this year"]
NEGATIVE = ["a dull tired film", "bad acting and a weak story", "I hated every minute",
            "a chore to watch", "boring and flat", "the worst film this year"]
PROBE = """
import json, sys
import tensorflow as tf
import tensorflow_text  # registers TF Text's ops, as TF Serving links them
serve = tf.saved_model.load(sys.argv[1]).signatures["serving_default"]
out = serve(text=tf.constant(sys.argv[2:]))
print(json.dumps({"label": [v.decode() for v in out["label"].numpy().tolist()],
                  "probabilities": out["probabilities"].numpy().tolist()}))
"""


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
        "--batch-size", "8", "--quiet")
    metrics = json.load(open(os.path.join(work, "runs", "cls", "metrics.json")))
    assert 0 <= metrics["eval"]["accuracy"] <= 1
    predicted = [json.loads(line) for line in
                 run("predict", "runs/cls/model", "--input", evaluation).splitlines()]
    run("export", "runs/cls/model", "exports/cls")
    served = subprocess.run([os.path.join(bin_dir, "python"), "-c", PROBE,
                             os.path.join(work, "exports", "cls", "1"),
                             *[t for t, _ in labelled]], cwd=work, env=env,
                            capture_output=True, text=True, timeout=600)
    assert served.returncode == 0, served.stderr[-3000:]
    answers = json.loads(served.stdout.strip().splitlines()[-1])
    assert answers["label"] == [row["label"] for row in predicted]
    for got, want in zip(answers["probabilities"], predicted, strict=True):
        assert max(abs(a - b) for a, b in zip(got, want["probabilities"], strict=True)) < 1e-4
    return {"ids": ids, "metrics": metrics, "predicted": predicted}
