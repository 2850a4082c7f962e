"""Killed fine-tuning resumes mid-epoch to the uninterrupted result, for every task kind.

A kill is modelled two ways: in process, by a callback that raises after step K (what is
on disk is all that survives, as after a SIGKILL), for each task kind; and for real, by
SIGKILL from outside at a moment the test does not choose, on `keras-bert finetune`.
The resumed run must end with bit-identical weights; a restart with other arguments is
refused naming the difference; a finished run started again does nothing.
"""

from __future__ import annotations

import glob
import json
import os
import re
import signal
import subprocess
import sys
import time

import h5py
import keras
import numpy as np
import pytest

from keras_bert.cli import main
from keras_bert.jobs.finetune import FinetuneJob, run_finetuning
from keras_bert.training.resume import ResumeMismatch, file_fingerprint
from tests.jobs.test_finetune import (
    _sentences,
    _squad_file,
    _tagged_sentence,
    _write_conll,
    _write_csv,
)

# slow: every test over ~30 s, or behind a fixture that is (CI's durations log
# docs/runs/ci-durations-2026-11-26-8c1e29d.md)
pytestmark = pytest.mark.slow

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


class Killed(Exception):
    """Raised by `KillAfter`: the process 'dies' with only its files left."""


class KillAfter(keras.callbacks.Callback):
    """Raises `Killed` right after global step `step` (after that step's checkpoint)."""

    def __init__(self, step):
        super().__init__()
        self.step = step

    def on_train_batch_end(self, batch, logs=None):
        if int(self.model.optimizer.iterations.numpy()) == self.step:
            raise Killed(self.step)


def _files(kind, tmp_path, rng):
    """(train, eval, extra job fields) for a tiny job of `kind`."""
    if kind == "classify":
        rows = [(" ".join(w), y) for w, y in _sentences(rng, 40)]
        return _write_csv(tmp_path / "train.csv", ["text", "label"], rows), None, {}
    if kind == "regress":
        rows = [(" ".join(w), f"{w.count('whale') / len(w):.3f}") for w, _ in _sentences(rng, 40)]
        path = _write_csv(tmp_path / "train.csv", ["text", "score"], rows)
        return path, None, {"label_column": "score"}
    if kind == "tag":
        return _write_conll(tmp_path / "train.conll",
                            [_tagged_sentence(rng) for _ in range(40)]), None, {}
    return _squad_file(tmp_path / "train.json", rng, 30)[0], None, {}


def _weights(out) -> list[np.ndarray]:
    """Every array of the saved task model, in file order."""
    arrays = []
    for path in sorted(glob.glob(os.path.join(out, "model", "*.weights.h5"))):
        with h5py.File(path, "r") as f:
            f.visititems(lambda name, item: arrays.append(np.array(item))
                         if isinstance(item, h5py.Dataset) else None)
    return arrays


def _job(kind, model, train, out, extra, **overrides):
    fields = dict(task=kind, model=model, train=train, out=str(out), seq_length=24, epochs=2,
                  batch_size=8, learning_rate=2e-3, verbose=0, seed=7, checkpoint_steps=3,
                  validate_each_epoch=False, **extra)
    return FinetuneJob(**{**fields, **overrides})


@pytest.mark.parametrize("kind", ["classify", "regress", "tag", "squad"])
def test_killed_mid_epoch_resumes_bit_identical(kind, model_dir, tmp_path, rng):
    train, _, extra = _files(kind, tmp_path, rng)
    straight = run_finetuning(_job(kind, model_dir, train, tmp_path / "straight", extra))
    steps_per_epoch = straight["steps"] // 2
    # A kill in the second epoch whose last checkpoint (every 3 steps) is mid-epoch.
    kill_at = next(k for k in range(steps_per_epoch + 1, straight["steps"])
                   if k % 3 and (k - k % 3) > steps_per_epoch and (k - k % 3) % steps_per_epoch)
    job = _job(kind, model_dir, train, tmp_path / "resumed", extra,
               callbacks=[KillAfter(kill_at)])
    with pytest.raises(Killed):
        run_finetuning(job)
    saved = sorted(os.listdir(tmp_path / "resumed" / "checkpoints"))
    assert saved and all(name.startswith("ckpt-") for name in saved)
    last = int(saved[-1][5:14])
    assert last == kill_at - kill_at % 3  # work to redo, from the middle of an epoch
    resumed = run_finetuning(_job(kind, model_dir, train, tmp_path / "resumed", extra))
    assert resumed["steps"] == straight["steps"]
    a, b = _weights(tmp_path / "straight"), _weights(tmp_path / "resumed")
    assert len(a) == len(b) > 10
    for x, y in zip(a, b, strict=True):
        np.testing.assert_array_equal(x, y)
    history = json.loads((tmp_path / "resumed" / "history.json").read_text())
    assert [len(v) for v in history.values()] == [2] * len(history)  # one entry per epoch


