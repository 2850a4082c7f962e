"""A quiet, honest start (issue 32): a command prints its own output only, TensorFlow's
start-up lines come back with `KERAS_BERT_TF_LOGS=1` (the control: TensorFlow does print
them here), a line that is not known to be harmless still prints, and `--version` names
the installed versions."""

from __future__ import annotations

import os
import subprocess
import sys
from importlib import metadata

import pytest

from keras_bert.cli.quiet_start import HARMLESS, SHOW_ALL_VARIABLE, kept_lines

VOCAB = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))),
                     "keras_bert", "data", "vocab", "corpus_uncased_8k.txt")
CLI = [sys.executable, "-m", "keras_bert.cli"]
# What TensorFlow 2.21 printed while it loaded in a fresh process on a CPU-only host
# (2026-11-27; the cuInit line is an ERROR-level line on every machine without a GPU).
STARTUP = """\
WARNING: All log messages before absl::InitializeLog() is called are written to STDERR
I0000 00:00:1795750594.309499    1078 port.cc:153] oneDNN custom operations are on. You may see slightly different numerical results due to floating-point round-off errors from different computation orders. To turn them off, set the environment variable `TF_ENABLE_ONEDNN_OPTS=0`.
I0000 00:00:1795750594.309913    1078 cudart_stub.cc:31] Could not find cuda drivers on your machine, GPU will not be used.
I0000 00:00:1795750232.215355   30366 cpu_feature_guard.cc:227] This TensorFlow binary is optimized to use available CPU instructions in performance-critical operations.
To enable the following instructions: AVX2 AVX512F AVX512_VNNI AVX512_BF16 FMA, in other operations, rebuild TensorFlow with the appropriate compiler flags.
E0000 00:00:1795750592.302766    1068 cuda_platform.cc:52] failed call to cuInit: INTERNAL: CUDA error: Failed call to cuInit: UNKNOWN ERROR (303)
"""  # noqa: E501


def _run(args: list[str], env_extra: dict | None = None,
         stdin: str | None = None) -> subprocess.CompletedProcess:
    """`keras-bert ARGS` with TensorFlow's own log settings unset, as a user's shell has."""
    env = {k: v for k, v in os.environ.items()
           if k not in (SHOW_ALL_VARIABLE, "TF_CPP_MIN_LOG_LEVEL")}
    return subprocess.run([*CLI, *args], input=stdin, capture_output=True, text=True,
                          timeout=600, env={**env, **(env_extra or {})}, check=True)


def _tokenize(env_extra: dict, debug: bool = False) -> subprocess.CompletedProcess:
    return _run([*(["--debug"] if debug else []), "tokenize", "--vocab", VOCAB, "--tokens"],
                env_extra, stdin="the whale\n")


def _assert_tensorflow_lines(stderr: str) -> None:
    lines = [line for line in stderr.splitlines() if line.strip()]
    assert lines and all(any(p.search(line) for p in HARMLESS) for line in lines), lines


@pytest.mark.slow
def test_a_command_prints_its_own_output_only():
    quiet = _tokenize({})
    assert quiet.stdout == "the whale\n"
    assert quiet.stderr == ""
    loud = _tokenize({SHOW_ALL_VARIABLE: "1"})  # the control: TensorFlow's own lines
    assert loud.stdout == "the whale\n"
    _assert_tensorflow_lines(loud.stderr)
    debug = _tokenize({}, debug=True)  # --debug brings them back too
    assert debug.stdout == "the whale\n"
    _assert_tensorflow_lines(debug.stderr)


@pytest.mark.slow
def test_convert_and_export_print_nothing_on_stderr(tiny_model_dir, tmp_path):
    converted = _run(["convert", tiny_model_dir, str(tmp_path / "hf"), "--to", "huggingface"])
    assert converted.stdout and converted.stderr == ""
    exported = _run(["export", tiny_model_dir, str(tmp_path / "served")])
    assert os.path.exists(tmp_path / "served" / "1" / "saved_model.pb")
    assert exported.stdout and exported.stderr == ""


def test_harmless_start_up_lines_are_dropped_and_others_kept():
    assert kept_lines(STARTUP, gpu_present=False) == []
    problem = "E0000 00:00:1.0 1 dso_loader.cc:1] Could not load libcudnn.so.9: not found"
    assert kept_lines(STARTUP + problem + "\n", gpu_present=False) == [problem]
    (line,) = kept_lines(STARTUP, gpu_present=True)  # a GPU whose CUDA did not start
    assert "has a GPU but CUDA failed to start" in line and SHOW_ALL_VARIABLE in line


def test_version_names_the_installed_versions():
    out = subprocess.run([*CLI, "--version"], capture_output=True, text=True, timeout=120,
                         check=True)
    want = ", ".join(f"{name} {metadata.version(name)}" for name in
                     ("keras-bert-tf", "keras-bert-client", "tensorflow", "tensorflow-text",
                      "keras"))
    assert out.stdout.strip() == want and out.stderr == ""
