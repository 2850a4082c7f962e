"""The rules of `tests/support/ci_rules.py` that the suite's files must follow: every test that
needs torch says so, and a Python without torch leaves those tests out by name, never skipping
them; scripts/install.sh installs torch where those rules expect it."""

from __future__ import annotations

import ast
import glob
import os
import sys

import pytest

from tests.support.ci_rules import ENV_PYTHONS, TORCH_PYTHONS
from tests.support.schedule import DEVELOPMENT_PYTHON

_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def test_install_script_installs_torch_where_the_tests_expect_it():
    """scripts/install.sh's TORCH_PYTHONS is tests/support/ci_rules.py's: the tests marked
    `needs_torch` are left out exactly where no torch is installed; and every older
    environment runs on the development Python, which CI's cycle gives most landings."""
    with open(os.path.join(_ROOT, "scripts", "install.sh"), encoding="utf-8") as f:
        [line] = [x for x in f if x.startswith("TORCH_PYTHONS=")]
    assert tuple(line.split("=", 1)[1].strip().strip('"').split()) == TORCH_PYTHONS
    assert DEVELOPMENT_PYTHON in TORCH_PYTHONS
    assert all(DEVELOPMENT_PYTHON in pythons for pythons, _ in ENV_PYTHONS.values())


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


@pytest.mark.slow  # 17-30 s
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
