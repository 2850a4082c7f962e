"""The fixture both server test files use (`test_server.py`, `test_server_versions.py`);
`test_abuse.py` defines its own (the version directory's path)."""

from __future__ import annotations

import pytest


@pytest.fixture(scope="module")
def exported(tiny_export):
    """The tiny model's export: `BASE/1/` (shared, `tests/conftest.py`; copied before versions
    are added)."""
    return tiny_export
