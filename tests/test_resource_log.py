"""The durations log's CPU and thread columns (`tests/support/resource_log.py`,
`scripts/test_durations.py`) on a suite whose answers are known: a test that spins, one that
sleeps, one that leaves a thread running."""

from __future__ import annotations

import os
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "scripts"))
import test_durations  # noqa: E402

SAMPLE = """
import threading, time

def test_spins():
    # Spins for 0.6 s of CPU, not of wall time: on a loaded host a wall-time spin gets a
    # share of a core only (0.04 s of CPU in 0.73 s was seen beside other work).
    end = time.process_time() + 0.6
    while time.process_time() < end:
        pass

def test_sleeps():
    time.sleep(0.6)

def test_leaves_a_thread():
    threading.Thread(target=time.sleep, args=(3,), daemon=True).start()
"""


def test_cpu_and_threads_reach_the_durations_log(pytester, monkeypatch):
    monkeypatch.setenv("PYTHONPATH", ROOT)
    pytester.makepyfile(test_sample=SAMPLE)
    xml = str(pytester.path / "junit.xml")
    result = pytester.runpytest_subprocess("-p", "tests.support.resource_log",
                                           "-p", "no:cacheprovider", f"--junitxml={xml}")
    result.assert_outcomes(passed=3)
    cases = {c["name"].split("::")[-1]: c for c in test_durations.read_cases(xml)}
    spins, sleeps = cases["test_spins"], cases["test_sleeps"]
    assert spins["seconds"] + 0.05 >= spins["cpu"] >= 0.55
    assert cases["test_sleeps"]["seconds"] >= 0.5 and cases["test_sleeps"]["cpu"] < 0.2
    assert cases["test_spins"]["threads"] == 1 and cases["test_leaves_a_thread"]["threads"] >= 2
    text = test_durations.summary(list(cases.values()), slowest=6)
    waiting = text.split("Wall time ahead of CPU")[1]
    # Sorted by wall time minus CPU time, the order the measured values give (on an idle
    # host the sleeper comes first; a loaded host can make the spinner wait longer).
    def gap(case):
        return case["seconds"] - case["cpu"] - case["child_cpu"]

    sleeper_first = gap(sleeps) > gap(spins)
    assert (waiting.index("test_sleeps") < waiting.index("test_spins")) == sleeper_first
