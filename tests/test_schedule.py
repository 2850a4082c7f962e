"""CI's schedule (`tests/support/schedule.py`): each slow test once in a cycle of landings,
spread by its recorded seconds, with no table to edit; the exhaustive pick; the durations
table that CI's JUnit log regenerates."""

from __future__ import annotations

import configparser
import json
import os
import re
import subprocess
import sys

from tests.support import ci_rules
from tests.support.schedule import (
    CYCLE,
    DEFAULT_SLOW_S,
    DEVELOPMENT_PYTHON,
    LANDING_BUDGET_S,
    PYTHON_SLOTS,
    TORCH_UNIT,
    landing_python,
    longest_files_first,
    plan_rows,
    work_unit,
)

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "scripts"))
import test_durations  # noqa: E402  (scripts/test_durations.py)

MARKERS = "[pytest]\nmarkers =\n    slow\n    exhaustive\n    ci_pick\n    needs_torch\n"
# A suite with the shapes CI meets: a file whose slow tests go together, one whose slow tests
# sum past UNIT_MAX_S (each alone), two older environments over two files, a test that needs
# torch, an exhaustive sweep and tests of the README's tier. Ten long units fill landings 0-9,
# so that the environments and the torch test meet the rules where the load alone would put
# them together (landing 10) or on Python 3.13 (landing 11).
EXAMPLE_SECONDS = {"squad": 280.0, "ner": 270.0, "multilabel": 260.0, "regressor": 250.0,
                   "distill": 240.0, "tagger": 230.0, "embed": 210.0, "serve": 205.0,
                   "pretrain": 200.0}
SAMPLE = {
    "test_fixtures": """
import pytest
pytestmark = pytest.mark.slow
def test_first(): pass
def test_second(): pass
""",
    "test_examples": f"""
import pytest
EXAMPLES = {list(EXAMPLE_SECONDS)!r}
@pytest.mark.slow
@pytest.mark.parametrize("name", EXAMPLES)
def test_example(name): pass
def test_quick(): pass
""",
    "test_envs": """
import pytest
@pytest.mark.slow(env="tf-2.12.1")
def test_old_runtime(): pass
@pytest.mark.slow(env="oldest")
def test_oldest(): pass
@pytest.mark.slow
@pytest.mark.needs_torch
def test_parity(): pass
@pytest.mark.exhaustive
@pytest.mark.slow
def test_sweep(): pass
""",
    "test_matrix": """
import pytest
@pytest.mark.parametrize("runtime", [
    pytest.param("2.12.1", marks=pytest.mark.slow(env="tf-2.12.1")), "this"])
def test_runtime(runtime): pass
""",
}
RECORDED = {"test_fixtures.py::test_first": 200.0, "test_fixtures.py::test_second": 20.0,
            **{f"test_examples.py::test_example[{n}]": s for n, s in EXAMPLE_SECONDS.items()},
            "test_envs.py::test_old_runtime": 25.0, "test_matrix.py::test_runtime[2.12.1]": 15.0,
            "test_envs.py::test_oldest": 30.0, "test_envs.py::test_parity": 20.0,
            "test_examples.py::test_quick": 3.0}


def _collect(pytester, *args: str) -> list[str]:
    """The output lines of a collection of the sample (no:hypothesispytest: its summary
    imports Hypothesis afresh in each in-process run, as pytester forgets the modules a run
    imported: ~1 min in all)."""
    return pytester.runpytest_inprocess("--collect-only", "-q", "-p", "no:cacheprovider",
                                        "-p", "no:hypothesispytest", *args).outlines


def _landings(pytester, monkeypatch) -> tuple[dict[int, list[str]], dict[int, str]]:
    """For each landing of a cycle: the test ids CI's selection collects (in order) and the
    report's landing line."""
    selected, lines = {}, {}
    for turn in range(240, 240 + CYCLE):  # 240 % CYCLE == 0
        monkeypatch.setenv("KERAS_BERT_ROTATION", str(turn))
        outlines = _collect(pytester, "-m", "not exhaustive or ci_pick")
        selected[turn % CYCLE] = [line for line in outlines if "::" in line]
        [lines[turn % CYCLE]] = [line for line in outlines if line.startswith("CI landing")]
    return selected, lines


