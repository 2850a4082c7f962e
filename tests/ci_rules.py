"""The suite's one rule for skips: under CI (`CI=true`) no test may skip.

A skipped test proves nothing, and a skip that hides a missing reference, package or file
would let a proof stop running while CI stays green. Locally a test may skip (a developer
without the references installed); under CI the hook below turns every skip, however it was
raised (`pytest.skip`, `importorskip`, a `skipif` mark), into a failure that names the reason.
Expected failures (`xfail`) are not skips and are left alone.
"""

from __future__ import annotations

import os

import pytest


def under_ci() -> bool:
    """Whether this run is CI's (`CI=true`, as `.ci/run` sets it)."""
    return os.environ.get("CI", "").lower() == "true"


def _reason(longrepr) -> str:
    if isinstance(longrepr, tuple) and len(longrepr) == 3:
        return str(longrepr[2]).removeprefix("Skipped: ")
    return str(longrepr)


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    """Under CI, a skipped test is reported as failed, with the skip's reason."""
    outcome = yield
    report = outcome.get_result()
    if report.skipped and under_ci() and not hasattr(report, "wasxfail"):
        report.outcome = "failed"
        report.longrepr = (f"{item.nodeid} skipped under CI=true, where no test may skip: "
                           f"{_reason(report.longrepr)}")
