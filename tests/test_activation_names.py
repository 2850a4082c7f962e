"""`keras_bert.activation_names`: each format's names mean, in keras_bert, what the code that
reads that format computes; checked against that code itself where it is installed
(Google's `modeling.py` from bert-tensorflow, `transformers`, keras-hub). Model Garden's:
`tests/checkpoints/test_model_garden_exports.py` runs its encoder on our checkpoints."""

from __future__ import annotations

import ast
import os

import keras
import numpy as np
import pytest

from keras_bert.activation_names import (
    APPROXIMATE,
    BY_FORMAT,
    EXACT,
    GOOGLE,
    HIDDEN_ACTS,
    HUGGING_FACE,
    KERAS_BERT,
    KERAS_HUB,
    MODEL_GARDEN,
    UnwritableActivationError,
)
from keras_bert.layers.activations import get_activation
from tests.support import numpy_bert as nb
from tests.support.reference import require

GRID = np.linspace(-6.0, 6.0, 1201).astype("float32")
TABLES = [GOOGLE, MODEL_GARDEN, HUGGING_FACE, KERAS_HUB, KERAS_BERT]


def ours(hidden_act: str) -> np.ndarray:
    """Our activation `hidden_act` on `GRID`."""
    return keras.ops.convert_to_numpy(get_activation(hidden_act)(keras.ops.convert_to_tensor(GRID)))


def googles_get_activation():
    """`get_activation` of Google's BERT `modeling.py` (bert-tensorflow, installed), run as
    it is written. The module imports `tensorflow.contrib` (TF1) at its top, so only its
    two activation functions are taken from its source; they use `tf.tanh` and `tf.pow`."""
    import six
    import tensorflow as tf

    path = os.path.join(os.path.dirname(require("bert").__file__), "modeling.py")
    with open(path, encoding="utf-8") as f:
        tree = ast.parse(f.read())
    functions = [node for node in tree.body
                 if isinstance(node, ast.FunctionDef) and node.name in ("gelu", "get_activation")]
    assert len(functions) == 2
    namespace = {"tf": tf, "np": np, "six": six}
    exec(compile(ast.Module(body=functions, type_ignores=[]), path, "exec"), namespace)
    return namespace["get_activation"]


@pytest.mark.parametrize("name", sorted(GOOGLE.writes.values()))
def test_googles_names_mean_what_googles_code_computes(name):
    theirs = googles_get_activation()(name)(GRID).numpy()
    np.testing.assert_allclose(ours(GOOGLE.read(name, "test")), theirs, rtol=0, atol=2e-6)
    if name == "gelu":  # the tanh form, not the erf GELU
        np.testing.assert_allclose(theirs, nb.gelu_tanh(GRID), rtol=0, atol=2e-6)
        assert np.abs(theirs - nb.gelu_exact(GRID)).max() > 1e-4


@pytest.mark.needs_torch
@pytest.mark.parametrize("name", sorted(HUGGING_FACE.reads))
def test_hugging_faces_names_mean_what_transformers_computes(name):
    torch = require("torch")
    activations = require("transformers.activations")
    with torch.no_grad():
        theirs = activations.ACT2FN[name](torch.from_numpy(GRID)).numpy()
    np.testing.assert_allclose(ours(HUGGING_FACE.read(name, "test")), theirs, rtol=0, atol=2e-6)


def test_a_keras_hub_preset_computes_what_its_backbone_computes():
    keras_hub = require("keras_hub")
    backbone = keras_hub.models.BertBackbone(vocabulary_size=10, num_layers=1, num_heads=2,
                                             hidden_dim=4, intermediate_dim=8)
    activation = backbone.transformer_layers[0].activation
    theirs = keras.ops.convert_to_numpy(activation(keras.ops.convert_to_tensor(GRID)))
    np.testing.assert_allclose(ours(KERAS_HUB.read(None, "test")), theirs, rtol=0, atol=2e-6)
    assert np.abs(theirs - nb.gelu_exact(GRID)).max() > 1e-4


@pytest.mark.parametrize("table", TABLES, ids=lambda t: t.layout)
def test_what_a_format_writes_reads_back_as_itself(table):
    assert set(table.reads.values()) <= set(HIDDEN_ACTS)
    assert table.default in table.reads
    for hidden_act, name in table.writes.items():
        assert table.read(name, "test") == hidden_act


@pytest.mark.parametrize("table", [GOOGLE, MODEL_GARDEN, KERAS_HUB], ids=lambda t: t.layout)
def test_a_tanh_only_format_refuses_the_exact_gelu_and_says_how_to_go_on(table):
    with pytest.raises(UnwritableActivationError,
                       match=r"exact \(erf\) GELU.*--approximate-gelu.*with_approximate_gelu"):
        table.write(EXACT)
    assert table.read(table.write(APPROXIMATE), "test") == APPROXIMATE


def test_an_activation_a_format_has_no_name_for_is_refused():
    with pytest.raises(UnwritableActivationError, match="Google's layout has no 'silu'"):
        GOOGLE.write("silu")
    with pytest.raises(ValueError, match="bert_config.json: hidden_act 'mish' is not one of"):
        GOOGLE.read("mish", "bert_config.json")


def test_gelu_means_one_thing_per_format():
    assert {t.layout: t.read("gelu", "test") for t in TABLES if "gelu" in t.reads} == {
        "Google's layout": APPROXIMATE, "Model Garden's layout": APPROXIMATE,
        "Hugging Face's layout": EXACT,
        "a keras_bert model directory": EXACT}  # written before the names said which


def test_every_checkpoint_format_has_its_table():
    from keras_bert.checkpoints.formats import FORMATS

    assert sorted(BY_FORMAT) == sorted(f.name for f in FORMATS)