def test_restart_with_other_arguments_is_refused(model_dir, tmp_path, rng, capsys):
    train, _, extra = _files("classify", tmp_path, rng)
    with pytest.raises(Killed):
        run_finetuning(_job("classify", model_dir, train, tmp_path / "run", extra,
                            callbacks=[KillAfter(4)]))
    with pytest.raises(ResumeMismatch, match=r"seed: 7 there, 8 now.*another output"):
        run_finetuning(_job("classify", model_dir, train, tmp_path / "run", extra, seed=8))
    # A label flipped in place ("whale" -> "other"): the same size, another corpus.
    original = open(train, "rb").read()
    with open(train, "wb") as f:
        f.write(_flip_first_label(original))
    assert os.path.getsize(train) == len(original)
    with pytest.raises(ResumeMismatch, match=r"train: .* there, .* now"):
        run_finetuning(_job("classify", model_dir, train, tmp_path / "run", extra))
    with open(train, "wb") as f:
        f.write(original)
    # The training file edited in place is another corpus, though its name is the same.
    with open(train, "a", encoding="utf-8") as f:
        f.write("one more whale,whale\n")
    argv = ["finetune", "--task", "classify", "--model", model_dir, "--train", train, "--out",
            str(tmp_path / "run"), "--seq-length", "24", "--epochs", "2", "--batch-size", "8",
            "--learning-rate", "2e-3", "--seed", "7", "--quiet"]
    assert main(argv) == 2
    last = capsys.readouterr().err.strip().splitlines()[-1]
    assert last.startswith("keras-bert finetune: error:") and "other arguments" in last
    assert "train: " in last and "seed" not in last


def _flip_first_label(csv_bytes: bytes) -> bytes:
    """The CSV with its first row labelled `whale` relabelled `other` (same length)."""
    edited, count = re.subn(rb",whale(\r?\n)", rb",other\1", csv_bytes, count=1)
    assert count == 1
    return edited


def test_a_same_size_edit_changes_the_fingerprint(tmp_path):
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    path = corpus / "train.csv"
    path.write_bytes(b"text,label\na ship at sea,other\na whale at sea,whale\n")
    before = [file_fingerprint(str(p)) for p in (path, corpus, corpus / "*.csv")]
    path.write_bytes(_flip_first_label(path.read_bytes()))
    assert path.read_bytes() == b"text,label\na ship at sea,other\na whale at sea,other\n"
    after = [file_fingerprint(str(p)) for p in (path, corpus, corpus / "*.csv")]
    # The file, its directory and a glob matching it: each fingerprint changes.
    assert all(a != b for a, b in zip(before, after, strict=True)), (before, after)
    path.write_bytes(b"text,label\na ship at sea,other\na whale at sea,whale\n")
    assert [file_fingerprint(str(p)) for p in (path, corpus, corpus / "*.csv")] == before


def test_finished_run_started_again_does_nothing(model_dir, tmp_path, rng, capsys):
    train, _, extra = _files("classify", tmp_path, rng)
    first = run_finetuning(_job("classify", model_dir, train, tmp_path / "run", extra))
    stamp = os.stat(tmp_path / "run" / "model" / "head.weights.h5").st_mtime_ns
    again = run_finetuning(_job("classify", model_dir, train, tmp_path / "run", extra,
                                verbose=1))
    assert "is complete" in capsys.readouterr().out
    assert again == first
    assert os.stat(tmp_path / "run" / "model" / "head.weights.h5").st_mtime_ns == stamp


