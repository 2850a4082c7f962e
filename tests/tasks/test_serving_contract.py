"""The serving functions in their three parts: each kind's module keeps to `ServingModule`'s
contract (it implements the hooks and overrides nothing else of it), and the network call of
the eager backends (`network_call.PaddedCall`) pads as the XLA export's graph pads and answers
as the model does."""

from __future__ import annotations

import ast
import importlib
import inspect
from pathlib import Path

import keras
import numpy as np
import pytest
import tensorflow as tf

from keras_bert.tasks import network_call
from keras_bert.tasks.network_call import PaddedCall, pad_arrays
from keras_bert.tasks.serving import ServingModule, pad_to_bucket

TASKS = Path(__file__).resolve().parents[2] / "keras_bert" / "tasks"
HOOKS = {"text_endpoint", "preprocess_endpoint", "warmup_inputs", "litert_graph"}


def _serving_classes() -> list[type]:
    """Every subclass of `ServingModule`, each kind's `serving.py` imported first."""
    for folder in sorted(TASKS.iterdir()):
        if (folder / "serving.py").exists():
            importlib.import_module(f"keras_bert.tasks.{folder.name}.serving")
    found, todo = [], [ServingModule]
    while todo:
        for sub in todo.pop().__subclasses__():
            found.append(sub)
            todo.append(sub)
    return found


def test_the_contract_lists_the_hooks_and_each_kind_overrides_only_those():
    assert ServingModule.__abstractmethods__ == HOOKS
    classes = _serving_classes()
    names = {cls.__name__ for cls in classes}
    assert {"SentenceServing", "TokenClassifierServing", "QuestionAnswererServing"} <= names
    shared = {name for name in vars(ServingModule) if not name.startswith("__")
              and name not in HOOKS | {"per_token_outputs", "_abc_impl"}}
    assert {"network", "run", "ids_endpoint", "endpoints", "traced"} <= shared
    for cls in classes:
        assert not inspect.isabstract(cls), cls.__name__
        overridden = {name for name in vars(cls) if name in shared}
        assert overridden == set(), f"{cls.__name__} overrides {sorted(overridden)}"


def test_the_network_call_module_holds_no_tensorflow():
    tree = ast.parse(Path(network_call.__file__).read_text(encoding="utf-8"))
    imported = {alias.name for node in ast.walk(tree) if isinstance(node, ast.Import)
                for alias in node.names}
    imported |= {node.module for node in ast.walk(tree) if isinstance(node, ast.ImportFrom)}
    assert not {name for name in imported if name and name.startswith("tensorflow")}


@pytest.mark.parametrize("batch", [0, 1, 2, 3, 5, 11])
def test_eager_padding_is_the_xla_graphs(batch):
    for length, longest in ((1, 64), (16, 64), (17, 64), (33, 64), (64, 64), (40, 48),
                            (129, 512), (200, 512), (300, 512)):
        ids = np.arange(1, batch * length + 1, dtype=np.int32).reshape(batch, length)
        inputs = {"input_word_ids": ids, "input_mask": np.ones_like(ids)}
        want = pad_to_bucket({k: tf.constant(v) for k, v in inputs.items()}, longest)
        got = pad_arrays(inputs, longest)
        for name in inputs:
            assert got[name].dtype == want[name].dtype.as_numpy_dtype
            np.testing.assert_array_equal(got[name], want[name].numpy())


def _tiny_model():
    """Three id inputs -> per-position vectors (word and type embeddings, zero where the mask
    is) and the first position's, through a dense layer (as BERT's pooler: padding after a
    row changes neither). Every input reaches an output: Keras before 3.13 (the one Python
    3.10 gets) refuses a model with an input that does not."""
    ids = {name: keras.Input((None,), dtype="int32", name=name)
           for name in ("input_word_ids", "input_mask", "input_type_ids")}
    tokens = (keras.layers.Embedding(40, 4)(ids["input_word_ids"])
              + keras.layers.Embedding(2, 4)(ids["input_type_ids"]))
    tokens = tokens * keras.ops.expand_dims(keras.ops.cast(ids["input_mask"], "float32"), -1)
    pooled = keras.layers.Dense(3)(tokens[:, 0, :])
    return keras.Model(ids, {"tokens": tokens, "pooled": pooled})


@pytest.mark.parametrize("per_token", [True, False])
def test_the_padded_call_answers_as_the_model_for_the_rows_and_positions_asked(per_token):
    keras.utils.set_random_seed(0)
    model = _tiny_model()
    ids = np.array([[2, 9, 12, 3, 0], [2, 14, 3, 0, 0], [2, 5, 6, 7, 3]], np.int32)
    inputs = {"input_word_ids": ids, "input_mask": (ids > 0).astype(np.int32),
              "input_type_ids": np.zeros_like(ids)}
    got = PaddedCall(model, 16, per_token)(inputs)
    want = model(inputs, training=False)
    np.testing.assert_allclose(got["pooled"], want["pooled"], atol=1e-6)
    tokens = got["tokens"]
    assert tokens.shape == ((3, 5, 4) if per_token else (3, 16, 4))
    np.testing.assert_allclose(tokens[:, :5], want["tokens"], atol=1e-6)
