"""`scripts/kaggle_wheelhouse.py` on a simulated Kaggle image: the wheelhouse installs the
package offline next to a preinstalled TensorFlow, which it keeps.

The image: a fresh virtual environment that sees the packages of the test runtime
`tensorflow-2.20.0` (TensorFlow 2.20.0 + TF Text 2.20.0 and their dependencies, Keras 3.15.1,
made once under the runtimes' cache and shared with `tests/export/test_runtime_matrix.py`)
through a `.pth` file (`image_environment`), as a notebook sees the image's site-packages;
pip installs into the new environment only, so the cached runtime is never changed. The
wheelhouse is built for that TensorFlow by the script (from the package index), then
installed by the first cell of `examples/kaggle_bert.ipynb`
(`pip install --no-index --find-links WHEELHOUSE keras-bert-tf`), with the wheelhouse's
parent folder standing in for `/kaggle/input`, pip's configuration ignored and a dead proxy
set, so that any attempt to reach an index fails. Every package the image had keeps its
version; the new ones all come from the wheelhouse; the installed package tokenizes and
runs an encoder there. An image whose TensorFlow the wheelhouse cannot serve (the
`tensorflow-2.12.1` runtime, below setup.cfg's range) is refused before anything is
installed.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys

import pytest

from keras_bert.environment import user_environment
from tests.export.runtimes import RUNTIMES, image_environment, installed_versions

# The build fetches ~90 MB of wheels; ~1.5 min on 2 cores. The image is TF 2.20.0's runtime
# environment: these run in the landing that builds it, with the runtime matrix's 2.20.0 runs.
pytestmark = [pytest.mark.slow(env="tf-2.20.0"), pytest.mark.timeout(1800)]

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SCRIPT = os.path.join(REPO, "scripts", "kaggle_wheelhouse.py")
NOTEBOOK = os.path.join(REPO, "examples", "kaggle_bert.ipynb")
IMAGE = "tensorflow-2.20.0"
TENSORFLOW, TENSORFLOW_TEXT = RUNTIMES[IMAGE]
PACKAGE = "keras-bert-tf"
SMOKE = """
import json, os
import numpy as np
import tensorflow as tf
import keras_bert
from keras_bert.text import BertPreprocessor, BertTokenizer

vocab = os.path.join(os.path.dirname(keras_bert.__file__), "data", "vocab",
                     "corpus_uncased_8k.txt")
tokenizer = BertTokenizer(vocab)
features = BertPreprocessor(tokenizer, seq_length=16)(tf.constant(["Call me Ishmael."]))
outputs = keras_bert.BertEncoder.from_preset("tiny")(features)
print(json.dumps({
    "module": keras_bert.__file__, "tensorflow": tf.__version__,
    "ids": features["input_word_ids"][0].numpy().tolist(),
    "cls": tokenizer.special_token_ids["cls"],
    "shape": list(outputs["sequence_output"].shape),
    "finite": bool(np.isfinite(outputs["sequence_output"].numpy()).all())}))
