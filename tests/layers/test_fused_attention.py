"""On Keras' JAX backend, `BertSelfAttention` hands a right-padded mask to
`jax.nn.dot_product_attention` as key lengths (XLA's implementation on a CPU, cuDNN's on a
GPU in half precision) and keeps its own attention for any other mask and for training with
attention dropout (`keras_bert.layers.fused_attention`). Here, in float32 on the CPU, in a
JAX process of its own (`tests/layers/fused_attention_job.py`): the fused path equals the
layer's own attention within 1e-5, gradients included, on rows of length 1, 3, 5, full
and 0; padded positions take no weight; and the route each mask takes is the one stated."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.needs_jax
def test_fused_attention_equals_the_layers_own_where_it_runs():
    env = dict(os.environ, KERAS_BACKEND="jax", TF_CPP_MIN_LOG_LEVEL="3")
    done = subprocess.run([sys.executable, "-m", "tests.layers.fused_attention_job"],
                          cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    result = json.loads(done.stdout.strip().splitlines()[-1])
    assert result["implementation"] == "xla"  # float32 on a CPU
    for name in ("right_padded", "not_right_padded"):
        assert result["fused_vs_own"][name] <= 1e-5, result
        assert result["gradient_vs_own"][name] <= 1e-5, result
        assert result["padding_weight"][name] == 0.0, result
    assert result["route"] == {"right_padded": "fused", "not_right_padded": "own"}
    assert result["training_with_dropout_fuses"] is False
