"""The suite's order (`tests/conftest.py`): the longest files first, nothing else moved;
CI's rotation of shares and Pythons (`tests/support/rotation.py`); the tests left out on a Python
(`tests/support/ci_rules.py`)."""

from __future__ import annotations

import ast
import configparser
import glob
import importlib
import os
import re
import subprocess
import sys

import pytest

from tests.conftest import _ROOT, LONGEST_FILES
from tests.support.ci_rules import TORCH_PYTHONS, python_bound
from tests.support.rotation import (
    CYCLE,
    DEVELOPMENT_PYTHON,
    LANDING_BUDGET_S,
    PYTHON_SLOTS,
    SHARE_PYTHONS,
    SHARES,
    landing_load,
    landing_python,
    rotation_share,
)


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
    collection (pytester forgets the modules a collection imported: request
    `rotating_modules` before `pytester` where the files import TF Text or Keras classes)."""
    monkeypatch.delenv("KERAS_BERT_ROTATION", raising=False)
    items, _ = pytester.inline_genitems("-p", "no:cacheprovider", "--rootdir", _ROOT, *paths)
    return items


def _kept(items, rotation: int) -> set[str]:
    """The test ids `rotation_share` keeps under `KERAS_BERT_ROTATION=rotation`."""
    return {item.nodeid for item in rotation_share(items, str(rotation))[0]}


# The files that hold `rotating` tests.
def _rotating_files() -> list[str]:
    """The test files (relative to tests/) that mark a test `rotating`, found by their text
    (collecting every file would import the whole suite)."""
    found = []
    for path in sorted(glob.glob(os.path.join(_ROOT, "tests", "**", "test_*.py"),
                                 recursive=True)):
        with open(path, encoding="utf-8") as f:
            text = f.read()
        if re.search(r"\bshare\(|mark\.rotating\(", text):
            found.append(os.path.relpath(path, os.path.join(_ROOT, "tests")))
    return found


ROTATING_FILES = _rotating_files()


@pytest.fixture(scope="module")
def rotating_modules():
    """Imports the rotating files before `pytester` snapshots the imported modules: it
    forgets, after the test, the modules a collection imported first, and importing TF Text
    (or a module of Keras classes) a second time in one process fails, in this test or a
    later one in the same worker."""
    for name in ROTATING_FILES:
        importlib.import_module("tests." + name[:-3].replace(os.sep, "."))


def test_every_landing_carries_its_shares_and_stays_under_budget(rotating_modules, pytester,
                                                                  monkeypatch):
    """Each share (`tests/support/rotation.py: SHARES`) is the `rotating` mark of at least one test
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
        # The landing's Python runs every rotating test the landing keeps (needs_torch and
        # SHARE_PYTHONS leave none of them out there), so no share loses its turn.
        python = landing_python(turn)
        lost = {i.nodeid for i in items if i.nodeid in kept and python_bound(i, python)}
        assert not lost & (rotating | small), (turn, python, sorted(lost & (rotating | small)))
    assert runs == {name: CYCLE // s.every for name, s in SHARES.items()}
    # and the check has teeth: the torch shares would be lost on a Python without torch
    torch_shares = {i.nodeid for i in items if i.get_closest_marker("needs_torch")} & rotating
    assert torch_shares and all(python_bound(i, "3.99") for i in items
                                if i.nodeid in torch_shares)


def test_at_most_one_older_environment_per_landing():
    """A landing builds at most one of the environments (TF 2.12.1, the oldest supported
    versions, TF 2.20.0, Model Garden's tf-models-official 2.20.0), with the other shares that need it; TF 2.12.1 (the TF
    Text of TF Serving 2.13-2.19) in every third."""
    for turn in range(CYCLE):
        envs = [n for n in landing_load(turn)[1] if n.startswith("env:")]
        assert len(envs) <= 1, (turn, envs)
        assert ("env:tf-2.12.1" in envs) == (turn % 3 == 0), turn


def test_the_budget_check_fails_on_a_heavy_landing(monkeypatch):
    """Negative control: two heavy shares moved into one slot break the budget."""
    import tests.support.rotation as rotation

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
from tests.support.rotation import pick_exhaustive

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


def _supported_pythons() -> set[str]:
    """The `3.X` of setup.cfg's classifiers."""
    config = configparser.ConfigParser()
    config.read(os.path.join(_ROOT, "setup.cfg"))
    return set(re.findall(r"Programming Language :: Python :: (3\.\d+)\b",
                          config["metadata"]["classifiers"]))


def test_ci_rotates_every_supported_python():
    """CI runs each Python of setup.cfg's classifiers (and python_requires) once per cycle at
    least, the development Python in the other landings; `.ci/run` asks `tests/support/rotation.py`
    which, as a script."""
    config = configparser.ConfigParser()
    config.read(os.path.join(_ROOT, "setup.cfg"))
    supported = _supported_pythons()
    assert supported == {DEVELOPMENT_PYTHON, *PYTHON_SLOTS}
    assert len(set(PYTHON_SLOTS.values())) == len(PYTHON_SLOTS)
    assert {landing_python(turn) for turn in range(CYCLE)} == supported
    requires = config["options"]["python_requires"]
    low, high = re.fullmatch(r">=(3\.\d+),<(3\.\d+)", requires).groups()
    minors = range(int(low.split(".")[1]), int(high.split(".")[1]))
    assert supported == {f"3.{m}" for m in minors}, requires
    for turn in range(CYCLE):
        done = subprocess.run([sys.executable, os.path.join(_ROOT, "tests", "support", "rotation.py"),
                               "python", str(turn)], capture_output=True, text=True, check=True)
        assert done.stdout.strip() == landing_python(turn)


def test_install_script_installs_torch_where_the_tests_expect_it():
    """scripts/install.sh's TORCH_PYTHONS is tests/support/ci_rules.py's: the tests marked
    `needs_torch` are left out exactly where no torch is installed; and the older
    environments' Pythons are the development one (SHARE_PYTHONS)."""
    with open(os.path.join(_ROOT, "scripts", "install.sh"), encoding="utf-8") as f:
        [line] = [x for x in f if x.startswith("TORCH_PYTHONS=")]
    assert tuple(line.split("=", 1)[1].strip().strip('"').split()) == TORCH_PYTHONS
    assert DEVELOPMENT_PYTHON in TORCH_PYTHONS
    assert all(DEVELOPMENT_PYTHON in pythons for pythons, _ in SHARE_PYTHONS.values())
    assert set(SHARE_PYTHONS) <= set(SHARES)


TORCH_MODULES = {"torch", "transformers", "onnx", "onnxruntime", "onnxscript"}


def unmarked_torch_tests(source: str) -> list[str]:
    """The `test_*` functions of a test module's `source` that require a module of
    `TORCH_MODULES` (`require(...)` / `pytest.importorskip(...)`, in the test or in a fixture
    or helper of the module it names) without a `needs_torch` mark (on the function, in its
    `parametrize` values, or the module's `pytestmark`)."""
    tree = ast.parse(source)
    functions = {n.name: n for n in tree.body if isinstance(n, ast.FunctionDef)}

    def requires(node) -> bool:
        return any(isinstance(n, ast.Call) and n.args and isinstance(n.args[0], ast.Constant)
                   and getattr(n.func, "id", getattr(n.func, "attr", None))
                   in ("require", "importorskip") and n.args[0].value in TORCH_MODULES
                   for n in ast.walk(node))

    def reaches(func, seen) -> bool:
        names = {a.arg for a in func.args.args} | {
            n.id for n in ast.walk(func) if isinstance(n, ast.Name)}
        others = [functions[n] for n in names if n in functions and n not in seen]
        seen |= {f.name for f in others}
        return requires(func) or any(reaches(f, seen) for f in others)

    module_marked = any(isinstance(n, ast.Assign) and "needs_torch" in ast.unparse(n)
                        and any(getattr(t, "id", "") == "pytestmark" for t in n.targets)
                        for n in tree.body)
    return [name for name, func in functions.items() if name.startswith("test_")
            and reaches(func, {name}) and not module_marked
            and not any("needs_torch" in ast.unparse(d) for d in func.decorator_list)]


def test_every_test_that_needs_torch_is_marked():
    """So that a Python without torch leaves them out, and says so, instead of skipping."""
    unmarked = {}
    for path in glob.glob(os.path.join(_ROOT, "tests", "**", "test_*.py"), recursive=True):
        with open(path, encoding="utf-8") as f:
            found = unmarked_torch_tests(f.read())
        if found:
            unmarked[os.path.relpath(path, _ROOT)] = found
    assert not unmarked, unmarked
    # negative control: a fixture's requirement reaches its test; marks release them
    sample = (
        "import pytest\nfrom tests.support.reference import require\n"
        "@pytest.fixture\ndef hf():\n    return require('transformers')\n"
        "def test_direct():\n    require('torch')\n"
        "def test_through_fixture(hf):\n    pass\n"
        "def test_through_helper():\n    _helper()\n"
        "def _helper():\n    pytest.importorskip('onnxruntime')\n"
        "@pytest.mark.needs_torch\ndef test_marked(hf):\n    pass\n"
        "def test_other():\n    require('tokenizers')\n")
    assert unmarked_torch_tests(sample) == ["test_direct", "test_through_fixture",
                                            "test_through_helper"]
    assert unmarked_torch_tests("import pytest\npytestmark = pytest.mark.needs_torch\n"
                                + sample.split("\n", 1)[1]) == []


LEFT_OUT_SAMPLE = """
import pytest

def test_plain():
    pass

@pytest.mark.needs_torch
@pytest.mark.parametrize("case", [1, 2])
def test_torch(case):
    pytest.importorskip("torch")
"""
LEFT_OUT_CONFTEST = """
import pytest
import tests.support.ci_rules as ci_rules

ci_rules.TORCH_PYTHONS = tuple(__import__("os").environ["TORCH_PYTHONS"].split())

def pytest_collection_modifyitems(config, items):
    ci_rules.leave_out_for_python(config, items)
"""


@pytest.mark.slow  # 17-30 s: CI runs it every landing (keeps the README's tier under 15 min)
def test_a_python_without_torch_leaves_its_tests_out_and_says_so(pytester, monkeypatch):
    """Where scripts/install.sh installs no torch, the tests marked `needs_torch` are
    deselected, not skipped (CI=true passes), and the report names the Python and why, in
    its header and, counted, in its summary, with two xdist workers too; where it does, they
    run (here: skip for want of torch, which fails under CI)."""
    monkeypatch.setenv("PYTHONPATH", _ROOT)
    monkeypatch.setenv("CI", "true")
    pytester.makepyfile(test_sample=LEFT_OUT_SAMPLE)
    pytester.makeconftest(LEFT_OUT_CONFTEST)
    pytester.makeini("[pytest]\nmarkers =\n    needs_torch\n")
    python = f"{sys.version_info.major}.{sys.version_info.minor}"
    monkeypatch.setenv("TORCH_PYTHONS", "3.99")
    for workers in ([], ["-n", "2"]):
        result = pytester.runpytest_subprocess("-p", "tests.support.ci_rules", "-p",
                                               "no:cacheprovider", *workers)
        assert result.ret == 0, result.stdout.str()
        result.stdout.fnmatch_lines([
            f"left out on Python {python}: the tests marked needs_torch: scripts/install.sh "
            f"installs torch 2.13.0 (CPU) on Python 3.99 only*",
            f"left out on CPython {sys.version.split()[0]}: 2 tests, marked needs_torch*"])
        assert "1 passed" in result.stdout.str()
    monkeypatch.setenv("TORCH_PYTHONS", python)
    result = pytester.runpytest_subprocess("-p", "tests.support.ci_rules", "-p", "no:cacheprovider")
    assert "marked needs_torch" not in result.stdout.str()
    assert result.ret == (0 if _has_torch() else 1), result.stdout.str()


def _has_torch() -> bool:
    import importlib.util

    return importlib.util.find_spec("torch") is not None
