"""Per test, what its process spent beside the wall time (a pytest plugin, in every run's
JUnit XML as properties; `scripts/test_durations.py` summarises them).

- `cpu_s`: CPU seconds of the test's own process (all its threads: TensorFlow's pools
  included), setup and teardown included;
- `child_cpu_s`: CPU seconds of the subprocesses it waited for;
- `threads`: the threads alive in the process after the test (a test that leaves one
  running slows every later test of its worker).

A test whose wall time runs far ahead of both waited: for a neighbour on the other core, a
child it did not wait for, or a sleep.
"""

from __future__ import annotations

import resource
import threading
import time

import pytest

_STARTS: dict[str, tuple[float, float]] = {}


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_setup(item):
    """Starts the test's clocks (before its fixtures are set up)."""
    _STARTS[item.nodeid] = (time.process_time(), _children_cpu())


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_teardown(item):
    """Records the clocks once the test's teardown ran (its report is made after this)."""
    yield
    start = _STARTS.pop(item.nodeid, None)
    if start is not None:
        item.user_properties += [
            ("cpu_s", round(time.process_time() - start[0], 2)),
            ("child_cpu_s", round(_children_cpu() - start[1], 2)),
            ("threads", threading.active_count())]
