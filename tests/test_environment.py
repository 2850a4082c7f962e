"""What `import keras_bert` sets for TensorFlow and Keras, and what a process of another
runtime inherits from it (`keras_bert.environment`)."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from keras_bert import environment
from keras_bert.export import runtime_check

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CHOSEN_NAMES = ("KERAS_BACKEND", "TF_CPP_MIN_LOG_LEVEL", "TF_ENABLE_ONEDNN_OPTS")

# What TensorFlow decides about oneDNN is `IsMklEnabled()` of its `_pywrap_util_port`, which
# reads TF_ENABLE_ONEDNN_OPTS when the library first asks. `LIGHT` loads that extension by its
# file, without `tensorflow/__init__.py` (0.25 s against ~8 s for the whole import on a Zen 5:
# TensorFlow's import also imports JAX and matplotlib where they are installed); `FULL`
# imports TensorFlow as a user's script does.
PROBE = """
import json, os, sys
import keras_bert  # noqa: F401  (first, as a user's script does)
from keras_bert.environment import CHOSEN, user_environment
if {full}:
    from tensorflow.python.util import _pywrap_util_port
else:
    import importlib.machinery, importlib.util
    folder = importlib.util.find_spec("tensorflow").submodule_search_locations[0]
    path = os.path.join(folder, "python", "util", "_pywrap_util_port.so")
    spec = importlib.util.spec_from_file_location("_pywrap_util_port", path,
        loader=importlib.machinery.ExtensionFileLoader("_pywrap_util_port", path))
    _pywrap_util_port = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(_pywrap_util_port)
print(json.dumps({{"onednn": os.environ.get("TF_ENABLE_ONEDNN_OPTS"),
                  "mkl": bool(_pywrap_util_port.IsMklEnabled()), "chosen": CHOSEN,
                  "child": user_environment().get("TF_ENABLE_ONEDNN_OPTS"),
                  "tensorflow_imported": "tensorflow" in sys.modules}}))
"""


def _probe(full: bool = False, **settings: str) -> dict:
    env = {k: v for k, v in os.environ.items() if k not in CHOSEN_NAMES}
    done = subprocess.run([sys.executable, "-c", PROBE.format(full=full)], cwd=REPO,
                          capture_output=True, text=True, timeout=180, env={**env, **settings})
    assert done.returncode == 0, done.stderr[-2000:]
    found = json.loads(done.stdout.strip().splitlines()[-1])
    assert found["tensorflow_imported"] is full  # the probe measured what it says it did
    return found


def test_importing_keras_bert_first_turns_on_onednn_and_keeps_it_from_children():
    # TensorFlow itself leaves oneDNN off on AVX2-only x86 CPUs, where it measured faster;
    # the installed TensorFlow (the constraints' 2.21) is one keras_bert turns it on for.
    found = _probe()
    assert (found["onednn"], found["mkl"]) == ("1", True)
    assert found["chosen"]["TF_ENABLE_ONEDNN_OPTS"] == "1"
    assert found["child"] is None  # another runtime gets the user's environment


def test_the_users_onednn_setting_wins_and_reaches_children():
    # "0", the setting that differs from ours; that a user's "1" reaches a child is the unit
    # test's below.
    found = _probe(TF_ENABLE_ONEDNN_OPTS="0")
    assert (found["onednn"], found["mkl"]) == ("0", False)
    assert "TF_ENABLE_ONEDNN_OPTS" not in found["chosen"]
    assert found["child"] == "0"


# ~8 s on a Zen 5 beside another worker (a fresh process importing all of TensorFlow); the
# light probes above read the same function of the same library.
@pytest.mark.slow
def test_a_whole_tensorflow_imported_after_keras_bert_runs_with_onednn():
    found = _probe(full=True)
    assert (found["onednn"], found["mkl"]) == ("1", True)
    assert found["chosen"]["TF_ENABLE_ONEDNN_OPTS"] == "1"


def test_a_setting_of_the_user_is_never_chosen_over(monkeypatch):
    """`choose_defaults` with the user's "0" (the probe above, in process): kept, not
    recorded as ours, and handed to a child; the variables the user left alone are ours."""
    monkeypatch.setattr(environment, "CHOSEN", {})
    for name in CHOSEN_NAMES:
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("TF_ENABLE_ONEDNN_OPTS", "0")
    environment.choose_defaults()
    assert os.environ["TF_ENABLE_ONEDNN_OPTS"] == "0"
    assert "TF_ENABLE_ONEDNN_OPTS" not in environment.CHOSEN
    assert environment.user_environment()["TF_ENABLE_ONEDNN_OPTS"] == "0"
    assert environment.CHOSEN == {"KERAS_BACKEND": "tensorflow", "TF_CPP_MIN_LOG_LEVEL": "2"}
    assert "KERAS_BACKEND" not in environment.user_environment()


@pytest.mark.parametrize(("version", "on"), [((2, 21), True), ((2, 22), True), ((3, 0), True),
                                             ((2, 20), False), ((2, 16), False),
                                             (None, False)])
def test_onednn_is_forced_only_on_the_tensorflow_it_was_measured_with(version, on):
    assert environment.onednn_by_default(version) is on


def test_user_environment_drops_our_choices_only_while_they_hold(monkeypatch):
    monkeypatch.setattr(environment, "CHOSEN", {"TF_ENABLE_ONEDNN_OPTS": "1",
                                                "KERAS_BACKEND": "tensorflow"})
    monkeypatch.setenv("TF_ENABLE_ONEDNN_OPTS", "1")
    monkeypatch.setenv("KERAS_BACKEND", "jax")  # changed by the user since: theirs now
    env = environment.user_environment(TF_CPP_MIN_LOG_LEVEL="3")
    assert "TF_ENABLE_ONEDNN_OPTS" not in env
    assert env["KERAS_BACKEND"] == "jax" and env["TF_CPP_MIN_LOG_LEVEL"] == "3"
    assert env["PATH"] == os.environ["PATH"]
    monkeypatch.setattr(environment, "CHOSEN", {})  # the user set it: it reaches children
    assert environment.user_environment()["TF_ENABLE_ONEDNN_OPTS"] == "1"


def test_an_export_checked_in_another_runtime_runs_without_our_choices(monkeypatch, tmp_path):
    # TensorFlow 2.12's oneDNN aborted on an AVX2-only CPU with TF_ENABLE_ONEDNN_OPTS=1
    # ("could not create a primitive descriptor") in CI's runtime matrix.
    monkeypatch.setattr(environment, "CHOSEN", {"TF_ENABLE_ONEDNN_OPTS": "1"})
    monkeypatch.setenv("TF_ENABLE_ONEDNN_OPTS", "1")
    seen = {}

    def run(command, env, **kwargs):
        seen.update(env)
        return subprocess.CompletedProcess(command, 1, "", "no runtime here")

    monkeypatch.setattr(runtime_check.subprocess, "run", run)
    report = runtime_check.check_in_runtime(str(tmp_path), python="python-of-tf-2.12")
    assert "could not run the check" in report.load_error
    assert "TF_ENABLE_ONEDNN_OPTS" not in seen and seen["TF_CPP_MIN_LOG_LEVEL"] == "3"
