"""The suite's order (`tests/conftest.py`): the longest files first, nothing else moved."""

from __future__ import annotations

import os
import sys

from tests.conftest import _ROOT, LONGEST_FILES
from tests.rotation import CYCLE, LANDING_BUDGET_S, SHARES, landing_load, rotation_share


def test_every_longest_file_exists_once():
    assert len(set(LONGEST_FILES)) == len(LONGEST_FILES)
    for name in LONGEST_FILES:
        assert os.path.isfile(os.path.join(_ROOT, name)), name


def test_collection_puts_them_first_and_keeps_every_file_together(pytester):
    result = pytester.runpytest_inprocess(
        "--collect-only", "-q", "-p", "no:cacheprovider", "--rootdir", _ROOT,
        os.path.join(_ROOT, "tests", "test_suite_order.py"),
        os.path.join(_ROOT, LONGEST_FILES[0]))
    files = [line.split("::")[0] for line in result.outlines if "::" in line]
    assert files[0] == LONGEST_FILES[0]
    assert files == sorted(files, key=lambda f: f != LONGEST_FILES[0])


def _items(pytester, monkeypatch, *paths: str) -> list:
    """The items of a local collection of `paths` (no rotation: every test), in one
    collection (pytester forgets the modules a collection imported; TF Text's second import
    in one process fails)."""
    monkeypatch.delenv("KERAS_BERT_ROTATION", raising=False)
    items, _ = pytester.inline_genitems("-p", "no:cacheprovider", "--rootdir", _ROOT, *paths)
    return items


def _kept(items, rotation: int) -> set[str]:
    """The test ids `rotation_share` keeps under `KERAS_BERT_ROTATION=rotation`."""
    return {item.nodeid for item in rotation_share(items, str(rotation))[0]}


# The files that hold `rotating` tests.
ROTATING_FILES = ("examples/test_examples.py", "examples/test_notebook.py", "test_readme.py",
                  "test_bench.py", "export/test_runtime_matrix.py",
                  "export/test_runtime_check.py", "test_oldest_supported.py",
                  "test_kaggle_wheelhouse.py", "training/test_finetune_resume.py",
                  "training/test_pretrain_resume.py", "training/test_accumulation.py",
                  "training/test_static_shapes.py", "task_models/test_long_documents.py")


def test_every_landing_carries_its_shares_and_stays_under_budget(pytester, monkeypatch):
    """Each share (`tests/rotation.py: SHARES`) is the `rotating` mark of at least one test
    and every mark of a period over 2 names one; under a rotation number a run keeps exactly
    the tests of that landing's shares (and every other test), a full cycle runs each share
    once per its period, and no landing's shares sum past the budget. A local run (no
    rotation) keeps everything."""
    items = _items(pytester, monkeypatch,
                   *(os.path.join(_ROOT, "tests", f) for f in ROTATING_FILES))
    everything = {item.nodeid for item in items}
    named = {}
    for item in items:
        mark = item.get_closest_marker("rotating")
        if mark is not None and mark.kwargs["every"] > 2:
            assert "share" in mark.kwargs, f"{item.nodeid}: a rotating test outside SHARES"
            named.setdefault(mark.kwargs["share"], set()).add(item.nodeid)
    assert sorted(named) == sorted(SHARES)  # no share without a test, none unnamed
    assert all(CYCLE % s.every == 0 for s in SHARES.values())
    rotating = set().union(*named.values())
    small = {i.nodeid for i in items if (m := i.get_closest_marker("rotating"))
             and m.kwargs["every"] <= 2}  # the alternations of parametrized cases
    assert {item.nodeid for item in rotation_share(items, None)[0]} == everything
    runs = dict.fromkeys(SHARES, 0)
    for turn in range(120, 120 + CYCLE):  # 120 % 12 == 0
        seconds, names = landing_load(turn)
        assert seconds <= LANDING_BUDGET_S, (turn, seconds, names)
        kept = _kept(items, turn)
        assert kept & rotating == set().union(*(named[n] for n in names)), turn
        for name in names:
            runs[name] += 1
        assert kept - rotating - small == everything - rotating - small
    assert runs == {name: CYCLE // s.every for name, s in SHARES.items()}


def test_at_most_one_older_environment_per_landing():
    """A landing builds at most one of the three older environments (TF 2.12.1, the oldest
    supported versions, TF 2.20.0), with the other shares that need it; TF 2.12.1 (the TF
    Text of TF Serving 2.13-2.19) in every third."""
    for turn in range(CYCLE):
        envs = [n for n in landing_load(turn)[1] if n.startswith("env:")]
        assert len(envs) <= 1, (turn, envs)
        assert ("env:tf-2.12.1" in envs) == (turn % 3 == 0), turn


def test_the_budget_check_fails_on_a_heavy_landing(monkeypatch):
    """Negative control: two heavy shares moved into one slot break the budget."""
    import tests.rotation as rotation

    shares = dict(SHARES)
    shares["example:multilabel"] = shares["example:multilabel"]._replace(slot=3)
    monkeypatch.setattr(rotation, "SHARES", shares)
    assert max(rotation.landing_load(t)[0] for t in range(CYCLE)) > LANDING_BUDGET_S


EXHAUSTIVE_SAMPLE = """
import pytest

def test_always():
    pass

@pytest.mark.exhaustive
@pytest.mark.parametrize("shard", range(3))
def test_sweep(shard):
    pass
"""
PICKING_CONFTEST = """
import os, pytest
from tests.rotation import pick_exhaustive

@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(config, items):
    pick_exhaustive(items, os.environ.get("KERAS_BERT_ROTATION"))
"""


def test_ci_runs_one_exhaustive_test_in_rotation_and_logs_it(pytester, monkeypatch):
    """`.ci/run`'s selection (`-m "not exhaustive or ci_pick"`) keeps the default tier and
    the exhaustive test at the commit count modulo their number, and the durations log
    names it; without a rotation number no exhaustive test runs."""
    sys.path.insert(0, os.path.join(_ROOT, "scripts"))
    import test_durations

    monkeypatch.setenv("PYTHONPATH", _ROOT)
    pytester.makepyfile(test_sample=EXHAUSTIVE_SAMPLE)
    pytester.makeconftest(PICKING_CONFTEST)
    pytester.makeini("[pytest]\nmarkers =\n    exhaustive\n    ci_pick\n")
    for rotation, shard in ((36, 0), (37, 1), (41, 2)):
        monkeypatch.setenv("KERAS_BERT_ROTATION", str(rotation))
        xml = str(pytester.path / f"junit-{rotation}.xml")
        result = pytester.runpytest_subprocess("-p", "no:cacheprovider", f"--junitxml={xml}",
                                               "-m", "not exhaustive or ci_pick", "-v")
        result.assert_outcomes(passed=2)
        result.stdout.fnmatch_lines([f"*test_sweep[[]{shard}[]] PASSED*"])
        summary = test_durations.summary(test_durations.read_cases(xml))
        assert f"Exhaustive pick (exhaustive {shard + 1} of 3): `test_sample::test_sweep[{shard}]`" \
            in summary, summary
    monkeypatch.delenv("KERAS_BERT_ROTATION")
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider",
                                           "-m", "not exhaustive or ci_pick")
    result.assert_outcomes(passed=1, deselected=3)
