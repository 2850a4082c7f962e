"""In-graph sliding windows (`keras_bert.text.doc_windows`) against
`keras_bert.tasks.question_answering.squad`'s Python windows and its brute-force max-context
rule (every window scored for every token)."""

import itertools

import numpy as np
import pytest

from keras_bert.text.doc_windows import doc_windows, is_max_context
from tests.tasks.question_answering import reference_squad as squad

OFFSET = 3  # where the context starts in a packed row ([CLS] + 1 question token + [SEP])


def _check(cases, doc_stride):
    """Each `(num_tokens, max_tokens)` case's windows and max-context columns."""
    num_tokens, max_tokens = zip(*cases, strict=True)
    windows = doc_windows(list(num_tokens), list(max_tokens), doc_stride)
    width = OFFSET + max(max_tokens) + 1
    mask = is_max_context(windows, np.full(len(windows.start), OFFSET), width).numpy()
    example = windows.example.numpy()
    for i, (n, m) in enumerate(cases):
        rows = np.flatnonzero(example == i)
        expected = squad.doc_windows(n, m, doc_stride)
        got = list(zip(windows.start.numpy()[rows], windows.length.numpy()[rows], strict=True))
        assert got == expected, (n, m, doc_stride)
        assert windows.index.numpy()[rows].tolist() == list(range(len(expected)))
        best = squad.max_context_windows(expected, n)
        for w, (row, (start, length)) in enumerate(zip(rows, expected, strict=True)):
            column = np.zeros(width, bool)
            column[OFFSET:OFFSET + length] = best[start:start + length] == w
            np.testing.assert_array_equal(mask[row], column, err_msg=str((n, m, doc_stride, w)))


@pytest.mark.parametrize("doc_stride", [1, 2, 3, 5, 8, 13])
def test_small_windows_match_the_python_rules(doc_stride):
    # Every context length up to 4 windows of every size up to 9, empty contexts included.
    _check(list(itertools.product(range(0, 37), range(1, 10))), doc_stride)


@pytest.mark.parametrize("doc_stride", [7, 64, 128])
def test_long_windows_match_the_python_rules(doc_stride):
    # With 100+ token windows the 0.01 * length bonus of a short last window exceeds 1: the
    # last window must be scored with its own length.
    rng = np.random.default_rng(doc_stride)
    cases = [(int(n), int(m)) for n, m in zip(rng.integers(0, 900, 12), rng.integers(100, 380, 12),
                                               strict=True)]
    _check(cases + [(381, 380), (380, 380), (0, 380)], doc_stride)


def test_windows_refuse_a_non_positive_stride():
    with pytest.raises(ValueError, match="doc_stride must be positive"):
        doc_windows([10], [4], 0)
