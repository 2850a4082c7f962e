"""The environment of Model Garden (`tf-models-official` 2.20.0, which pins TensorFlow 2.20
and tf-keras), for the tests that make its checkpoints and TF Hub SavedModels
(`run_model_garden.py`). Made once under `$KERAS_BERT_RUNTIMES` like the TF Serving runtimes
(`tests/export/runtimes`), pinned by `tf-models-official-2.20.0.txt` beside this file (the set
uv resolved for it, 128 pinned, 3.1 GB: 40 s to make from a warm uv cache, 2026-11-27)."""

from __future__ import annotations

import os

from tests.export.runtimes import PIP_INSTALL, environment_python

HERE = os.path.dirname(os.path.abspath(__file__))
NAME = "tf-models-official-2.20.0"
SCRIPT = os.path.join(HERE, "run_model_garden.py")


def model_garden_python() -> str:
    """The interpreter of Model Garden's environment, made on first use."""
    return environment_python(
        NAME, [*PIP_INSTALL, "-c", os.path.join(HERE, f"{NAME}.txt"),
               "tf-models-official==2.20.0"], expect_tensorflow="2.20.0")
