"""Keras' distribution API on JAX (`keras_bert.training.distribution`): every kind's `fit`
and `TextPretrainer`'s on 8 simulated CPU devices equal one device's, through our switch and
through a Keras user's own `set_distribution`; BERT's layout shards its kernels in halves
on a 4 x 2 mesh and answers as one device does; bad input ends with one line naming it.

The multi-device runs are `tests/support/distributed_fit.py` in a subprocess with
`XLA_FLAGS=--xla_force_host_platform_device_count=8 KERAS_BACKEND=jax` (JAX fixes its
devices when it starts), one device being the same process with no distribution. Measured
differences (tiny BERT, no dropout, 8 steps at 5e-3, AMD EPYC): losses 8.5e-8 relative,
weights 1.2e-7 (tolerances: 1e-5 and 1e-4, the issue's). The in-process tests (pytest's own
TensorFlow backend) check the layout map against the real variable paths and the messages.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import types
from pathlib import Path

import numpy as np
import pytest

from keras_bert.training.distribution import (
    BERT_LAYOUT,
    check_batch_size,
    check_layout,
    get_distribution,
    parse,
)

ROOT = Path(__file__).resolve().parents[2]
LOSS_RTOL = 1e-5
WEIGHTS_ATOL = 1e-4
DEVICES = 8
SHARDED_PER_LAYER = 10  # q, k, v kernels and biases; attention output; FFN in (2) and out


def _run(check: str, root: Path, *arguments: str, timeout: int = 1500) -> dict:
    """`distributed_fit CHECK ROOT OUT ...` on 8 simulated devices; its JSON results."""
    env = dict(os.environ, KERAS_BACKEND="jax", TF_CPP_MIN_LOG_LEVEL="3",
               XLA_FLAGS=f"--xla_force_host_platform_device_count={DEVICES}")
    out = root / f"{check}-{'-'.join(arguments) or 'default'}.json"
    done = subprocess.run([sys.executable, "-m", "tests.support.distributed_fit", check,
                           str(root), str(out), *arguments], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=timeout)
    assert done.returncode == 0, done.stderr[-3000:]
    result = json.loads(out.read_text())
    assert result["devices"] == DEVICES
    return result["results"]


def _assert_equal_runs(found: dict) -> None:
    assert found["steps"] >= 6 and found["loss_moved"], found
    assert found["loss_rel"] <= LOSS_RTOL, found
    assert found["weights_abs"] <= WEIGHTS_ATOL, found
    assert found["answers_abs"] <= WEIGHTS_ATOL, found
    assert found["evaluation_abs"] <= WEIGHTS_ATOL, found


# ----- in process: the layout map and the messages ----------------------------------------

def _matching(path: str) -> list[str]:
    import re

    return [p for p in BERT_LAYOUT if re.fullmatch(p, path)]


def test_the_layout_names_each_sharded_bert_weight_once():
    from keras_bert import BertConfig
    from keras_bert.models.pretrainer import BertPretrainer

    config = BertConfig(vocab_size=44, hidden_size=32, num_layers=2, num_heads=4,
                        intermediate_size=64, max_position_embeddings=64)
    model = BertPretrainer.from_bert_config(config)
    ids = np.array([[2, 5, 3]], "int32")
    model({"input_word_ids": ids, "input_mask": np.ones_like(ids),
           "input_type_ids": np.zeros_like(ids), "masked_lm_positions": np.array([[1]], "int32")})
    matched = {v.path: _matching(v.path) for v in model.weights}
    assert all(len(found) <= 1 for found in matched.values()), matched
    sharded = sorted(path for path, found in matched.items() if found)
    assert len(sharded) == 1 + SHARDED_PER_LAYER * config.num_layers, sharded
    assert "embeddings/word_embeddings/embeddings" in sharded
    # The heads, norms, positions and the pooler stay replicated.
    assert not any("head" in p or "norm" in p or "pooler" in p for p in sharded)


@pytest.mark.parametrize("vocab, hidden, intermediate", [(30522, 768, 3072),
                                                         (28996, 1024, 4096)])
@pytest.mark.parametrize("model_axis", [2, 4, 8])
def test_bert_base_and_large_divide_on_every_model_axis(vocab, hidden, intermediate,
                                                        model_axis):
    """The word embeddings are sharded along the hidden axis: BERT's vocabularies do not
    divide by 4 or 8, its hidden and FFN sizes do."""
    shapes = {"embeddings/word_embeddings/embeddings": (vocab, hidden),
              "transformer_layer_0/attention/query/kernel": (hidden, hidden),
              "transformer_layer_0/attention/query/bias": (hidden,),
              "transformer_layer_0/attention/output/kernel": (hidden, hidden),
              "transformer_layer_0/intermediate/kernel": (hidden, intermediate),
              "transformer_layer_0/output/kernel": (intermediate, hidden)}
    for path, shape in shapes.items():
        (pattern,) = _matching(path)
        check_layout(path, shape, BERT_LAYOUT[pattern], {"batch": 1, "model": model_axis})


def test_a_layout_that_does_not_divide_names_the_weight_its_shape_and_the_axis():
    with pytest.raises(ValueError) as error:
        check_layout("transformer_layer_0/intermediate/kernel", (36, 90), (None, "model"),
                     {"batch": 2, "model": 4})
    assert str(error.value) == (
        "the layout does not divide the weight transformer_layer_0/intermediate/kernel of "
        "shape (36, 90): 90 is not a multiple of the 'model' axis size 4")


def test_a_batch_that_does_not_split_names_both_numbers():
    mesh = types.SimpleNamespace(shape=(4, 2), axis_names=("batch", "model"))
    distribution = types.SimpleNamespace(device_mesh=mesh, batch_dim_name="batch")
    check_batch_size(distribution, 8)
    check_batch_size(None, 7)  # no distribution: any batch
    with pytest.raises(ValueError, match=r"^a global batch of 6 does not split across 4 "
                                         r"data-parallel devices"):
        check_batch_size(distribution, 6)


def test_the_choices():
    assert parse("data_parallel") == ("data_parallel", 1)
    assert parse("model_parallel:2") == ("model_parallel", 2)
    for bad in ("model_parallel", "model_parallel:0", "tpu"):
        with pytest.raises(ValueError, match="distribution must be one of auto, none"):
            parse(bad)
    # On TensorFlow (this process) `auto` and `none` choose nothing; the others are JAX's.
    assert get_distribution("auto") is None and get_distribution("none") is None
    with pytest.raises(ValueError, match="Keras' JAX distribution API; this process runs "
                                         "'tensorflow'"):
        get_distribution("data_parallel")


# ----- 8 simulated devices, in a subprocess -------------------------------------------------

@pytest.fixture(scope="module")
def root(tmp_path_factory) -> Path:
    return tmp_path_factory.mktemp("distributed")


# (kind, arguments): the classifier and the pretrainer (2 micro-batches per update) are also
# killed after step 5 and resumed.
DATA_PARALLEL = [("classify", ["--resume"]), ("pair", []), ("regress", []),
                 ("multilabel", []), ("tag", []), ("squad", []), ("embed", []),
                 ("pretrain", ["--accumulation", "2", "--resume"])]


@pytest.mark.slow
@pytest.mark.needs_jax
@pytest.mark.timeout(1800)
@pytest.mark.parametrize("kind, arguments", DATA_PARALLEL, ids=[k for k, _ in DATA_PARALLEL])
def test_data_parallel_fit_equals_one_device(root, kind, arguments):
    found = _run("data_parallel", root, "--kinds", kind, *arguments)[kind]
    assert found["devices"] == [1, DEVICES, DEVICES]  # the first kernel's devices
    _assert_equal_runs(found["ours"])  # our switch
    _assert_equal_runs(found["theirs"])  # a Keras user's set_distribution
    # Both ways in are one program: the same numbers, bit for bit.
    assert found["ours_vs_theirs"]["loss_rel"] == 0.0
    assert found["ours_vs_theirs"]["weights_abs"] == 0.0
    if "--resume" in arguments:
        assert found["resumed_weights_abs"] <= WEIGHTS_ATOL
    if kind == "classify":
        _assert_exports_under_tensorflow(root, kind, found["answers"])


def _assert_exports_under_tensorflow(root: Path, kind: str, answers: dict) -> None:
    """The model fitted on 8 devices, saved there, loads in this (TensorFlow) process and
    its export answers in TF Serving's Session loader as the 8-device `predict` did."""
    from keras_bert.export.session_bundle import SessionBundle
    from keras_bert.tasks.task_model import TextTaskModel
    from tests.support.backend_fit import data, requests

    model = TextTaskModel.load(str(root / "data-parallel-fitted" / kind))
    x, _ = data(kind, root)
    inputs = {name: np.array(values, dtype=object)
              for name, values in model._requests(requests(kind, x)).items()}
    with SessionBundle(model.export(str(root / "serving" / kind))) as bundle:
        served = bundle.run("serving_default", inputs)
    for name, value in answers.items():
        np.testing.assert_allclose(served[name], np.asarray(value), atol=1e-5, err_msg=name)


