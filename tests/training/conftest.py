"""Fixtures of the training tests."""

from __future__ import annotations

import pytest

from keras_bert import BertConfig, BertEncoder
from keras_bert.checkpoints.model_dir import save_model_dir
from keras_bert.data.corpus import default_corpus_files
from tests.training.test_finetune import SPECIAL, WORDS


@pytest.fixture(scope="module")
def model_dir(tmp_path_factory) -> str:
    """A tiny randomly initialised BERT over the test vocabulary, as a model directory."""
    return write_tiny_model_dir(tmp_path_factory.mktemp("tiny_bert"))


def write_tiny_model_dir(root) -> str:
    """A tiny BERT (random weights from Keras' global generator) over the test vocabulary
    as `root/model`; returns its path."""
    vocab = root / "vocab.txt"
    vocab.write_text("".join(f"{t}\n" for t in SPECIAL + WORDS), encoding="utf-8")
    config = BertConfig(vocab_size=len(SPECIAL) + len(WORDS), hidden_size=32, num_layers=2,
                        num_heads=4, intermediate_size=64, max_position_embeddings=64)
    save_model_dir(BertEncoder(config), str(root / "model"), str(vocab), lower_case=True)
    return str(root / "model")


def moby_chapters(directory, count: int) -> str:
    """Writes the first `count` chapters of the embedded Moby Dick (documents split by two
    blank lines) to `directory/moby.txt`; returns its path."""
    text = open(default_corpus_files()[0], encoding="utf-8").read()
    path = directory / "moby.txt"
    path.write_text("\n\n\n".join(text.split("\n\n\n")[:count]))
    return str(path)


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    """The first 12 chapters of the embedded Moby Dick."""
    return moby_chapters(tmp_path_factory.mktemp("corpus"), 12)
