"""Exports: layout, atomic versions, warmup, size, and identical answers in a fresh process
that imports only TensorFlow + TF Text."""

import os

import numpy as np
import pytest
import tensorflow as tf

from keras_bert.checkpoints import convert
from keras_bert.export.exporter import export_model
from keras_bert.export.versions import atomic_version_dir, existing_versions
from keras_bert.export.warmup import read_warmup
from keras_bert.text_embedder import TextEmbedder
from tests.export.helpers import run_fresh
from tests.reference import minilm_dir

TEXTS = ["Call me Ishmael.", "", "Naïve café owners ate crème brûlée — twice!",
         "Whenever it is a damp, drizzly November in my soul, I go to sea. " * 30]


@pytest.fixture(scope="module")
def model_dir(tmp_path_factory):
    return convert(minilm_dir(), str(tmp_path_factory.mktemp("m") / "minilm"))


@pytest.fixture(scope="module")
def exported(model_dir, tmp_path_factory):
    base = tmp_path_factory.mktemp("serving") / "minilm"
    return export_model(model_dir.path, str(base), pooling="mean", target=None)


def test_layout_and_size(exported):
    assert exported.version == 1 and exported.task == "embed"
    files = {os.path.relpath(os.path.join(r, f), exported.path)
             for r, _, fs in os.walk(exported.path) for f in fs}
    assert {"saved_model.pb", "variables/variables.index", "assets/vocab.txt",
            "assets.extra/tf_serving_warmup_requests"} <= files
    weights = sum(os.path.getsize(os.path.join(minilm_dir(), f))
                  for f in ["model.safetensors"])
    variables = sum(os.path.getsize(os.path.join(exported.path, "variables", f))
                    for f in os.listdir(os.path.join(exported.path, "variables")))
    assert variables <= 1.05 * weights, (variables, weights)  # each variable stored once
    assert exported.signatures["serving_default"]["inputs"] == ["text"]
    assert exported.signatures["serve_ids"]["inputs"] == [
        "input_mask", "input_type_ids", "input_word_ids"]


def test_warmup_requests(exported):
    logs = read_warmup(exported.path)
    assert len(logs) == 1
    request = logs[0].predict_log.request
    assert request.model_spec.signature_name == "serving_default"
    texts = tf.make_ndarray(request.inputs["text"])
    assert texts.shape == (3,) and texts[0] == b"Call me Ishmael."


def test_fresh_process_reproduces_the_keras_model(exported, model_dir, tmp_path):
    # Encoder exports truncate at 512 tokens by default; the long text needs more than 128.
    embedder = TextEmbedder(model_dir.load_encoder(), model_dir.preprocessor(), seq_length=512,
                            pooling="mean")
    expected = embedder(TEXTS)
    got = run_fresh(exported.path, "serving_default",
                    {"text": np.array(TEXTS, dtype=object)}, tmp_path)
    np.testing.assert_allclose(got["embedding"], expected, atol=1e-5)
    # The id signature gives the same answers for the same packed ids.
    inputs = embedder.preprocessor(tf.constant(TEXTS))
    by_ids = run_fresh(exported.path, "serve_ids",
                       {k: v.numpy() for k, v in inputs.items()}, tmp_path)
    # (Grappler optimises each signature's graph on its own: float sums may reorder.)
    np.testing.assert_allclose(by_ids["embedding"], got["embedding"], atol=1e-5)


def test_versions_are_atomic_and_never_overwritten(model_dir, tmp_path):
    base = tmp_path / "base"
    with pytest.raises(RuntimeError, match="boom"), atomic_version_dir(str(base)) as (tmp, v):
        os.makedirs(tmp)
        (open(os.path.join(tmp, "saved_model.pb"), "w")).close()
        raise RuntimeError("boom")  # a killed/failed export
    assert existing_versions(str(base)) == [] and os.listdir(base) == []
    os.makedirs(base / "3")
    with atomic_version_dir(str(base)) as (tmp, v):
        os.makedirs(tmp)
    assert v == 4 and existing_versions(str(base)) == [3, 4]
    with pytest.raises(FileExistsError, match="next free: 5"):
        with atomic_version_dir(str(base), 3):
            pass


def test_static_sequence_length(model_dir, tmp_path):
    exported = export_model(model_dir.path, str(tmp_path / "s"), seq_length=16, target=None)
    loaded = tf.saved_model.load(exported.path)
    spec = loaded.signatures["serve_ids"].structured_input_signature[1]
    assert spec["input_word_ids"].shape.as_list() == [None, 16]
    out = loaded.signatures["serving_default"](text=tf.constant(TEXTS))
    assert out["embedding"].shape == (4, 384)


def test_exports_embed_the_tokenizer_rules(model_dir, tmp_path):
    """A Hugging Face model keeps Hugging Face's rules in its export; `rules` overrides them.
    The text holds a 150-character word ([UNK] for huggingface, pieces for google) and a
    private-use character (dropped by huggingface, kept by google: an unknown word)."""
    assert model_dir.rules == "huggingface"
    texts = np.array(["sea" * 50 + " whale", "\ue000whale"], dtype=object)
    rows = {}
    for rules in ("huggingface", "google"):
        exported = export_model(model_dir.path, str(tmp_path / rules), target=None,
                                rules=None if rules == "huggingface" else rules)
        got = run_fresh(exported.path, "preprocess", {"text": texts}, tmp_path)
        want = model_dir.with_rules(rules).preprocessor()(tf.constant(list(texts)))
        np.testing.assert_array_equal(got["input_word_ids"], want["input_word_ids"].numpy())
        rows[rules] = [[t for t in row if t] for row in got["input_word_ids"].tolist()]
    tokenizer = model_dir.tokenizer()
    cls, sep, unk = tokenizer.cls_id, tokenizer.sep_id, tokenizer.unk_id
    whale = tokenizer.token_to_id(["whale"]).numpy().tolist()
    assert rows["huggingface"] == [[cls, unk, *whale, sep], [cls, *whale, sep]]
    assert unk not in rows["google"][0] and len(rows["google"][0]) > 5
    assert rows["google"][1] == [cls, unk, sep]
