"""A plain `pip install` of the built wheels next to an installed TensorFlow 2.20.0 + TF
Text 2.20.0 (an image like Kaggle's or Colab's: the test runtime `tensorflow-2.20.0` seen
through a `.pth` file) keeps every package the image had, and `convert`, `tokenize`,
`finetune`, `predict` and `export` work there from the installed wheel
(tests/support/installed_commands.py). TensorFlow 2.16.2 + TF Text 2.16.1, the oldest supported,
get the same check in tests/test_oldest_supported.py."""

from __future__ import annotations

import os
import subprocess

import pytest

from tests.export.runtimes import RUNTIMES, image_environment, installed_versions
from tests.support.built_distributions import built_distributions
from tests.support.installed_commands import run_commands

# In the landing that builds TF 2.20.0's runtime.
pytestmark = [pytest.mark.slow(env="tf-2.20.0"), pytest.mark.timeout(1800)]
IMAGE = "tensorflow-2.20.0"


def test_plain_pip_install_keeps_tensorflow_and_the_commands_work(tmp_path):
    built = built_distributions()
    python, site = image_environment(IMAGE, tmp_path / "image")
    before = installed_versions(python)
    assert (before["tensorflow"], before["tensorflow-text"]) == RUNTIMES[IMAGE]
    assert "keras-bert-tf" not in before
    done = subprocess.run(
        [python, "-m", "pip", "install", "-q", "--disable-pip-version-check", "--no-compile",
         built["keras-bert-client"].wheel, built["keras-bert-tf"].wheel],
        capture_output=True, text=True, timeout=900)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    after = installed_versions(python)
    changed = {n: (v, after.get(n)) for n, v in before.items() if after.get(n) != v}
    assert not changed, changed  # TensorFlow, TF Text, Keras, NumPy, ...: as the image had
    assert {"keras-bert-tf", "keras-bert-client"} <= set(after) - set(before)
    assert "tensorflow-serving-api" not in after  # the `serving` extra
    assert not any(f.startswith("tensorflow") for f in os.listdir(site))  # nothing shadowed
    work = tmp_path / "work"
    work.mkdir()
    run_commands(os.path.dirname(python), str(work))
