"""Every kind trains the same on Keras' JAX backend (and its torch backend), and under XLA,
as on TensorFlow; a model fitted under JAX exports under TensorFlow and answers there as
JAX's `predict` did; an interrupted fit resumes exactly on JAX and torch too.

One start for all: `tests/support/backend_fit.py init` writes each kind's model (a tiny BERT
with no dropout, whose draws differ between backends) once; each run loads it and fits on
raw strings, the TF Text pipeline feeding the backend, with the same seed and so the same
batches. Each backend runs in its own process (Keras picks it at import), started when a
test first needs it.

Tolerances, from the measured differences (tiny BERT, 8 steps at 5e-3, AMD EPYC): the
running losses agree within 1e-4 relative (measured at most 8.5e-6, the embedder's in-batch
softmax; 1.7e-7 for the others), the answers after training within 1e-4 (5.1e-5 measured,
the embedder's vectors). The export's answers in TF Serving's Session loader equal JAX's
`predict` within 1e-5, string and integer outputs exactly.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from tests.support.backend_fit import KINDS, requests
from tests.support.reference import require

pytestmark = [pytest.mark.slow, pytest.mark.needs_jax]

ROOT = Path(__file__).resolve().parents[2]
LOSS_RTOL = 1e-4
ANSWER_ATOL = 1e-4
EXPORT_ATOL = 1e-5
# name: (backend, arguments of `backend_fit fit`)
RUNS = {"tensorflow": ("tensorflow", []),
        "xla": ("tensorflow", ["--xla"]),
        "jax": ("jax", ["--save", "{root}/jax-fitted", "--resume"]),
        "tensorflow_accumulated": ("tensorflow", ["--kinds", "pretrain", "--accumulation", "2"]),
        "jax_accumulated": ("jax", ["--kinds", "pretrain", "--accumulation", "2"]),
        # Keras' torch backend, where torch is installed (Python 3.11: scripts/install.sh);
        # gradient accumulation is TensorFlow's and JAX's only (a clear error on torch).
        "torch": ("torch", ["--resume"])}


def _command(backend: str, *arguments) -> tuple[list[str], dict]:
    env = dict(os.environ, KERAS_BACKEND=backend, TF_CPP_MIN_LOG_LEVEL="3")
    return [sys.executable, "-m", "tests.support.backend_fit", *map(str, arguments)], env


class Runs:
    """Each run of `RUNS` started when a test first asks for it (so that one test runs only
    the processes it compares), then kept for the module; `root` holds the starting models."""

    def __init__(self, root: Path):
        self.root = root
        self._done: dict[str, dict] = {}

    def run(self, name: str) -> dict:
        """`{"kinds": {kind: {"losses", "answers", "jit_compile"}}, ...}` of run `name`."""
        if name not in self._done:
            backend, arguments = RUNS[name]
            if backend == "torch":
                require("torch")
            command, env = _command(backend, "fit", self.root, self.root / f"{name}.json",
                                    *(a.format(root=self.root) for a in arguments))
            done = subprocess.run(command, cwd=ROOT, env=env, capture_output=True, text=True,
                                  timeout=1200)
            assert done.returncode == 0, f"{name}: {done.stderr[-3000:]}"
            with open(self.root / f"{name}.json", encoding="utf-8") as f:
                self._done[name] = json.load(f)
            assert self._done[name]["backend"] == backend
        return self._done[name]

    def __getitem__(self, name: str) -> dict:
        return self.run(name)["kinds"]


@pytest.fixture(scope="module")
def runs(tmp_path_factory) -> Runs:
    root = tmp_path_factory.mktemp("backends")
    command, env = _command("tensorflow", "init", root)
    done = subprocess.run(command, cwd=ROOT, env=env, capture_output=True, text=True,
                          timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    return Runs(root)


def _assert_same_training(first: dict, second: dict) -> None:
    losses = np.array(first["losses"]), np.array(second["losses"])
    assert losses[0].shape == losses[1].shape and len(losses[0]) >= 6
    np.testing.assert_allclose(losses[1], losses[0], rtol=LOSS_RTOL)
    assert not np.allclose(losses[0], losses[0][0]), "the loss never moved"
    # `predict`'s answers and the float outputs of `serve_ids` on the same ids (per-position
    # outputs included: their shape is the rows' length).
    for answers in ("answers", "ids_answers"):
        for name, value in first[answers].items():
            expected, got = np.asarray(value), np.asarray(second[answers][name])
            if expected.dtype.kind == "f":
                np.testing.assert_allclose(got, expected, atol=ANSWER_ATOL, err_msg=name)


@pytest.mark.parametrize("kind", KINDS)
def test_xla_steps_match_the_graph_steps(runs, kind):
    # The fit really compiled with XLA (and the graph run did not: the CPU default).
    assert runs["xla"][kind]["jit_compile"] is True
    assert runs["tensorflow"][kind]["jit_compile"] is False
    _assert_same_training(runs["tensorflow"][kind], runs["xla"][kind])


@pytest.mark.parametrize("kind", KINDS)
def test_jax_fit_matches_tensorflow_fit(runs, kind):
    _assert_same_training(runs["tensorflow"][kind], runs["jax"][kind])


@pytest.mark.needs_torch
@pytest.mark.parametrize("kind", KINDS)
def test_torch_fit_matches_tensorflow_fit(runs, kind):
    _assert_same_training(runs["tensorflow"][kind], runs["torch"][kind])


def test_accumulated_pretraining_matches_across_backends(runs):
    accumulated = runs["jax_accumulated"]["pretrain"]
    _assert_same_training(runs["tensorflow_accumulated"]["pretrain"], accumulated)
    # Two micro-batches of 4 are another computation than one batch of 8 (the masked LM
    # loss is normalised per micro-batch): the accumulated run really accumulated.
    assert not np.allclose(accumulated["losses"], runs["jax"]["pretrain"]["losses"])


def test_an_interrupted_jax_fit_resumes_to_the_uninterrupted_weights(runs):
    """Killed after step 5 of 8, resumed from its step-4 checkpoint: the same weights as
    the fit that ran whole (the stream's batch k depends on k alone; the optimizer's and
    the seed generators' states are in the checkpoint)."""
    assert runs.run("jax")["resumed_weights_difference"] == 0.0


@pytest.mark.needs_torch
def test_an_interrupted_torch_fit_resumes_to_the_uninterrupted_weights(runs):
    assert runs.run("torch")["resumed_weights_difference"] == 0.0


@pytest.mark.parametrize("kind", [k for k in KINDS if k != "pretrain"])
def test_a_model_fitted_under_jax_exports_under_tensorflow(runs, kind, tmp_path):
    from keras_bert.export.session_bundle import SessionBundle
    from keras_bert.tasks.task_model import TextTaskModel
    from tests.support.backend_fit import data

    jax_answers = runs["jax"][kind]["answers"]
    model = TextTaskModel.load(str(runs.root / "jax-fitted" / kind))
    x, _ = data(kind, tmp_path)
    inputs = {name: np.array(values, dtype=object)
              for name, values in model._requests(requests(kind, x)).items()}
    with SessionBundle(model.export(str(tmp_path / "serving"))) as bundle:
        served = bundle.run("serving_default", inputs)
    for name, value in jax_answers.items():
        expected, got = np.asarray(value), served[name]
        if expected.dtype.kind == "f":
            np.testing.assert_allclose(got, expected, atol=EXPORT_ATOL, err_msg=name)
        else:
            got = np.vectorize(lambda v: v.decode() if isinstance(v, bytes) else v)(got)
            np.testing.assert_array_equal(got, expected, err_msg=name)
