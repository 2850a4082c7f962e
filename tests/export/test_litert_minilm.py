"""The real all-MiniLM-L6-v2 as a text embedder, exported to LiteRT as float32, float16 and
int8 (dynamic range), against its SavedModel through TF Serving's loader on held-out strings:
float32 within 1e-4, float16 and int8 embeddings at cosine >= 0.99 of the SavedModel's."""

import numpy as np
import pytest

from keras_bert.export.litert_runtime import LiteRTModel
from keras_bert.export.session_bundle import SessionBundle
from keras_bert.tasks import TextEmbedder
from tests.export.test_litert import compare, held_out_texts

pytest.importorskip("ai_edge_litert")


@pytest.fixture(scope="module")
def exports(minilm_model_dir, tmp_path_factory):
    root = tmp_path_factory.mktemp("minilm_litert")
    model = TextEmbedder.from_pretrained(minilm_model_dir, seq_length=128)
    saved = model.export(str(root / "saved"), precision="float32", target=None)
    lite = {q: model.export(str(root / q), format="litert", tokenizer="fast-bert", quantize=q)
            for q in ("none", "float16", "int8")}
    return saved, lite


@pytest.mark.slow
def test_float32_answers_as_the_saved_model(exports):
    saved, lite = exports
    texts = held_out_texts()
    assert compare(saved, lite["none"], texts) < len(texts) // 4


def _cosines(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    return np.sum(a * b, axis=-1) / (np.linalg.norm(a, axis=-1) * np.linalg.norm(b, axis=-1))


@pytest.mark.slow
@pytest.mark.parametrize("quantize", ["float16", "int8"])
def test_quantized_embeddings_stay_close(exports, quantize):
    saved, lite = exports
    texts = [t for t in held_out_texts() if t.strip()]
    with LiteRTModel(lite[quantize]) as model, LiteRTModel(lite["none"]) as full, \
            SessionBundle(saved) as bundle:
        ids = [full.run("preprocess", text=np.array([t], dtype=object)) for t in texts]
        got = np.concatenate([model.run("serve_ids", **i)["embedding"] for i in ids])
        want = np.concatenate([bundle.run("serve_ids", i)["embedding"] for i in ids])
        size = len(open(model.path, "rb").read()) / len(open(full.path, "rb").read())
    cosines = _cosines(got, want)
    assert cosines.min() >= 0.99, (quantize, cosines.min())
    # The weights did shrink (the word embeddings, half of MiniLM, stay float32 in int8).
    assert size < (0.6 if quantize == "float16" else 0.7), size
