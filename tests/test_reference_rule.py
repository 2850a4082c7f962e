"""The one rule for missing references: skip locally, fail under CI (`CI=true`)."""

import pytest

from tests.reference import missing, require


def test_a_missing_reference_fails_under_ci(monkeypatch):
    monkeypatch.setenv("CI", "true")
    with pytest.raises(pytest.fail.Exception, match="required under CI"):
        missing("the weights are not installed")
    with pytest.raises(pytest.fail.Exception, match="no_such_module_kb"):
        require("no_such_module_kb")


def test_a_missing_reference_skips_locally(monkeypatch):
    monkeypatch.delenv("CI", raising=False)
    with pytest.raises(pytest.skip.Exception):
        missing("the weights are not installed")
