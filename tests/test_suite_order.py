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
