"""TF Text must come from TensorFlow's minor release: checked before it is imported.

TF Text's kernels are compiled against one TensorFlow minor version (tensorflow-text 2.16.x
for tensorflow 2.16.x, ...). A mismatched pair fails deep inside the import with an
`undefined symbol` from a shared library, or loads and crashes later; importing
`keras_bert.text` checks the installed versions first and raises an `ImportError` that names
both and the command that fixes it.
"""

from __future__ import annotations

import importlib.metadata
import platform
import re
import sys

import tensorflow as tf

# Where tensorflow-text has wheels for the TensorFlow releases this package supports (PyPI,
# checked with `pip download --platform ...` on 2026-11-27): Linux x86_64 for 2.16-2.21,
# macOS on Apple silicon for 2.17-2.21; Windows and Linux aarch64 none.
SUPPORTED_PLATFORMS = ("tensorflow-text has wheels for Linux x86_64 (TensorFlow 2.16-2.21) "
                       "and macOS on Apple silicon (2.17-2.21), none for Windows or Linux "
                       "aarch64: on Windows, use WSL2 (Linux)")


def minor_version(version: str) -> tuple[int, int]:
    """`(major, minor)` of a version string such as `2.21.0`, `2.16.0rc1` or `2.20.0.dev1`."""
    found = re.match(r"(\d+)\.(\d+)", version)
    if not found:
        raise ValueError(f"not a version: {version!r}")
    return int(found[1]), int(found[2])


def installed_tf_text_version() -> str | None:
    """The installed tensorflow-text distribution's version (None when absent)."""
    for name in ("tensorflow-text", "tensorflow-text-nightly"):
        try:
            return importlib.metadata.version(name)
        except importlib.metadata.PackageNotFoundError:
            continue
    return None


def missing_tf_text(tf_version: str, system: str, machine: str) -> str:
    """What to do when tensorflow-text is absent, on `system` (`sys.platform`) and
    `machine` (`platform.machine()`)."""
    major, minor = minor_version(tf_version)
    linux_arm = system == "linux" and machine.lower() in ("aarch64", "arm64")
    mac_arm_before_2_17 = system == "darwin" and machine == "arm64" and (major, minor) < (2, 17)
    if system == "win32" or linux_arm or mac_arm_before_2_17:
        return (f"keras_bert's text pipeline needs tensorflow-text, which has no build for "
                f"tensorflow {tf_version} on {system} {machine}: {SUPPORTED_PLATFORMS}")
    return (f"keras_bert needs tensorflow-text for tensorflow {tf_version}: "
            f'pip install "tensorflow-text=={major}.{minor}.*"')


def check_tf_text_matches(tf_version: str | None = None,
                          text_version: str | None = None) -> None:
    """Raises `ImportError` unless tensorflow-text is installed for TensorFlow's minor version."""
    tf_version = tf_version or tf.__version__
    text_version = text_version or installed_tf_text_version()
    major, minor = minor_version(tf_version)
    wanted = f'pip install "tensorflow-text=={major}.{minor}.*"'
    if text_version is None:
        raise ImportError(missing_tf_text(tf_version, sys.platform, platform.machine()))
    if minor_version(text_version) != (major, minor):
        raise ImportError(
            f"tensorflow-text {text_version} does not match tensorflow {tf_version}: TF Text's "
            f"kernels are built for one TensorFlow minor version. Install the matching "
            f"release: {wanted} (or the tensorflow that matches tensorflow-text)")


check_tf_text_matches()
