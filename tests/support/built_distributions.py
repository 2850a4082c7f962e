"""The wheels and sdists of this checkout, built from a copy of what a clone holds (the
files git tracks or would: no egg-info or build/ of earlier builds, which setuptools would
read), as a user builds them (`python -m build`:
an sdist, then the wheel from that sdist, each in an isolated environment; and
`python -m build --wheel`: a wheel straight from the source tree, as `pip install .`
builds one), once per content of the sources, under the test runtimes' cache (shared by
test processes)."""

from __future__ import annotations

import fcntl
import glob
import hashlib
import os
import shutil
import subprocess
import sys
import tempfile
from typing import NamedTuple

from tests.export.runtimes import cache_dir

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
PROJECTS = {"keras-bert-tf": REPO, "keras-bert-client": os.path.join(REPO, "client")}


class Built(NamedTuple):
    """One distribution's wheel (built from its sdist), sdist, and wheel built from the
    source tree."""

    wheel: str
    sdist: str
    direct_wheel: str


def tracked_files(project: str) -> list[str]:
    """The files of `project`'s folder that git tracks or would (untracked, not ignored),
    the client's folder excluded for the main one; relative to it."""
    listed = subprocess.run(["git", "ls-files", "-z", "--cached", "--others",
                             "--exclude-standard", "."], cwd=project, check=True,
                            capture_output=True).stdout.decode().split("\0")
    return sorted(f for f in listed if f and not (project == REPO and f.startswith("client/")))


def _sources_key() -> str:
    digest = hashlib.sha256()
    for project in PROJECTS.values():
        for name in tracked_files(project):
            path = os.path.join(project, name)
            if os.path.isfile(path):
                digest.update(name.encode() + b"\0")
                with open(path, "rb") as f:
                    digest.update(f.read())
    return digest.hexdigest()[:12]


def _clone_copy(project: str, temp: str) -> str:
    """`project`'s files as a clone has them, copied under `temp`."""
    source = os.path.join(temp, "src")
    for name in tracked_files(project):
        path = os.path.join(project, name)
        if os.path.isfile(path):
            os.makedirs(os.path.join(source, os.path.dirname(name)), exist_ok=True)
            shutil.copy2(path, os.path.join(source, name))
    return source


def built_distributions() -> dict[str, Built]:
    """`{name: Built}` for keras-bert-tf and keras-bert-client (built on first use)."""
    out = os.path.join(cache_dir(), f"dist-{_sources_key()}")
    os.makedirs(cache_dir(), exist_ok=True)
    with open(out + ".lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not os.path.exists(os.path.join(out, ".complete")):
            for project in PROJECTS.values():
                with tempfile.TemporaryDirectory() as temp:
                    source = _clone_copy(project, temp)
                    for options in ([], ["--wheel"]):
                        outdir = os.path.join(out, "direct") if options else out
                        subprocess.run([sys.executable, "-m", "build", "--installer", "uv",
                                        *options, "--outdir", outdir, source], check=True,
                                       timeout=600, capture_output=True)
            open(os.path.join(out, ".complete"), "w").close()
    found = {}
    for name in PROJECTS:
        stem = name.replace("-", "_")
        [wheel] = glob.glob(os.path.join(out, f"{stem}-*-py3-none-any.whl"))
        [sdist] = glob.glob(os.path.join(out, f"{stem}-*.tar.gz"))
        [direct] = glob.glob(os.path.join(out, "direct", f"{stem}-*-py3-none-any.whl"))
        found[name] = Built(wheel, sdist, direct)
    return found
