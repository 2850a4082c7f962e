"""The networks and the training loop on token ids without TensorFlow: in a new environment
holding `keras` and `jax` alone (constraints.txt's versions), `import keras_bert.models`
picks Keras' JAX backend and imports no TensorFlow, and the pretrainer (LAMB, gradient
accumulation) and a classifier (AdamW, a `keras.utils.PyDataset`) train on ids
(tests/models/ids_training.py). That is what an accelerator image without TensorFlow runs.
"""

from __future__ import annotations

import json
import os
import subprocess

import numpy as np
import pytest

from tests.export.runtimes import new_environment

pytestmark = [pytest.mark.slow, pytest.mark.needs_jax]

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


@pytest.fixture(scope="module")
def jax_python(tmp_path_factory) -> str:
    return new_environment(tmp_path_factory.mktemp("jax-env") / "venv", "keras", "jax")


def _run(python: str, *arguments: str) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k not in ("KERAS_BACKEND", "PYTHONPATH")}
    return subprocess.run([python, *arguments], cwd=REPO, env={**env, "PYTHONPATH": REPO},
                          capture_output=True, text=True, timeout=600)


def test_the_environment_has_no_tensorflow(jax_python):
    probe = _run(jax_python, "-c", "import tensorflow")
    assert probe.returncode == 1 and "No module named 'tensorflow'" in probe.stderr


def test_models_import_and_train_on_ids_with_jax_alone(jax_python):
    run = _run(jax_python, "tests/models/ids_training.py")
    assert run.returncode == 0, run.stderr[-3000:]
    result = json.loads(run.stdout.strip().splitlines()[-1])
    assert result["backend"] == "jax" and result["tensorflow_imported"] is False
    for name in ("pretraining", "classification"):
        losses = np.array(result[name])
        assert losses.shape == (2,) and np.all(np.isfinite(losses)), (name, losses)
