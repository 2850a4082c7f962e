"""Importing keras_bert.text refuses a tensorflow-text of another TensorFlow minor version,
naming both versions and the command that fixes it."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest
import tensorflow as tf

from keras_bert.text.dependency_check import (
    check_tf_text_matches,
    minor_version,
    missing_tf_text,
)

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def test_minor_versions():
    assert minor_version("2.21.0") == (2, 21)
    assert minor_version("2.16.0rc1") == (2, 16)
    assert minor_version("2.20.0.dev20250101") == (2, 20)
    with pytest.raises(ValueError, match="not a version"):
        minor_version("latest")


@pytest.mark.parametrize("tf_version, text_version", [
    ("2.21.0", "2.21.1"), ("2.16.2", "2.16.1"), ("2.20.0", "2.20.0rc0")])
def test_matching_pairs_pass(tf_version, text_version):
    check_tf_text_matches(tf_version, text_version)


def test_mismatch_names_both_versions_and_the_fix():
    with pytest.raises(ImportError) as error:
        check_tf_text_matches("2.21.0", "2.16.1")
    message = str(error.value)
    assert "tensorflow-text 2.16.1 does not match tensorflow 2.21.0" in message
    assert 'pip install "tensorflow-text==2.21.*"' in message
    with pytest.raises(ImportError, match="2.21.0"):
        check_tf_text_matches("2.21.0", "3.21.0")  # the major counts too


@pytest.mark.parametrize("system, machine, tf_version", [
    ("win32", "AMD64", "2.20.0"), ("linux", "aarch64", "2.21.0"), ("darwin", "arm64", "2.16.2")])
def test_a_platform_without_tf_text_builds_is_named_with_where_it_runs(system, machine,
                                                                       tf_version):
    message = missing_tf_text(tf_version, system, machine)
    assert f"no build for tensorflow {tf_version} on {system} {machine}" in message
    assert "Linux x86_64 (TensorFlow 2.16-2.21)" in message and "WSL2" in message


@pytest.mark.parametrize("system, machine, tf_version", [
    ("linux", "x86_64", "2.21.0"), ("darwin", "arm64", "2.17.1")])
def test_where_tf_text_has_builds_the_message_is_the_install_command(system, machine,
                                                                      tf_version):
    minor = tf_version.rsplit(".", 1)[0]
    assert missing_tf_text(tf_version, system, machine).endswith(
        f'pip install "tensorflow-text=={minor}.*"')


def test_the_requirement_leaves_tf_text_out_where_it_has_no_wheels():
    from packaging.requirements import Requirement

    setup = open(os.path.join(REPO, "setup.cfg"), encoding="utf-8").read()
    [line] = [line.strip() for line in setup.splitlines()
              if line.strip().startswith("tensorflow-text>=")]
    marker = Requirement(line).marker
    for system, machine, wanted in [("win32", "AMD64", False), ("linux", "aarch64", False),
                                    ("linux", "x86_64", True), ("darwin", "arm64", True)]:
        assert marker.evaluate({"sys_platform": system, "platform_machine": machine}) == wanted


def test_this_environment_is_a_matching_pair():
    import tensorflow_text

    check_tf_text_matches()
    assert minor_version(tensorflow_text.__version__) == minor_version(tf.__version__)


def _imports(path: str) -> list[str]:
    """The modules a file imports at its top level, in order."""
    import ast

    with open(os.path.join(REPO, path), encoding="utf-8") as f:
        tree = ast.parse(f.read())
    found = []
    for node in tree.body:
        if isinstance(node, ast.Import):
            found += [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module:
            found += [f"{node.module}.{alias.name}" for alias in node.names]
    return found


def test_the_check_is_the_first_thing_importing_keras_bert_text_runs():
    """The README tier's guard of the fresh-process test below, read from the source: what
    `import keras_bert.text` runs before its first import (the package's `__init__`,
    `environment`) and the check itself import no TF Text, and the check comes first."""
    first = [name for name in _imports("keras_bert/text/__init__.py")
             if name.startswith("keras_bert")]
    assert first[0] == "keras_bert.text.dependency_check", first
    for path in ("keras_bert/__init__.py", "keras_bert/environment.py",
                 "keras_bert/text/dependency_check.py"):
        imported = _imports(path)
        assert not [n for n in imported if n.startswith("tensorflow_text")], (path, imported)
        assert not [n for n in imported if n.startswith("keras_bert.")
                    and n not in ("keras_bert.environment",)], (path, imported)


# ~12 s on a busy 2-core Zen 4 (a fresh process importing TensorFlow); the README's tier keeps
# the order read from the source (the test above) and the check's messages (the tests above).
@pytest.mark.slow
def test_import_fails_before_tf_text_loads_when_the_pair_does_not_match():
    # A fake distribution metadata of another minor version ahead on the path: importing
    # keras_bert.text must fail with the check's message, not inside TF Text.
    code = (
        "import importlib.metadata as m\n"
        "real = m.version\n"
        "m.version = lambda name: '2.12.1' if name == 'tensorflow-text' else real(name)\n"
        "import sys\n"
        "try:\n"
        "    import keras_bert.text\n"
        "except ImportError as e:\n"
        "    print('REFUSED', e, 'LOADED' if 'tensorflow_text' in sys.modules else 'NOT LOADED')\n")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          cwd=REPO, env=dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3"), timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    assert "REFUSED tensorflow-text 2.12.1 does not match tensorflow" in done.stdout
    assert "NOT LOADED" in done.stdout
