"""A training process killed mid-epoch resumes to exactly the uninterrupted result."""

import os
import signal
import subprocess
import sys

import numpy as np
import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
EPOCHS, STEPS = 4, 5


def _run(out, *extra):
    env = dict(os.environ, PYTHONPATH=ROOT, TF_CPP_MIN_LOG_LEVEL="3")
    return subprocess.run(
        [sys.executable, "-m", "tests.training.resume_job", str(out), str(EPOCHS), str(STEPS),
         *map(str, extra)], cwd=ROOT, env=env, capture_output=True, text=True, timeout=600)


def _final(out):
    with np.load(os.path.join(out, "final.npz")) as data:
        arrays = [data[k] for k in sorted((k for k in data.files if k.startswith("arr_")),
                                          key=lambda k: int(k.split("_")[1]))]
        return arrays, int(data["iterations"]), data["initial_kernel"]


@pytest.mark.slow
def test_sigkill_mid_epoch_then_resume_is_identical(tmp_path):
    straight = _run(tmp_path / "straight")
    assert straight.returncode == 0, straight.stderr[-2000:]

    killed = _run(tmp_path / "resumed", 2 * STEPS + 3)  # in the middle of the third epoch
    assert killed.returncode == -signal.SIGKILL
    assert not (tmp_path / "resumed" / "final.npz").exists()
    saved = sorted(os.listdir(tmp_path / "resumed" / "ckpt"))
    assert saved == [f"ckpt-{5:09d}.npz", f"ckpt-{10:09d}.npz"]  # epochs 1 and 2 only

    resumed = _run(tmp_path / "resumed")
    assert resumed.returncode == 0, resumed.stderr[-2000:]
    (a, steps_a, initial), (b, steps_b, _) = _final(tmp_path / "straight"), \
        _final(tmp_path / "resumed")
    assert steps_a == steps_b == EPOCHS * STEPS
    assert len(a) == len(b) > 40  # model, dropout seed states and optimizer variables
    for x, y in zip(a, b, strict=True):
        np.testing.assert_array_equal(x, y)  # bit-identical
    head_kernels = [x for x in a if x.shape == initial.shape]
    assert not any(np.array_equal(x, initial) for x in head_kernels)  # it did train