EVERY_LANDING = {"test_examples.py::test_quick", "test_matrix.py::test_runtime[this]",
                 "test_envs.py::test_sweep"}  # the README's tier; the only exhaustive test


def _slow_ids(landing: list[str]) -> set[str]:
    return set(landing) - EVERY_LANDING


def test_adding_a_slow_test_needs_no_table_edit(pytester, monkeypatch):
    """Over a cycle, CI's selection (tests/conftest.py's hook, as it is) runs every slow test
    once and the README's tier every landing, builds at most one older environment a landing,
    keeps the test that needs torch off the other Pythons' landings, and starts the longest
    files first. A new slow test, absent from tests/durations.json, then runs once too,
    counted DEFAULT_SLOW_S, and the table is left as it was."""
    monkeypatch.setenv("PYTHONPATH", ROOT)
    with open(os.path.join(ROOT, "tests", "conftest.py"), encoding="utf-8") as f:
        pytester.makeconftest(f.read())
    pytester.makeini(MARKERS)
    pytester.makepyfile(**SAMPLE)
    table = pytester.path / "tests" / "durations.json"
    table.parent.mkdir()
    table.write_text(json.dumps(RECORDED))
    # Every slow test, as a developer's run collects them: CI's own landing number (exported
    # by .ci/run) would otherwise select this landing's share of the sample.
    monkeypatch.delenv("KERAS_BERT_ROTATION", raising=False)
    # Collected as the development Python collects it: CI rotates the Python this test runs
    # on, and another Python leaves out the sample's torch and older-environment tests.
    monkeypatch.setattr(ci_rules, "this_python", lambda: DEVELOPMENT_PYTHON)
    everything = {line for line in _collect(pytester, "-m", "slow and not exhaustive")
                  if "::" in line}
    assert len(everything) == 15

    selected, lines = _landings(pytester, monkeypatch)
    runs = [t for landing in selected.values() for t in _slow_ids(landing)]
    assert sorted(runs) == sorted(everything)  # each slow test once per cycle
    for turn, landing in selected.items():
        assert EVERY_LANDING <= set(landing), turn
        envs = {t for t in landing if "old" in t or "2.12.1" in t}
        assert envs <= {"test_envs.py::test_old_runtime", "test_matrix.py::test_runtime[2.12.1]"} \
            or envs == {"test_envs.py::test_oldest"}, (turn, envs)
        if landing_python(turn) != DEVELOPMENT_PYTHON:
            assert "test_envs.py::test_parity" not in landing and not envs, turn
        seconds = float(re.search(r": \d+ slow tests, (\d+) s by", lines[turn]).group(1))
        assert seconds == sum(RECORDED.get(t, DEFAULT_SLOW_S) for t in _slow_ids(landing))
        assert seconds <= LANDING_BUDGET_S
        files = [t.split("::")[0] for t in landing]
        per_file = {f: sum(RECORDED.get(t, 0.0) for t in landing if t.startswith(f + "::"))
                    for f in files}
        assert [per_file[f] for f in files] == sorted((per_file[f] for f in files), reverse=True)
    # the examples' file sums past UNIT_MAX_S: its tests spread one by one
    assert len({turn for turn, landing in selected.items()
                if any("test_example[" in t for t in landing)}) == 9

    before = table.read_text()
    pytester.makepyfile(test_new="import pytest\n@pytest.mark.slow\ndef test_new(): pass\n")
    selected, lines = _landings(pytester, monkeypatch)
    runs = [t for landing in selected.values() for t in _slow_ids(landing)]
    assert sorted(runs) == sorted(everything | {"test_new.py::test_new"})
    [turn] = [turn for turn, landing in selected.items() if "test_new.py::test_new" in landing]
    assert f"({1} not recorded, counted {DEFAULT_SLOW_S:.0f} s each)" in lines[turn]
    assert table.read_text() == before


