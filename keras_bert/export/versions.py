"""TF Serving's versioned layout: `BASE/<N>/`, written atomically.

A server watching `BASE` loads the highest integer version. A new version is built in a
hidden temporary directory beside the others and renamed into place only when complete, so
a killed export never leaves a directory a server would try to load.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import uuid


def existing_versions(base_dir: str) -> list[int]:
    """Integer version directories under `base_dir`, ascending."""
    if not os.path.isdir(base_dir):
        return []
    return sorted(int(name) for name in os.listdir(base_dir)
                  if name.isdigit() and os.path.isdir(os.path.join(base_dir, name)))


def next_version(base_dir: str) -> int:
    """One more than the highest existing version (1 for an empty base)."""
    versions = existing_versions(base_dir)
    return versions[-1] + 1 if versions else 1


@contextlib.contextmanager
def atomic_version_dir(base_dir: str, version: int | None = None):
    """Yields a temporary directory; on success it becomes `base_dir/<version>`.

    Refuses to overwrite an existing version. On an exception the temporary directory is
    removed and no version appears.
    """
    os.makedirs(base_dir, exist_ok=True)
    version = next_version(base_dir) if version is None else int(version)
    if version < 0:
        raise ValueError(f"version must be a non-negative integer, got {version}")
    final = os.path.join(base_dir, str(version))
    if os.path.exists(final):
        raise FileExistsError(f"{final} exists; pick another --version (next free: "
                              f"{next_version(base_dir)})")
    with atomic_dir(final) as tmp:
        yield tmp, version


@contextlib.contextmanager
def atomic_dir(final: str):
    """Yields a hidden temporary directory beside `final`; on success it is renamed to
    `final` (which must not exist), on an exception removed."""
    if os.path.exists(final):
        raise FileExistsError(f"{final} exists; it is never overwritten")
    parent, name = os.path.split(os.path.abspath(final))
    os.makedirs(parent, exist_ok=True)
    tmp = os.path.join(parent, f".tmp-{name}-{uuid.uuid4().hex[:8]}")
    try:
        yield tmp
        os.rename(tmp, final)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
