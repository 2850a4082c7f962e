"""The TensorFlow runtimes of TF Serving releases, as virtual environments for the tests.

| runtime | what it stands for |
| --- | --- |
| `tensorflow-2.20.0` (+ tensorflow-text 2.20.0) | what TF Serving 2.20 links |
| `tensorflow-2.12.1` (+ tensorflow-text 2.12.1) | the TF Text of TF Serving 2.13 - 2.19 |

Each environment holds only `tensorflow`, `tensorflow-text` and their dependencies, pinned by
`tensorflow-X.txt` beside this file (nothing of keras_bert is installed there). It is made
once, under `$KERAS_BERT_RUNTIMES` (default `~/.cache/keras_bert/runtimes`), and reused by
later runs; a file lock lets concurrent test processes share it.
"""

from __future__ import annotations

import fcntl
import os
import shutil
import subprocess
import sys

from keras_bert.environment import user_environment

HERE = os.path.dirname(os.path.abspath(__file__))
# runtime name -> (tensorflow, tensorflow-text)
RUNTIMES = {"tensorflow-2.20.0": ("2.20.0", "2.20.0"),
            "tensorflow-2.12.1": ("2.12.1", "2.12.1")}
# uv (a test tool, `setup.cfg`), as `scripts/install.sh` uses it: an environment took ~55 s
# with pip on 2 cores (2026-11-26). It byte-compiles nothing; modules compile on first use.
PIP_INSTALL = ["install", "-q"]


def cache_dir() -> str:
    """Where the environments live."""
    return os.environ.get("KERAS_BERT_RUNTIMES",
                          os.path.join(os.path.expanduser("~"), ".cache", "keras_bert",
                                       "runtimes"))


def runtime_python(name: str) -> str:
    """The interpreter of runtime `name`, creating its environment on first use."""
    tf_version, text_version = RUNTIMES[name]
    return environment_python(
        name, [*PIP_INSTALL, "-c", os.path.join(HERE, f"{name}.txt"),
               f"tensorflow=={tf_version}", f"tensorflow-text=={text_version}"],
        expect_tensorflow=tf_version)


def install_command(installer: str, python: str, arguments: list[str]) -> list[str]:
    """`pip <arguments>` for the environment of `python`, run by pip itself or by uv (from
    this test environment, with pip's find-links passed on as `scripts/install.sh` does)."""
    if installer == "pip":
        return [python, "-m", "pip", *arguments]
    uv = shutil.which("uv", path=os.path.dirname(sys.executable)) or shutil.which("uv")
    if uv is None:
        raise RuntimeError("uv is missing: `scripts/install.sh` installs the test tools")
    links = os.environ.get("PIP_FIND_LINKS", "").split()
    configured = subprocess.run([sys.executable, "-m", "pip", "config", "get",
                                 "global.find-links"], capture_output=True, text=True)
    links += configured.stdout.split() if configured.returncode == 0 else []
    return [uv, "pip", arguments[0], "--python", python,
            *[f"--find-links={link}" for link in links], *arguments[1:]]


def environment_python(name: str, *pip_commands: list[str], expect_tensorflow: str,
                       installer: str = "uv") -> str:
    """The interpreter of the environment `name` under `cache_dir()`, made on first use by
    running `installer` (`uv` or `pip`) with each argument list of `pip_commands`; it must
    hold `expect_tensorflow`."""
    folder = os.path.join(cache_dir(), name)
    python = os.path.join(folder, "bin", "python")
    done = os.path.join(folder, ".complete")
    os.makedirs(cache_dir(), exist_ok=True)
    with open(folder + ".lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not os.path.exists(done):
            shutil.rmtree(folder, ignore_errors=True)
            base = getattr(sys, "_base_executable", sys.executable)
            subprocess.run([base, "-m", "venv", folder], check=True)
            for arguments in pip_commands:
                subprocess.run(install_command(installer, python, arguments), check=True,
                               timeout=1800)
            found = subprocess.run(
                [python, "-c", "import tensorflow as tf; print(tf.__version__)"],
                check=True, capture_output=True, text=True,
                env=user_environment(TF_CPP_MIN_LOG_LEVEL="3")).stdout.split()[-1]
            if found != expect_tensorflow:
                raise RuntimeError(f"{folder} has tensorflow {found}, not {expect_tensorflow}")
            open(done, "w").close()
    return python


def new_environment(folder, *requirements: str) -> str:
    """The interpreter of a new virtual environment at `folder` (not cached) holding
    `requirements` at constraints.txt's versions, installed by uv."""
    repo = os.path.dirname(os.path.dirname(os.path.dirname(HERE)))
    subprocess.run([getattr(sys, "_base_executable", sys.executable), "-m", "venv",
                    str(folder)], check=True)
    python = os.path.join(folder, "bin", "python")
    subprocess.run(install_command("uv", python, [
        "install", "-q", "-c", os.path.join(repo, "constraints.txt"), *requirements]),
        check=True, timeout=900)
    return python


SITE = "import sysconfig; print(sysconfig.get_paths()['purelib'])"


def image_environment(runtime: str, folder) -> tuple[str, str]:
    """`(python, site-packages)` of a new environment at `folder` that sees `runtime`'s
    packages through a `.pth` file, as a preinstalled TensorFlow image's users see theirs;
    pip installs into the new environment only, so the cached runtime never changes."""
    base = runtime_python(runtime)
    subprocess.run([getattr(sys, "_base_executable", sys.executable), "-m", "venv",
                    "--without-pip", str(folder)], check=True)
    python = os.path.join(folder, "bin", "python")
    site = subprocess.run([python, "-c", SITE], capture_output=True, text=True,
                          check=True).stdout.strip()
    image_site = subprocess.run([base, "-c", SITE], capture_output=True, text=True,
                                check=True).stdout.strip()
    with open(os.path.join(site, "image.pth"), "w") as f:
        f.write(image_site + "\n")
    return python, site


def installed_versions(python: str, env: dict | None = None) -> dict[str, str]:
    """`{distribution: version}` of what `python` sees (`pip list`), names normalized."""
    import json

    found = subprocess.run([python, "-m", "pip", "list", "--format", "json",
                            "--disable-pip-version-check"], capture_output=True, text=True,
                           check=True, env=env)
    return {row["name"].lower().replace("_", "-"): row["version"]
            for row in json.loads(found.stdout)}