def test_the_suites_cycle_runs_every_slow_test_once_within_budget(monkeypatch):
    """The plan of this suite (`schedule.py plan`, as CI computes it): every landing's slow
    tests under LANDING_BUDGET_S, at most one older environment a landing and only on the
    development Python's landings, no test twice; the tests that need torch too. Collected
    in this process (`plan_rows`, what `schedule.py plan` prints): an xdist worker has
    imported every test module for its own collection, which a fresh process did again
    (12.5 s on a 2-core Zen 4)."""
    monkeypatch.chdir(ROOT)  # pytest's testpaths apply from the root
    landings = plan_rows()
    assert [row["landing"] for row in landings] == list(range(CYCLE))
    ids = [t for row in landings for tests in row["units"].values() for t in tests]
    assert len(ids) == len(set(ids)) > 100
    for row in landings:
        assert row["seconds"] <= LANDING_BUDGET_S, row
        envs = [name for name in row["units"] if name.startswith("env:")]
        assert len(envs) <= 1, row
        assert not row["left_out"], row  # needs torch, or an environment, elsewhere
        assert not envs or row["python"] == DEVELOPMENT_PYTHON, row


EXHAUSTIVE_SAMPLE = """
import pytest

class TestKinds:
    def test_always(self):
        pass

@pytest.mark.exhaustive
@pytest.mark.parametrize("shard", range(3))
def test_sweep(shard):
    pass
"""
PICKING_CONFTEST = """
import os, pytest
from tests.support.schedule import pick_exhaustive

@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(config, items):
    pick_exhaustive(items, os.environ.get("KERAS_BERT_ROTATION"))
"""


def _run(pytester, *args: str):
    """A run of the sample in this process, as `_collect` runs its collections (a fresh
    interpreter per run cost ~1.4 s each on a 2-core Zen 4)."""
    return pytester.runpytest_inprocess("-p", "no:cacheprovider", "-p", "no:hypothesispytest",
                                        *args)


def test_ci_runs_one_exhaustive_test_and_its_log_feeds_the_table(pytester, monkeypatch):
    """`.ci/run`'s selection (`-m "not exhaustive or ci_pick"`) keeps the README's tier and
    the exhaustive test at the commit count modulo their number, the durations log names
    it, and `--record` writes each passed test's seconds under its pytest id; without a
    landing number no exhaustive test runs."""
    monkeypatch.setenv("PYTHONPATH", ROOT)
    pytester.makepyfile(test_sample=EXHAUSTIVE_SAMPLE)
    pytester.makeconftest(PICKING_CONFTEST)
    pytester.makeini("[pytest]\nmarkers =\n    exhaustive\n    ci_pick\n")
    table = str(pytester.path / "durations.json")
    with open(table, "w", encoding="utf-8") as f:
        json.dump({"test_other.py::test_kept": 12.5}, f)
    for rotation, shard in ((36, 0), (37, 1), (41, 2)):
        monkeypatch.setenv("KERAS_BERT_ROTATION", str(rotation))
        xml = str(pytester.path / f"junit-{rotation}.xml")
        result = _run(pytester, f"--junitxml={xml}", "-m", "not exhaustive or ci_pick", "-v")
        result.assert_outcomes(passed=2)
        result.stdout.fnmatch_lines([f"*test_sweep[[]{shard}[]] PASSED*"])
        cases = test_durations.read_cases(xml)
        assert (f"Exhaustive pick (exhaustive {shard + 1} of 3): "
                f"`test_sample::test_sweep[{shard}]`" in test_durations.summary(cases))
        assert test_durations.record(cases, table) == (2, 1 + (rotation == 36))
    with open(table, encoding="utf-8") as f:
        assert sorted(json.load(f)) == [
            "test_other.py::test_kept", "test_sample.py::TestKinds::test_always",
            "test_sample.py::test_sweep[0]", "test_sample.py::test_sweep[1]",
            "test_sample.py::test_sweep[2]"]
    monkeypatch.delenv("KERAS_BERT_ROTATION")
    result = _run(pytester, "-m", "not exhaustive or ci_pick")
    result.assert_outcomes(passed=1, deselected=3)