"""


def _offline_env() -> dict[str, str]:
    """No pip configuration (this machine's adds find-links and indexes) and a dead proxy:
    a request to any index would fail."""
    env = {k: v for k, v in user_environment().items() if not k.upper().startswith("PIP_")}
    dead = "http://127.0.0.1:9"
    return dict(env, PIP_CONFIG_FILE=os.devnull, PIP_DISABLE_PIP_VERSION_CHECK="1",
                HTTP_PROXY=dead, HTTPS_PROXY=dead, http_proxy=dead, https_proxy=dead,
                NO_PROXY="", no_proxy="", TF_CPP_MIN_LOG_LEVEL="3")


def _installed(python: str) -> dict[str, str]:
    return installed_versions(python, _offline_env())


def _install(python: str, wheelhouse: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [python, "-m", "pip", "install", "--no-index", "--find-links", wheelhouse, PACKAGE],
        capture_output=True, text=True, env=_offline_env(), timeout=900)


def _install_cell(kaggle_input: str) -> str:
    """The notebook's install cell, reading attached datasets from `kaggle_input`."""
    with open(NOTEBOOK, encoding="utf-8") as f:
        cells = [c for c in json.load(f)["cells"] if c["cell_type"] == "code"]
    source = "".join(cells[0]["source"])
    assert '"--no-index"' in source and '"/kaggle/input/**/keras_bert_tf-*.whl"' in source
    return source.replace('"/kaggle/input/', f'"{kaggle_input}/')


@pytest.fixture(scope="module")
def wheelhouse(tmp_path_factory) -> str:
    out = str(tmp_path_factory.mktemp("kaggle") / "wheelhouse")
    subprocess.run([sys.executable, SCRIPT, "--tensorflow", TENSORFLOW, "--out", out],
                   check=True, timeout=1800)
    return out


def test_wheelhouse_installs_offline_and_keeps_the_image_tensorflow(wheelhouse, tmp_path):
    wheels = sorted(f for f in os.listdir(wheelhouse) if f.endswith(".whl"))
    names = {re.sub(r"-.*", "", w).lower().replace("_", "-") for w in wheels}
    minor = TENSORFLOW.rsplit(".", 1)[0]
    assert {PACKAGE, "tensorflow-text", "keras"} <= names
    [wheel] = [w for w in wheels if w.lower().startswith("tensorflow_text-")]
    assert wheel.split("-")[1].startswith(minor + "."), wheel
    assert "tensorflow-serving-api" not in names  # the `serving` extra: not for a notebook
    # TensorFlow and what it requires are left to the image (Keras is kept: --keep's default)
    assert not names & {"tensorflow", "numpy", "protobuf", "h5py", "grpcio", "tensorboard",
                        "ml-dtypes", "libclang"}, names
    readme = open(os.path.join(wheelhouse, "README.txt"), encoding="utf-8").read()
    assert f"for TensorFlow {TENSORFLOW} " in readme
    assert f"pip install --no-index --find-links /kaggle/input/<dataset> {PACKAGE}" in readme

    python, site = image_environment(IMAGE, tmp_path / "image")
    before = _installed(python)
    assert (before["tensorflow"], before["tensorflow-text"]) == (TENSORFLOW, TENSORFLOW_TEXT)
    assert PACKAGE not in before and "tensorflow-serving-api" not in before

    # the notebook's first cell, with the wheelhouse attached as a dataset
    done = subprocess.run([python, "-c", _install_cell(os.path.dirname(wheelhouse))],
                          capture_output=True, text=True, cwd=tmp_path, env=_offline_env(),
                          timeout=900)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    assert f"for TensorFlow {TENSORFLOW} (Linux x86_64, CPython 3.11) from {wheelhouse}" \
        in done.stdout
    assert f"tensorflow {TENSORFLOW} tensorflow-text {TENSORFLOW_TEXT}" in done.stdout
    after = _installed(python)
    changed = {n: (v, after.get(n)) for n, v in before.items() if after.get(n) != v}
    assert not changed, changed  # TensorFlow, TF Text, Keras, NumPy, ...: as the image had
    added = set(after) - set(before)
    assert PACKAGE in added and "tensorflow-serving-api" not in added
    assert added <= names, added - names
    assert not any(f.startswith("tensorflow-") for f in os.listdir(site))  # nothing shadowed

    smoke = subprocess.run([python, "-c", SMOKE], capture_output=True, text=True,
                           cwd=tmp_path, env=_offline_env(), timeout=600)
    assert smoke.returncode == 0, smoke.stderr[-3000:]
    found = json.loads(smoke.stdout.strip().splitlines()[-1])
    assert found["module"].startswith(site)  # the installed wheel, not this checkout
    assert found["tensorflow"] == TENSORFLOW
    assert found["ids"][0] == found["cls"] and sum(i != 0 for i in found["ids"]) >= 5
    assert found["shape"] == [1, 16, 128] and found["finite"]
    assert os.path.exists(os.path.join(tmp_path, "image", "bin", "keras-bert"))


def test_an_image_tensorflow_the_wheelhouse_does_not_serve_is_refused(wheelhouse, tmp_path):
    python, site = image_environment("tensorflow-2.12.1", tmp_path / "image")
    before = _installed(python)
    done = _install(python, wheelhouse)
    assert done.returncode != 0
    assert "No matching distribution found for tensorflow" in done.stdout + done.stderr
    assert _installed(python) == before and before["tensorflow"] == "2.12.1"
