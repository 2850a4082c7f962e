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
    assert len(quick) == 11
    runs = [_collected(pytester, monkeypatch, bench, r) for r in (30, 31, 32, 33)]
    shares = [[t for t in run if t in quick] for run in runs]
    assert sorted(sum(shares[:3], [])) == sorted(quick)  # each once in 3 consecutive runs
    assert all(3 <= len(share) <= 4 for share in shares) and shares[3] == shares[0]
    for run in runs:  # the rest of the file stays
        assert [t for t in run if t not in quick] == [t for t in everything if t not in quick]


def test_examples_alternate_by_slot(pytester, monkeypatch):
    """The real-MiniLM example runs (`rotating(every=2, slot=...)`): two consecutive
    rotation numbers collect each exactly once, and both halves hold some."""
    examples = os.path.join(_ROOT, "tests", "examples", "test_examples.py")
    everything = set(_collected(pytester, monkeypatch, examples, None))
    even = set(_collected(pytester, monkeypatch, examples, 40))
    odd = set(_collected(pytester, monkeypatch, examples, 41))
    assert even | odd == everything
    rotating = everything - (even & odd)
    assert len(rotating) == 5 and rotating & even and rotating & odd
    assert not (rotating & even & odd)
