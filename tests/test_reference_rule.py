"""The one rule for skips: a missing reference skips locally; under CI (`CI=true`) every skip,
however it was raised, fails the run (`tests/support/ci_rules.py`)."""

import pytest

from tests.support.reference import missing, require

SKIPPING = """
import pytest

def test_skips_by_call():
    pytest.skip("no reference here")

def test_skips_by_importorskip():
    pytest.importorskip("no_such_module_kb")

@pytest.mark.skipif(True, reason="a mark's condition")
def test_skips_by_mark():
    pass

@pytest.mark.xfail(reason="expected", strict=True)
def test_expected_failure():
    assert False

def test_passes():
    pass
"""


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


def test_every_skip_fails_under_ci(pytester, monkeypatch):
    pytester.makepyfile(test_skipping=SKIPPING)
    monkeypatch.setenv("CI", "true")
    result = pytester.runpytest("-p", "tests.support.ci_rules", "-p", "no:cacheprovider")
    # a mark skips in setup, so its failure is reported as a setup error: the run fails too
    result.assert_outcomes(passed=1, failed=2, errors=1, xfailed=1)
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    result.stdout.fnmatch_lines(["*skipped under CI=true, where no test may skip: no reference*",
                                 "*skipped under CI=true*no_such_module_kb*",
                                 "*skipped under CI=true*a mark's condition*"])


def test_skips_stay_skips_locally(pytester, monkeypatch):
    pytester.makepyfile(test_skipping=SKIPPING)
    monkeypatch.setenv("CI", "false")
    result = pytester.runpytest("-p", "tests.support.ci_rules", "-p", "no:cacheprovider")
    result.assert_outcomes(passed=1, skipped=3, xfailed=1)
