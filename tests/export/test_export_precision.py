"""`keras-bert export --precision`: the real all-MiniLM-L6-v2 weights exported in float32,
bfloat16 and float16, every export loaded as TensorFlow Serving loads it (Session, fresh
process without keras_bert). The half-precision exports must agree with the float32 one:
pooled-output cosine >= 0.999 on every held-out sentence, and the same labels from a
nearest-centroid classifier whose centroids come from labelled sentences (the float32
labels are checked against the gold ones first, so agreement means something)."""

from __future__ import annotations

import numpy as np
import pytest
import tensorflow as tf

from keras_bert.cli import main
from tests.export.helpers import read_outputs, run_session_jobs
from tests.export.run_session_bundle import save_arrays

pytestmark = pytest.mark.slow

TRAIN = {  # label -> sentences whose mean pooled vector is the label's centroid
    "sea": ["The ship sailed out of the harbour into the open sea.",
            "Whales surfaced beside the boat and the sailors lowered the harpoons.",
            "A storm tossed the vessel on the waves all night."],
    "food": ["She baked fresh bread and a cherry pie for dinner.",
             "The soup needs more salt and a little pepper.",
             "We ate pasta with tomato sauce and grated cheese."],
    "politics": ["The senate passed the budget bill after a long debate.",
                 "Voters chose a new president in the national election.",
                 "The minister resigned after the parliament vote."],
}
HELD_OUT = [("The crew hoisted the sails as the tide turned.", "sea"),
            ("Call me Ishmael; I went to sea on a whaling voyage.", "sea"),
            ("The captain steered the schooner past the rocks.", "sea"),
            ("Roast the chicken with garlic, lemon and rosemary.", "food"),
            ("Dessert was chocolate cake with whipped cream.", "food"),
            ("He fried eggs and bacon for breakfast.", "food"),
            ("The governor vetoed the tax law passed by the assembly.", "politics"),
            ("Congress debated the new immigration policy.", "politics"),
            ("The prime minister called an early general election.", "politics")]
PRECISIONS = ("float32", "bfloat16", "float16")


@pytest.fixture(scope="module")
def served(tmp_path_factory, minilm_model_dir):
    """`{precision: pooled [n, 384]}` for TRAIN sentences then HELD_OUT, through the loader."""
    root = tmp_path_factory.mktemp("precision")
    model_dir = minilm_model_dir  # converted once (`tests/conftest.py`)
    texts = [s for group in TRAIN.values() for s in group] + [s for s, _ in HELD_OUT]
    inputs = str(root / "in.npz")
    save_arrays(inputs, {"text": np.array([t.encode() for t in texts], dtype=object)})
    jobs = []
    for version, precision in enumerate(PRECISIONS, start=1):
        assert main(["export", model_dir, str(root / "serving"), "--version", str(version),
                     "--precision", precision, "--pooling", "pooled"]) == 0
        jobs.append({"export": str(root / "serving" / str(version)),
                     "signature": "serving_default", "inputs": inputs,
                     "outputs": str(root / f"{precision}.npz")})
    run_session_jobs(__import__("sys").executable, jobs, root)
    outputs = {p: read_outputs(str(root / f"{p}.npz")) for p in PRECISIONS}
    for precision, out in outputs.items():
        assert "error" not in out, (precision, out)
        assert out["embedding"].dtype == np.float32, precision
    return {p: out["embedding"] for p, out in outputs.items()}, root


def _unit(x: np.ndarray) -> np.ndarray:
    return x / np.linalg.norm(x, axis=-1, keepdims=True)


def _nearest_centroid(vectors: np.ndarray, centroids: np.ndarray) -> list[str]:
    names = list(TRAIN)
    return [names[i] for i in np.argmax(_unit(vectors) @ _unit(centroids).T, axis=-1)]


@pytest.mark.parametrize("precision", ["bfloat16", "float16"])
def test_half_precision_export_agrees_with_float32(served, precision):
    pooled, _ = served
    cosine = np.sum(_unit(pooled[precision]) * _unit(pooled["float32"]), axis=-1)
    print(f"{precision}: pooled cosine vs float32 min {cosine.min():.6f}")
    assert cosine.min() >= 0.999, cosine
    assert np.abs(pooled[precision] - pooled["float32"]).max() > 0  # really a lower precision

    n_train = sum(len(group) for group in TRAIN.values())
    reference = pooled["float32"][:n_train].reshape(len(TRAIN), -1, pooled["float32"].shape[-1])
    centroids = reference.mean(axis=1)
    want = _nearest_centroid(pooled["float32"][n_train:], centroids)
    assert want == [label for _, label in HELD_OUT]
    assert _nearest_centroid(pooled[precision][n_train:], centroids) == want


def test_precision_is_in_the_graph_and_weights_stay_float32(served):
    _, root = served
    for version, precision in enumerate(PRECISIONS, start=1):
        path = str(root / "serving" / str(version))
        reader = tf.train.load_checkpoint(f"{path}/variables/variables")
        dtypes = {str(d.name) for k, d in reader.get_variable_to_dtype_map().items()
                  if k != "_CHECKPOINTABLE_OBJECT_GRAPH"}
        assert dtypes == {"float32"}, (precision, dtypes)
        graph = tf.saved_model.load(path).signatures["serving_default"].graph.as_graph_def()
        nodes = [node for fn in graph.library.function for node in fn.node_def]
        dense = {tf.as_dtype(n.attr["T"].type).name for n in nodes if n.op == "MatMul"}
        attention = {tf.as_dtype(n.attr["T"].type).name for n in nodes
                     if n.op == "BatchMatMulV2"}
        assert dense == {precision}, (precision, dense)
        # Attention scores stay float32; probabilities @ values run in the precision.
        assert attention == {"float32", precision}, (precision, attention)


def test_precision_choices_are_checked(tmp_path):
    from keras_bert.tasks.task_dir import export_model

    with pytest.raises(ValueError, match="precision must be one of"):
        export_model(str(tmp_path), str(tmp_path / "out"), precision="int8")
    with pytest.raises(SystemExit):
        main(["export", str(tmp_path), str(tmp_path / "out"), "--precision", "fp8"])
