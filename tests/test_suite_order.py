"""The suite's order (`tests/conftest.py`): the longest files first, nothing else moved."""

from __future__ import annotations

import os

from tests.conftest import _ROOT, LONGEST_FILES


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


def _collected(pytester, monkeypatch, path: str, rotation: int | None) -> list[str]:
    """The test ids a collection of `path` keeps under `KERAS_BERT_ROTATION=rotation`
    (none: a local run)."""
    if rotation is None:
        monkeypatch.delenv("KERAS_BERT_ROTATION", raising=False)
    else:
        monkeypatch.setenv("KERAS_BERT_ROTATION", str(rotation))
    result = pytester.runpytest_inprocess(
        "--collect-only", "-q", "-p", "no:cacheprovider", "--rootdir", _ROOT, path)
    return [line for line in result.outlines if "::" in line]


def test_rotation_keeps_each_case_once_in_every_n_runs(pytester, monkeypatch):
    """The bench smoke checks (`rotating(every=3)`): under a rotation number each run
    collects a third of them, three consecutive numbers collect each exactly once, and no
    rotation (a local run) collects them all; other tests are never dropped."""
    bench = os.path.join(_ROOT, "tests", "test_bench.py")
    everything = _collected(pytester, monkeypatch, bench, None)
    quick = [t for t in everything if "test_quick_mode_runs_and_compares[" in t]
    assert len(quick) == 12
    runs = [_collected(pytester, monkeypatch, bench, r) for r in (30, 31, 32, 33)]
    shares = [[t for t in run if t in quick] for run in runs]
    assert sorted(sum(shares[:3], [])) == sorted(quick)  # each once in 3 consecutive runs
    assert all(len(share) == 4 for share in shares) and shares[3] == shares[0]
    for run in runs:  # the rest of the file stays
        assert [t for t in run if t not in quick] == [t for t in everything if t not in quick]


def test_readme_commands_and_examples_alternate(pytester, monkeypatch):
    """The README's commands (`rotating(every=2, slot=0)`) and the real-MiniLM example runs
    (slot 1): two consecutive rotation numbers collect each exactly once, never both in one
    run; the rest of each file stays."""
    examples = os.path.join(_ROOT, "tests", "examples", "test_examples.py")
    readme = os.path.join(_ROOT, "tests", "test_readme.py")
    chain = "test_readme.py::test_readme_commands_run_as_printed"
    runs = {}
    for rotation in (40, 41):
        runs[rotation] = (set(_collected(pytester, monkeypatch, examples, rotation)),
                          set(_collected(pytester, monkeypatch, readme, rotation)))
    everything = set(_collected(pytester, monkeypatch, examples, None))
    (even_examples, even_readme), (odd_examples, odd_readme) = runs[40], runs[41]
    assert even_examples | odd_examples == everything
    rotating = everything - (even_examples & odd_examples)
    assert len(rotating) == 6 and rotating <= odd_examples and not rotating & even_examples
    assert any(chain in t for t in even_readme) and not any(chain in t for t in odd_readme)
    assert len(even_readme) == len(odd_readme) + 1 > 4
