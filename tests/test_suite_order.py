"""The suite's order (`tests/conftest.py`): the longest files first, nothing else moved."""

from __future__ import annotations

import os

from tests.conftest import _ROOT, LONGEST_FILES, rotation_share


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


def _items(pytester, monkeypatch, path: str) -> list:
    """The items of a local collection of `path` (no rotation: every test)."""
    monkeypatch.delenv("KERAS_BERT_ROTATION", raising=False)
    items, _ = pytester.inline_genitems("-p", "no:cacheprovider", "--rootdir", _ROOT, path)
    return items


def _kept(items, rotation: int) -> set[str]:
    """The test ids `rotation_share` keeps under `KERAS_BERT_ROTATION=rotation`."""
    return {item.nodeid for item in rotation_share(items, str(rotation))[0]}


def test_rotation_keeps_each_case_once_in_every_n_runs(pytester, monkeypatch):
    """The bench smoke checks (`rotating(every=12)`): under a rotation number each run
    keeps one of them, twelve consecutive numbers keep each exactly once, and no rotation
    (a local run) keeps them all; other tests are never dropped."""
    items = _items(pytester, monkeypatch, os.path.join(_ROOT, "tests", "test_bench.py"))
    everything = {item.nodeid for item in items}
    quick = {t for t in everything if "test_quick_mode_runs_and_compares[" in t}
    assert len(quick) == 12
    assert {item.nodeid for item in rotation_share(items, None)[0]} == everything
    shares = [_kept(items, r) & quick for r in range(36, 49)]
    assert sorted(sum(map(sorted, shares[:12]), [])) == sorted(quick)  # once in 12 runs
    assert all(len(share) == 1 for share in shares) and shares[12] == shares[0]
    for r in range(36, 49):  # the rest of the file stays
        assert _kept(items, r) - quick == everything - quick


def test_real_minilm_shares_rotate_one_per_run(pytester, monkeypatch):
    """The real-MiniLM shares (`rotating(every=9)`): the README's four parts of commands
    (slots 0-3, its Python block with the second) and the examples in five shares (slots
    4-8). Nine consecutive rotation numbers keep each exactly once; the rest of each file
    stays."""
    examples = _items(pytester, monkeypatch,
                      os.path.join(_ROOT, "tests", "examples", "test_examples.py"))
    readme = _items(pytester, monkeypatch, os.path.join(_ROOT, "tests", "test_readme.py"))
    items = examples + readme
    everything = {item.nodeid for item in items}
    rotating = {item.nodeid for item in items if item.get_closest_marker("rotating")}
    parts = {t for t in rotating if "test_readme_commands_run_as_printed[" in t}
    assert len(parts) == 4 and len(rotating) == 12
    turns = range(72, 81)  # 72 % 9 == 0
    shares = [_kept(items, r) & rotating for r in turns]
    assert [len(share & parts) for share in shares] == [1, 1, 1, 1, 0, 0, 0, 0, 0]
    assert [len(share - parts) for share in shares] == [0, 1, 0, 0, 1, 1, 2, 2, 1]
    assert sorted(sum(map(sorted, shares), [])) == sorted(rotating)  # each exactly once
    for r in turns:
        assert _kept(items, r) - rotating == everything - rotating


def test_older_environments_rotate_one_per_run(pytester, monkeypatch):
    """TF Serving's older runtimes and the oldest supported versions (`rotating(every=3)`):
    each run keeps the tests of exactly one of the three environments (TF 2.12.1: its
    matrix share and `test_runtime_check`'s; the oldest-supported run; TF 2.20.0: its
    matrix share and the Kaggle wheelhouse), three consecutive numbers keep each once."""
    files = ["export/test_runtime_matrix.py", "export/test_runtime_check.py",
             "test_oldest_supported.py", "test_kaggle_wheelhouse.py"]
    items = sum((_items(pytester, monkeypatch, os.path.join(_ROOT, "tests", f))
                 for f in files), [])
    rotating = {item.nodeid for item in items if item.get_closest_marker("rotating")}
    groups = {"2.12.1": {t for t in rotating if "2.12.1" in t or "2_13_to_2_19" in t},
              "oldest": {t for t in rotating if "oldest" in t},
              "2.20.0": {t for t in rotating if "2.20.0" in t or "wheelhouse" in t}}
    assert all(groups.values()) and set().union(*groups.values()) == rotating
    assert sum(map(len, groups.values())) == len(rotating)
    for turn, name in zip(range(30, 33), ["2.12.1", "oldest", "2.20.0"], strict=True):
        assert _kept(items, turn) & rotating == groups[name], turn
