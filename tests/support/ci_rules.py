"""The suite's one rule for skips: under CI (`CI=true`) no test may skip.

A skipped test proves nothing, and a skip that hides a missing reference, package or file
would let a proof stop running while CI stays green. Locally a test may skip (a developer
without the references installed); under CI the hook below turns every skip, however it was
raised (`pytest.skip`, `importorskip`, a `skipif` mark), into a failure that names the reason.
Expected failures (`xfail`) are not skips and are left alone.

The one exception is explicit and printed, never a skip: tests that cannot run on this Python
(`python_bound`: those marked `needs_torch`, where `scripts/install.sh` installs no torch,
`needs_jax`, where no JAX release installs, and
the shares of `tests/support/rotation.py: SHARE_PYTHONS`) are deselected at collection, the report's
header says which and why, and its summary counts them. On the development Python nothing is
left out, so there a missing torch still skips locally and fails under CI.
"""

from __future__ import annotations

import os
import platform
import sys

import pytest

from tests.support.rotation import SHARE_PYTHONS

# The Pythons on which `scripts/install.sh` installs torch 2.13.0 and the peers that run on it
# (transformers, ONNX Runtime): its TORCH_PYTHONS, which tests/test_suite_order.py holds equal.
TORCH_PYTHONS = ("3.11",)
# The Pythons with JAX (setup.cfg's extra `jax`: jax 0.7 and later need Python 3.11).
JAX_PYTHONS = ("3.11", "3.12", "3.13")
LEFT_OUT = pytest.StashKey[dict]()


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


def this_python() -> str:
    """This interpreter's `3.X`."""
    return f"{sys.version_info.major}.{sys.version_info.minor}"


def torch_reason(python: str) -> str | None:
    """Why the tests marked `needs_torch` do not run on `python` (`3.X`), or None."""
    if python in TORCH_PYTHONS:
        return None
    return (f"marked needs_torch: scripts/install.sh installs torch 2.13.0 (CPU) on Python "
            f"{', '.join(TORCH_PYTHONS)} only; for Python {python} PyPI's Linux torch is the "
            "CUDA build, several GB, which this project never installs")


def jax_reason(python: str) -> str | None:
    """Why the tests marked `needs_jax` do not run on `python` (`3.X`), or None."""
    if python in JAX_PYTHONS:
        return None
    return (f"marked needs_jax: jax 0.7 and later (setup.cfg's extra `jax`) need Python 3.11 "
            f"or newer, not {python}")


def python_bound(item, python: str | None = None) -> str | None:
    """Why `item` cannot run on `python` (`3.X`, default this one), or None: it is marked
    `needs_torch` or `needs_jax` there, or it belongs to a share of `SHARE_PYTHONS` that
    does not list it."""
    python = python or this_python()
    if item.get_closest_marker("needs_torch") is not None and torch_reason(python):
        return torch_reason(python)
    if item.get_closest_marker("needs_jax") is not None and jax_reason(python):
        return jax_reason(python)
    mark = item.get_closest_marker("rotating")
    name = mark.kwargs.get("share") if mark is not None else None
    if name in SHARE_PYTHONS and python not in SHARE_PYTHONS[name][0]:
        pythons, why = SHARE_PYTHONS[name]
        return f"of the share {name}, run on Python {', '.join(pythons)} only: {why}"
    return None


def leave_out_for_python(config, items) -> None:
    """Deselects the tests `python_bound` names (from `tests/conftest.py`'s collection hook)
    and keeps their count per reason for the summary; an xdist worker hands it to the
    controller, which prints it."""
    kept, dropped, reasons = [], [], {}
    for item in items:
        why = python_bound(item)
        if why is None:
            kept.append(item)
        else:
            dropped.append(item)
            reasons[why] = reasons.get(why, 0) + 1
    if dropped:
        config.hook.pytest_deselected(items=dropped)
        items[:] = kept
    config.stash[LEFT_OUT] = reasons
    if hasattr(config, "workeroutput"):
        config.workeroutput["keras_bert_left_out"] = reasons


@pytest.hookimpl(optionalhook=True)
def pytest_testnodedown(node, error):
    """Each xdist worker collected the same tests: any one's count will do."""
    reasons = getattr(node, "workeroutput", {}).get("keras_bert_left_out")
    if reasons:
        node.config.stash[LEFT_OUT] = reasons


def _bound_here() -> list[str]:
    python = this_python()
    reasons = [why for why in (torch_reason(python), jax_reason(python)) if why]
    return reasons + [f"of the share {name}, run on Python {', '.join(pythons)} only: {why}"
                      for name, (pythons, why) in SHARE_PYTHONS.items()
                      if python not in pythons]


def pytest_report_header(config):
    """The Python of this run, and the tests that are left out on it."""
    lines = [f"python: CPython {platform.python_version()} ({sys.executable})"]
    lines += [f"left out on Python {this_python()}: the tests {why}" for why in _bound_here()]
    return lines


def pytest_terminal_summary(terminalreporter, config):
    """How many tests this Python left out, and why (the header's lines, counted)."""
    for why, count in config.stash.get(LEFT_OUT, {}).items():
        terminalreporter.write_line(
            f"left out on CPython {platform.python_version()}: {count} "
            f"test{'s' * (count != 1)}, {why}")