@pytest.mark.slow
@pytest.mark.needs_jax
@pytest.mark.timeout(1800)
def test_model_parallel_shards_the_kernels_in_halves_and_answers_as_one_device(root):
    results = _run("model_parallel", root, "--kinds", "classify", "pretrain")
    for kind, found in results.items():
        _assert_equal_runs(found)
        assert len(found["shards"]) == 1 + SHARDED_PER_LAYER * 2, kind
        for path, (full, shard, devices) in found["shards"].items():
            axes = BERT_LAYOUT[_matching(path)[0]]
            halved = [size // 2 if axis == "model" else size
                      for size, axis in zip(full, axes, strict=True)]
            assert shard == halved and devices == DEVICES, (path, full, shard)


@pytest.mark.slow
@pytest.mark.needs_jax
def test_bad_input_ends_with_one_line_and_nothing_written(root):
    found = _run("errors", root, timeout=900)
    assert found["batch"]["message"].startswith(
        "a global batch of 12 does not split across 8 data-parallel devices")
    assert not found["batch"]["written"]  # no checkpoint directory
    assert found["layout"]["message"] == (
        "the layout does not divide the weight embeddings/word_embeddings/embeddings of "
        "shape (44, 36): 36 is not a multiple of the 'model' axis size 8")
    assert found["mesh"]["message"].startswith(
        "model_parallel:3 needs a device count that divides by 3; 8 devices are visible")
