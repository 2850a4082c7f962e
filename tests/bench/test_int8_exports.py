"""`bench/support/serving_precisions.py`: the two int8 SavedModels behind the figures that decided
the SavedModel takes no `--quantize` (bench/RESULTS.md). Each must really compute in int8
(its graph holds the int8 products) and answer as the float32 export does through TF
Serving's loader, within int8's rounding: a tiny classifier's logits within 5% (relative L2)
and its labels on corpus lines equal for at least 90% of them. A single W8A8 product of
random data errs by about 1% (relative L2) here; the tiny model chains 2 layers of them."""

from __future__ import annotations

import os

import numpy as np
import pytest
import tensorflow as tf

from bench.support.serving_precisions import write_int8_export
from keras_bert.export.session_bundle import SessionBundle
from keras_bert.tasks.task_dir import export_model
from tests.export.helpers import make_tiny_task_dir
from tests.support.tokenizer_parity import corpus_lines, uncased_vocab_path

pytestmark = pytest.mark.slow

# kind -> (op, dtype attribute, dtype) of the int8 products in its graph
INT8_OPS = {"keras": ("BatchMatMulV3", "Ta", "int8"),
            "onednn": ("QuantizedMatMulWithBias", "T1", "quint8")}


@pytest.fixture(scope="module")
def answers(tmp_path_factory):
    if os.environ.get("TF_ENABLE_ONEDNN_OPTS") == "0":
        pytest.skip("TensorFlow's oneDNN int8 kernel needs oneDNN switched on")
    root = tmp_path_factory.mktemp("int8")
    task_dir = make_tiny_task_dir(root, {"kind": "classify", "seq_length": 64},
                                  ["neg", "pos"], vocab_file=uncased_vocab_path())
    paths = {"float32": export_model(task_dir, str(root / "float32")).path}
    for kind in INT8_OPS:
        paths[kind] = write_int8_export(kind, task_dir, str(root / kind))
    texts = np.array(corpus_lines()[:200], dtype=object)
    out = {}
    for name, path in paths.items():
        with SessionBundle(path) as bundle:
            out[name] = bundle.run("serving_default", {"text": texts}, ["logits", "label"])
    return paths, out


def _ops(path: str) -> list:
    graph = tf.saved_model.load(path).signatures["serving_default"].graph.as_graph_def()
    return [node for fn in graph.library.function for node in fn.node_def]


@pytest.mark.parametrize("kind", sorted(INT8_OPS))
def test_int8_export_computes_in_int8_and_answers_as_float32(answers, kind):
    paths, out = answers
    op, attr, dtype = INT8_OPS[kind]
    int8 = [n for n in _ops(paths[kind]) if n.op == op and tf.as_dtype(n.attr[attr].type).name
            == dtype]
    assert len(int8) == 2 * 6 + 1  # 2 layers x (query, key, value, output, FFN in, out), pooler
    want, got = out["float32"]["logits"], out[kind]["logits"]
    error = np.linalg.norm(got - want) / np.linalg.norm(want)
    print(f"{kind}: logits relative L2 error {error:.4f}")
    assert 0 < error < 0.05
    same = np.mean(out[kind]["label"] == out["float32"]["label"])
    assert same >= 0.9, same
