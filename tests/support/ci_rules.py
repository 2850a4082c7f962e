"""The suite's one rule for skips: under CI (`CI=true`) no test may skip.

A skipped test proves nothing, and a skip that hides a missing reference, package or file
would let a proof stop running while CI stays green. Locally a test may skip (a developer
without the references installed); under CI the hook below turns every skip, however it was
raised (`pytest.skip`, `importorskip`, a `skipif` mark), into a failure that names the reason.
Expected failures (`xfail`) are not skips and are left alone.

The one exception is explicit and printed, never a skip: tests that cannot run on this Python
(`python_bound`: those marked `needs_torch`, where `scripts/install.sh` installs no torch,
`needs_jax`, where no JAX release installs, and those of an older environment,
`slow(env=...)`, without wheels there: `ENV_PYTHONS`) are deselected at collection, the
report's header says which and why, and its summary counts them. On the development Python
nothing is left out, so there a missing torch still skips locally and fails under CI. The
summary also names CI's landing (`tests/support/schedule.py`).
"""

from __future__ import annotations

import os
import platform
import sys

import pytest

from tests.support.schedule import environment

# The Pythons on which `scripts/install.sh` installs torch 2.13.0 and the peers that run on it
# (transformers, ONNX Runtime): its TORCH_PYTHONS, which tests/test_ci_rules.py holds equal.
TORCH_PYTHONS = ("3.11",)
# The Pythons with JAX (setup.cfg's extra `jax`: jax 0.7 and later need Python 3.11).
JAX_PYTHONS = ("3.11", "3.12", "3.13")

# The older environments a test builds (`slow(env=NAME)`), and the Pythons their pinned sets
# have wheels for (PyPI, checked on 2026-11-27): elsewhere their tests are left out.
ENV_PYTHONS: dict[str, tuple[tuple[str, ...], str]] = {
    "tf-2.12.1": (("3.11",), "TF 2.12.1, TF Text 2.12.1 and NumPy 1.24.3 have no wheels past "
                             "Python 3.11, the runtime's pinned Markdown 3.11.3 none before it "
                             "(tests/export/runtimes/tensorflow-2.12.1.txt)"),
    "tf-2.20.0": (("3.11",), "the Kaggle wheelhouse is built for the image's CPython 3.11; the "
                             "TF 2.20.0 runtime's pins start at Python 3.11 (Keras 3.15.1, "
                             "NumPy 2.4.6) and TF Text 2.20.0 has no wheel for 3.13"),
    "tf-models-2.20.0": (("3.11",), "tests/checkpoints/tf-models-official-2.20.0.txt is the set "
                                    "uv resolved on Python 3.11 (NumPy 2.4.6 starts at 3.11); "
                                    "it is not resolved for the others"),
    "oldest": (("3.11",), "constraints-oldest.txt: TF Text 2.16.1 and Matplotlib 3.7.0 have no "
                          "wheels past Python 3.11, the pinned Hypothesis none before it"),
}
LEFT_OUT = pytest.StashKey[dict]()
LANDING = pytest.StashKey[str]()


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


def env_reason(env: str, python: str) -> str | None:
    """Why the tests of the older environment `env` do not run on `python`, or None."""
    if env not in ENV_PYTHONS:
        raise ValueError(f"slow(env={env!r}): no such environment; tests/support/ci_rules.py: "
                         f"ENV_PYTHONS has {', '.join(ENV_PYTHONS)}")
    pythons, why = ENV_PYTHONS[env]
    if python in pythons:
        return None
    return f"of the environment {env}, run on Python {', '.join(pythons)} only: {why}"


def python_bound(item, python: str | None = None) -> str | None:
    """Why `item` cannot run on `python` (`3.X`, default this one), or None: it is marked
    `needs_torch` or `needs_jax` there, or it builds an older environment (`slow(env=...)`)
    that has no wheels there (`ENV_PYTHONS`)."""
    python = python or this_python()
    if item.get_closest_marker("needs_torch") is not None and torch_reason(python):
        return torch_reason(python)
    if item.get_closest_marker("needs_jax") is not None and jax_reason(python):
        return jax_reason(python)
    env = environment(item)
    return env_reason(env, python) if env else None


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


def report(config, line: str) -> None:
    """Prints `line` about CI's landing (`tests/support/schedule.py`) in the summary; an
    xdist worker hands it to the controller."""
    config.stash[LANDING] = line
    if hasattr(config, "workeroutput"):
        config.workeroutput["keras_bert_landing"] = line


@pytest.hookimpl(optionalhook=True)
def pytest_testnodedown(node, error):
    """Each xdist worker collected the same tests: any one's counts will do."""
    output = getattr(node, "workeroutput", {})
    if output.get("keras_bert_left_out"):
        node.config.stash[LEFT_OUT] = output["keras_bert_left_out"]
    if output.get("keras_bert_landing"):
        node.config.stash[LANDING] = output["keras_bert_landing"]


def _bound_here() -> list[str]:
    python = this_python()
    reasons = [why for why in (torch_reason(python), jax_reason(python)) if why]
    return reasons + [env_reason(env, python) for env in ENV_PYTHONS if env_reason(env, python)]


def pytest_report_header(config):
    """The Python of this run, and the tests that are left out on it."""
    lines = [f"python: CPython {platform.python_version()} ({sys.executable})"]
    lines += [f"left out on Python {this_python()}: the tests {why}" for why in _bound_here()]
    return lines


def pytest_terminal_summary(terminalreporter, config):
    """CI's landing, and how many tests this Python left out, and why (the header's lines,
    counted)."""
    if config.stash.get(LANDING, None):
        terminalreporter.write_line(config.stash[LANDING])
    for why, count in config.stash.get(LEFT_OUT, {}).items():
        terminalreporter.write_line(
            f"left out on CPython {platform.python_version()}: {count} "
            f"test{'s' * (count != 1)}, {why}")