def test_ci_rotates_every_supported_python():
    """CI runs each Python of setup.cfg's classifiers and python_requires once per cycle, the
    development Python in the other landings; `.ci/run` asks schedule.py which, as a
    script, before any install."""
    config = configparser.ConfigParser()
    config.read(os.path.join(ROOT, "setup.cfg"))
    supported = set(re.findall(r"Programming Language :: Python :: (3\.\d+)\b",
                               config["metadata"]["classifiers"]))
    assert supported == {DEVELOPMENT_PYTHON, *PYTHON_SLOTS}
    assert {landing_python(turn) for turn in range(CYCLE)} == supported
    low, high = re.fullmatch(r">=3\.(\d+),<3\.(\d+)", config["options"]["python_requires"]).groups()
    assert supported == {f"3.{m}" for m in range(int(low), int(high))}
    for turn in (0, 4, 17):
        done = subprocess.run([sys.executable, "-S", os.path.join(ROOT, "tests", "support",
                                                                  "schedule.py"), "python",
                               str(turn)], capture_output=True, text=True, check=True)
        assert done.stdout.strip() == landing_python(turn)


class _Item:
    """What `longest_files_first` reads of a collected test."""

    def __init__(self, nodeid: str):
        self.nodeid = nodeid

    def get_closest_marker(self, name):
        return None


def test_the_files_of_needs_torch_tests_are_one_unit_of_work_started_by_its_total(tmp_path):
    (tmp_path / "tests").mkdir()
    marked = "import pytest\n@pytest.mark.needs_torch\ndef test_t(): pass\n"
    for name, text in {"a": marked, "b": marked, "c": "def test_t(): pass\n",
                       "d": "def test_t(): pass\n"}.items():
        (tmp_path / "tests" / f"test_{name}.py").write_text(text, encoding="utf-8")
    durations = {"tests/test_a.py::test_t": 5.0, "tests/test_b.py::test_t": 4.0,
                 "tests/test_c.py::test_t": 8.0, "tests/test_d.py::test_t": 1.0}
    items = [_Item(nodeid) for nodeid in ("tests/test_d.py::test_t", "tests/test_a.py::test_t",
                                          "tests/test_c.py::test_t", "tests/test_b.py::test_t")]
    longest_files_first(items, durations, str(tmp_path))
    # a and b: one unit of 9 s, before c's 8 s; their own order kept within it
    assert [i.nodeid.split("::")[0][len("tests/test_"):-3] for i in items] == [
        "a", "b", "c", "d"]
    cache: dict[str, bool] = {}
    assert work_unit("tests/test_b.py::test_t[x]", str(tmp_path), cache) == TORCH_UNIT
    assert work_unit("tests/test_c.py::test_t", str(tmp_path), cache) == "tests/test_c.py"


def test_xdist_hands_out_the_torch_unit_whole():
    """The scheduler `tests/conftest.py` gives xdist for `--dist loadfile`."""
    from types import SimpleNamespace

    from tests.conftest import pytest_xdist_make_scheduler

    config = SimpleNamespace(getoption=lambda name: {"dist": "loadfile"}[name], rootpath=ROOT,
                             getvalue=lambda name: {"tx": ["2*popen"]}[name])
    scheduler = pytest_xdist_make_scheduler(config, None)
    assert scheduler._split_scope("tests/test_activation_names.py::test_x[gelu]") == TORCH_UNIT
    assert scheduler._split_scope("tests/test_config.py::test_x") == "tests/test_config.py"
    config.getoption = lambda name: "load"
    assert pytest_xdist_make_scheduler(config, None) is None
