"""The process settings keras_bert chooses where the user chose none, and the environment a
process of another runtime gets.

`import keras_bert` calls `choose_defaults` once, before Keras or TensorFlow is imported
(both read these variables when they start), and records what it set in `CHOSEN`. A
variable the user set always wins.

A process keras_bert starts for another runtime (an older TensorFlow checking an export,
`keras_bert.export.runtime_check`) gets `user_environment()`: the user's environment
without our choices. Our choices were measured with the TensorFlow this package runs on;
TensorFlow 2.12's oneDNN aborts on some AVX2-only CPUs ("could not create a primitive
descriptor") when `TF_ENABLE_ONEDNN_OPTS=1` is handed to it.

Imports nothing heavy: `import keras_bert.client` goes through here.
"""

from __future__ import annotations

import importlib.metadata
import importlib.util
import os

# The TensorFlow releases whose oneDNN kernels keras_bert turns on by default: the ones its
# fit was measured with and its whole test suite ran with (docs/backends.md, "CPU kernels").
ONEDNN_FROM = (2, 21)

CHOSEN: dict[str, str] = {}


def choose_defaults() -> None:
    """Sets, where the user has not: the Keras backend, TensorFlow's C++ log level, and
    TensorFlow's oneDNN kernels on (`onednn_by_default`)."""
    # TensorFlow is the package's backend (the text pipeline and the exports are
    # TensorFlow's); where it is not installed (an accelerator image with JAX alone), the
    # networks and the training loop on token ids run on JAX.
    has_tensorflow = importlib.util.find_spec("tensorflow") is not None
    _choose("KERAS_BACKEND", "tensorflow" if has_tensorflow
            or importlib.util.find_spec("jax") is None else "jax")
    _choose("TF_CPP_MIN_LOG_LEVEL", "2")
    if has_tensorflow and onednn_by_default(_installed_tensorflow()):
        _choose("TF_ENABLE_ONEDNN_OPTS", "1")


def onednn_by_default(version: tuple[int, int] | None) -> bool:
    """Whether keras_bert turns on oneDNN for a TensorFlow of `version` (major, minor).

    TensorFlow turns its oneDNN kernels on by itself only on x86 CPUs with AVX-512
    VNNI/BF16 or AMX; on the others (AVX2 alone: AMD EPYC Zen 3, older Xeons) it runs
    Eigen's, and an all-MiniLM-L6-v2 fine-tuning step took 1.26x as long. Releases before
    `ONEDNN_FROM` keep TensorFlow's own choice: untested here with oneDNN forced on."""
    return version is not None and version >= ONEDNN_FROM


def user_environment(**overrides: str) -> dict[str, str]:
    """`os.environ` without the variables `choose_defaults` set (where they still hold our
    value), with `overrides` on top: the environment for a process of another runtime."""
    env = {name: value for name, value in os.environ.items()
           if CHOSEN.get(name) != value}
    env.update(overrides)
    return env


def _choose(name: str, value: str) -> None:
    if name not in os.environ:
        os.environ[name] = value
        CHOSEN[name] = value


def _installed_tensorflow() -> tuple[int, int] | None:
    """The installed `tensorflow` distribution's (major, minor), from its metadata (no
    import); None when it is absent or its version does not read as numbers."""
    try:
        parts = importlib.metadata.version("tensorflow").split(".")
        return int(parts[0]), int(parts[1])
    except (importlib.metadata.PackageNotFoundError, ValueError, IndexError):
        return None


__all__ = ["CHOSEN", "ONEDNN_FROM", "choose_defaults", "onednn_by_default",
           "user_environment"]
