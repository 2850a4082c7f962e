"""tf.distribute: MirroredStrategy on 2 logical CPUs and MultiWorkerMirroredStrategy with two
processes on localhost train like one device on the same global batch."""

import os
import subprocess
import sys

import numpy as np
import pytest

from tests.support.ports import free_ports

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def _start(*args):
    env = dict(os.environ, PYTHONPATH=ROOT, TF_CPP_MIN_LOG_LEVEL="3")
    env.pop("TF_CONFIG", None)
    return subprocess.Popen([sys.executable, "-m", "tests.training.dist_job", *map(str, args)],
                            cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                            text=True)


def _wait(process, timeout=600):
    out, _ = process.communicate(timeout=timeout)
    assert process.returncode == 0, out[-3000:]


def _load(path):
    with np.load(path) as data:
        return data["losses"], [data[k] for k in data.files if k.startswith("arr_")]


@pytest.fixture(scope="module")
def single(tmp_path_factory):
    out = tmp_path_factory.mktemp("dist")
    _wait(_start("single", out))
    return _load(out / "single.npz")


def _assert_same_training(reference, other, tol=1e-5):
    (ref_losses, ref_weights), (losses, weights) = reference, other
    assert len(losses) == len(ref_losses) == 4
    np.testing.assert_allclose(losses, ref_losses, rtol=tol, atol=tol)
    for a, b in zip(ref_weights, weights, strict=True):
        np.testing.assert_allclose(a, b, rtol=1e-4, atol=1e-5)


@pytest.mark.slow
def test_mirrored_two_logical_cpus_equals_one_device(single, tmp_path):
    _wait(_start("mirrored", tmp_path))
    _assert_same_training(single, _load(tmp_path / "mirrored.npz"))


@pytest.mark.slow
def test_multi_worker_two_processes_agree(single, tmp_path):
    ports = free_ports(2)
    workers = [_start("worker", tmp_path, i, *ports) for i in range(2)]
    for worker in workers:
        _wait(worker)
    w0, w1 = _load(tmp_path / "worker0.npz"), _load(tmp_path / "worker1.npz")
    for a, b in zip(w0[1], w1[1], strict=True):
        np.testing.assert_array_equal(a, b)  # the workers hold the same model
    _assert_same_training(single, w0)
