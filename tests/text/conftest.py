"""The fixtures both of the tokenizer's test files use (`test_tokenizer.py`,
`test_tokenizer_api.py`): Google's uncased vocabulary and its tokenizer and reference under
Google's rules, built once per module."""

from __future__ import annotations

import pytest

from keras_bert.text.tokenizer import load_vocab
from tests.support.tokenizer_parity import _pair, uncased_vocab_path


@pytest.fixture(scope="module")
def uncased_vocab() -> list[str]:
    return load_vocab(uncased_vocab_path())


@pytest.fixture(scope="module")
def uncased(uncased_vocab):
    return _pair(uncased_vocab, True, "google")