def _cli(out, train, model):
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3", PYTHONPATH=ROOT)
    argv = [sys.executable, "-m", "keras_bert.cli", "finetune", "--task", "classify",
            "--model", model, "--train", train, "--out", str(out), "--seq-length", "24",
            "--epochs", "3", "--batch-size", "4", "--learning-rate", "2e-3", "--seed", "7",
            "--checkpoint-steps", "2", "--quiet"]
    return subprocess.Popen(argv, cwd=ROOT, env=env, stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE, text=True)


def _newest_step(directory) -> int:
    """The step of the newest checkpoint in `directory` (0 when there is none)."""
    return max((int(os.path.basename(p)[5:14])
                for p in glob.glob(os.path.join(directory, "ckpt-*.npz"))), default=0)


def _sigkill_after_checkpoint(process, directory, newer_than=0, timeout=300):
    """SIGKILLs `process` as soon as a checkpoint past step `newer_than` exists; returns the
    newest step on disk once it is dead (None if the process ended before that)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline and process.poll() is None:
        if _newest_step(directory) > newer_than:
            process.send_signal(signal.SIGKILL)
            process.wait()
            # what the next run resumes from: the kill may land a checkpoint or two later
            return _newest_step(directory)
        time.sleep(0.01)
    process.wait()
    return None


def _encoder_arrays(model) -> dict[str, np.ndarray]:
    """The arrays of `model/encoder.weights.h5` by their path in the file."""
    arrays = {}
    with h5py.File(os.path.join(model, "encoder.weights.h5"), "r") as f:
        f.visititems(lambda name, item: arrays.update({name: np.array(item)})
                     if isinstance(item, h5py.Dataset) else None)
    return arrays


def test_sigkill_twice_then_resume_is_bit_identical(model_dir, tmp_path, rng):
    rows = [(" ".join(w), y) for w, y in _sentences(rng, 40)]
    train = _write_csv(tmp_path / "train.csv", ["text", "label"], rows)
    straight = _cli(tmp_path / "straight", train, model_dir)
    assert straight.wait(timeout=600) == 0, straight.stderr.read()[-2000:]
    out = tmp_path / "killed"
    kills = [0]  # the step each run was killed after (what the next run resumes from)
    for n in (1, 2):
        process = _cli(out, train, model_dir)
        step = _sigkill_after_checkpoint(process, out / "checkpoints", kills[-1])
        # A real kill mid-run: the process died of SIGKILL (not a finished run's exit 0)
        # before its last step (30: 3 epochs of 10 batches of 4), after training on past the
        # previous kill's checkpoint (checkpoints every 2 steps: 14 chances to kill a run).
        assert step is not None and process.returncode == -signal.SIGKILL, (
            f"run {n} ended (exit {process.returncode}) before it was killed; kills: "
            f"{kills[1:]}", process.stderr.read()[-2000:])
        assert kills[-1] < step < 30, (n, kills, step)
        assert not (out / "checkpoints" / "complete.json").exists()
        kills.append(step)
    assert not (out / "model").exists()  # neither killed run got to the end
    final = _cli(out, train, model_dir)
    assert final.wait(timeout=600) == 0, final.stderr.read()[-2000:]
    a, b = _weights(tmp_path / "straight"), _weights(out)
    assert len(a) == len(b) > 10  # the encoder's and the head's arrays, all found
    for x, y in zip(a, b, strict=True):
        np.testing.assert_array_equal(x, y)
    # and training did something: every array of the encoder moved from the starting model
    start, trained = _encoder_arrays(model_dir), _encoder_arrays(out / "model")
    assert sorted(start) == sorted(trained) and len(start) > 10
    unchanged = [name for name in start if np.array_equal(start[name], trained[name])]
    assert not unchanged, f"{len(unchanged)} of {len(start)} arrays as they started: {unchanged}"
