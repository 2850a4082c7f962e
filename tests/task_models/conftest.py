"""The tiny encoder the task-model tests start from: tests/training/conftest.py's, built from
a fixed seed (so each run starts from the same weights)."""

from __future__ import annotations

import os

import keras
import pytest

from tests.training.conftest import write_tiny_model_dir

# The learning thresholds were measured over the starting models of seeds 0-4
# (`KERAS_BERT_TINY_SEED`); a run uses seed 0.
SEED = int(os.environ.get("KERAS_BERT_TINY_SEED", "0"))


@pytest.fixture(scope="module")
def model_dir(tmp_path_factory) -> str:
    """A tiny random BERT over the test vocabulary (seed `SEED`), as a model directory."""
    keras.utils.set_random_seed(SEED)
    return write_tiny_model_dir(tmp_path_factory.mktemp("tiny_bert"))
