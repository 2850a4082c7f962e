"""`keras-bert pretrain` SIGKILLed mid-epoch resumes to the uninterrupted result.

Both training sources: the on-the-fly stream (NSP pairs made in a background thread,
masks drawn anew each pass) and TFRecords from `create-pretraining-data`. The kill comes
from outside, as soon as a checkpoint exists, at a moment the test does not choose; the
run started again with the same command must end with bit-identical weights. A restart with
another seed is refused.
"""

from __future__ import annotations

import os
import subprocess
import sys

import h5py
import numpy as np
import pytest

from tests.jobs.test_finetune_resume import _sigkill_after_checkpoint

# slow: every test over ~30 s, or behind a fixture that is (CI's durations log
# docs/runs/ci-durations-2026-11-26-8c1e29d.md)
pytestmark = pytest.mark.slow

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
ARGS = ["--steps", "12", "--steps-per-epoch", "3", "--batch-size", "8", "--seq-length", "32",
        "--max-predictions", "5", "--seed", "3"]




def _command(*argv):
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3", PYTHONPATH=ROOT)
    return subprocess.Popen([sys.executable, "-m", "keras_bert.cli", *argv], cwd=ROOT, env=env,
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)


def _weights(out) -> list[np.ndarray]:
    arrays = []
    with h5py.File(os.path.join(out, "pretrainer.weights.h5"), "r") as f:
        f.visititems(lambda name, item: arrays.append(np.array(item))
                     if isinstance(item, h5py.Dataset) else None)
    return arrays


# Real SIGKILLs of real processes, 70-77 s each in a fresh-clone CI run of 2026-11-26. The
# README's tier kills a fit for real (tests/training/test_resume.py) and resumes pretraining
# killed in process (tests/pretraining/test_text_pretrainer.py).
@pytest.mark.parametrize("source", ["corpus", "tfrecords"])
def test_sigkill_mid_epoch_then_resume_is_bit_identical(source, corpus, tmp_path):
    if source == "tfrecords":
        made = _command("create-pretraining-data", "--vocab",
                        os.path.join(ROOT, "keras_bert", "data", "vocab",
                                     "corpus_uncased_8k.txt"),
                        "--input", corpus, "--output", str(tmp_path / "data.tfrecord"),
                        "--seq-length", "32", "--max-predictions", "5")
        assert made.wait(timeout=600) == 0, made.stderr.read()[-2000:]
        data = ["--tfrecords", str(tmp_path / "data.tfrecord*")]
    else:
        data = ["--corpus", corpus]
    straight = _command("pretrain", "--out", str(tmp_path / "straight"), *data, *ARGS)
    assert straight.wait(timeout=600) == 0, straight.stderr.read()[-2000:]

    out = tmp_path / "killed"
    step = _sigkill_after_checkpoint(_command("pretrain", "--out", str(out), *data, *ARGS),
                                     out / "checkpoints")
    assert step is not None and step < 12  # killed before the end, after a checkpoint
    assert not (out / "pretrainer.weights.h5").exists()
    other = _command("pretrain", "--out", str(out), *data, *ARGS[:-1], "4")
    assert other.wait(timeout=600) == 2
    assert "seed: 3 there, 4 now" in other.stderr.read()
    resumed = _command("pretrain", "--out", str(out), *data, *ARGS)
    assert resumed.wait(timeout=600) == 0, resumed.stderr.read()[-2000:]
    a, b = _weights(tmp_path / "straight"), _weights(out)
    assert len(a) == len(b) > 20
    for x, y in zip(a, b, strict=True):
        np.testing.assert_array_equal(x, y)
