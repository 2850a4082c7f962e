"""Exports: layout, atomic versions, warmup, size, and identical answers in a fresh process
that imports only TensorFlow + TF Text."""

import os

import numpy as np
import pytest
import tensorflow as tf

from keras_bert.checkpoints import load_model_dir
from keras_bert.export.session_bundle import SessionBundle
from keras_bert.export.versions import atomic_version_dir, existing_versions
from keras_bert.export.warmup import predict_log, read_warmup
from keras_bert.tasks.task_dir import export_model
from tests.export.helpers import run_fresh_many, run_in_session_many
from tests.support.reference import minilm_dir

TEXTS = ["Call me Ishmael.", "", "Naïve café owners ate crème brûlée — twice!",
         "Whenever it is a damp, drizzly November in my soul, I go to sea. " * 30]


@pytest.fixture(scope="module")
def model_dir(minilm_model_dir):
    """The shared converted MiniLM (`tests/conftest.py`)."""
    return load_model_dir(minilm_model_dir)


@pytest.fixture(scope="module")
def exported(model_dir, tmp_path_factory):
    base = tmp_path_factory.mktemp("serving") / "minilm"
    # `quantize="none"`, the CLI's default: that it exports is `test_the_saved_model_refuses_
    # quantize`'s (which needs no export of its own).
    return export_model(model_dir.path, str(base), pooling="mean", target=None,
                        quantize="none")


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


def test_warmup_records_are_tf_servings_own_protos():
    """The hand-encoded records parse with tensorflow-serving-api's classes into the
    request its classes build (the exporter needs no tensorflow-serving-api)."""
    from tensorflow_serving.apis import predict_pb2, prediction_log_pb2

    inputs = {"text": np.array(["Call me Ishmael.", "", "\u00e9t\u00e9 " * 300], object),
              "text_b": np.array([b"x", b"y", b"z"], object), "ids": np.arange(6).reshape(2, 3)}
    want = predict_pb2.PredictRequest()
    want.model_spec.name, want.model_spec.signature_name = "bert-\u00fc", "serving_default"
    for name, value in inputs.items():
        want.inputs[name].CopyFrom(tf.make_tensor_proto(value))
    got = prediction_log_pb2.PredictionLog.FromString(
        predict_log("bert-\u00fc", "serving_default", inputs))
    assert got.WhichOneof("log_type") == "predict_log"
    assert got.predict_log.request == want
    assert not got.predict_log.HasField("response")


def _check_answers(model_dir, run_many):
    """`run_many(requests)` (a loader of the export) answers as the Keras model does.

    Encoder exports truncate at 512 tokens by default; the long text needs more than 128.
    The reference: the Keras encoder on the model's preprocessor, mean-pooled in NumPy."""
    inputs = model_dir.preprocessor().with_length(None, 512)(tf.constant(TEXTS))
    sequence = model_dir.load_encoder()(inputs)["sequence_output"].numpy()
    mask = inputs["input_mask"].numpy()[..., None].astype(np.float64)
    expected = (sequence * mask).sum(axis=1) / mask.sum(axis=1)
    got, by_ids = run_many([
        ("serving_default", {"text": np.array(TEXTS, dtype=object)}),
        ("serve_ids", {k: v.numpy() for k, v in inputs.items()})])
    np.testing.assert_allclose(got["embedding"], expected, atol=1e-5)
    # The id signature gives the same answers for the same packed ids.
    # (Grappler optimises each signature's graph on its own: float sums may reorder.)
    np.testing.assert_allclose(by_ids["embedding"], got["embedding"], atol=1e-5)


def test_the_session_loader_reproduces_the_keras_model(exported, model_dir):
    """TF Serving's loader path (`SessionBundle`) in this process: the README tier's guard of
    the fresh-process test below."""
    _check_answers(model_dir, lambda requests: run_in_session_many(exported.path, requests))


# ~12 s more than the test above on a busy 2-core Zen 4 (a fresh TensorFlow process): the
# same answers, in a process without keras_bert; the README's tier keeps the test above and
# the op audit of every export (`tests/export/test_op_audit.py`).
@pytest.mark.slow
def test_fresh_process_reproduces_the_keras_model(exported, model_dir, tmp_path):
    _check_answers(model_dir, lambda requests: run_fresh_many(exported.path, requests,
                                                              tmp_path))


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


@pytest.mark.slow
def test_static_sequence_length(model_dir, exported, tmp_path):
    """`seq_length=16` pads every text to 16 tokens and truncates at 16 (`export_model`:
    "truncated at `seq_length`, else `max_length`"), BERT's way: `[CLS]`, the first 14
    wordpieces, `[SEP]`. Its answers are the dynamic export's (same model and pooling):
    for a text that fits, the same; for a longer one, the dynamic export's answer for those
    16 ids (what a dynamic export with `max_length=16` serves)."""
    static = export_model(model_dir.path, str(tmp_path / "s"), seq_length=16, pooling="mean",
                          target=None)
    loaded = tf.saved_model.load(static.path)
    spec = loaded.signatures["serve_ids"].structured_input_signature[1]
    assert spec["input_word_ids"].shape.as_list() == [None, 16]
    texts = tf.constant(TEXTS)
    out = loaded.signatures["serving_default"](text=texts)["embedding"].numpy()
    assert out.shape == (4, 384)
    ids = loaded.signatures["preprocess"](text=texts)
    assert ids["input_word_ids"].shape == (4, 16)
    dynamic = tf.saved_model.load(exported.path).signatures
    full = dynamic["preprocess"](text=texts)
    lengths = full["input_mask"].numpy().sum(1)
    fits = lengths <= 16
    assert fits.sum() >= 2 and not fits.all(), lengths  # both cases are exercised
    sep = model_dir.tokenizer().sep_id
    for i, length in enumerate(lengths):
        row, full_row = ids["input_word_ids"][i].numpy(), full["input_word_ids"][i].numpy()
        if fits[i]:  # the same ids, padded to 16
            np.testing.assert_array_equal(row, full_row[:16], err_msg=TEXTS[i])
            assert ids["input_mask"][i].numpy().sum() == length
        else:  # truncated: [CLS] + the first 14 wordpieces + [SEP]
            np.testing.assert_array_equal(row, [*full_row[:15], sep], err_msg=TEXTS[i][:40])
            assert ids["input_mask"][i].numpy().sum() == 16
    short = [text for text, fit in zip(TEXTS, fits, strict=True) if fit]
    want = dynamic["serving_default"](text=tf.constant(short))["embedding"].numpy()
    np.testing.assert_allclose(out[fits], want, atol=1e-4, err_msg="texts within 16 tokens")
    cut = dynamic["serve_ids"](**{k: tf.boolean_mask(v, ~fits) for k, v in ids.items()})
    np.testing.assert_allclose(out[~fits], cut["embedding"].numpy(), atol=1e-4,
                               err_msg="a text cut at 16 tokens")


@pytest.mark.slow  # over 30 s in CI's durations log docs/runs/ci-durations-2026-11-26-8c1e29d.md
def test_exports_embed_the_tokenizer_rules(model_dir, tmp_path):
    """A Hugging Face model keeps Hugging Face's rules in its export; `rules` overrides them.
    The text holds a 150-character word ([UNK] for huggingface, pieces for google) and a
    private-use character (dropped by huggingface, kept by google: an unknown word).
    Each export is read through TF Serving's Session path in this process (the rules are
    graph constants; `test_fresh_process_reproduces_the_keras_model` loads an export in a
    fresh process)."""
    assert model_dir.rules == "huggingface"
    texts = np.array(["sea" * 50 + " whale", "\ue000whale"], dtype=object)
    rows = {}
    for rules in ("huggingface", "google"):
        exported = export_model(model_dir.path, str(tmp_path / rules), target=None,
                                rules=None if rules == "huggingface" else rules)
        with SessionBundle(exported.path) as bundle:
            got = bundle.run("preprocess", {"text": texts})
        want = model_dir.with_rules(rules).preprocessor()(tf.constant(list(texts)))
        np.testing.assert_array_equal(got["input_word_ids"], want["input_word_ids"].numpy())
        rows[rules] = [[t for t in row if t] for row in got["input_word_ids"].tolist()]
    tokenizer = model_dir.tokenizer()
    cls, sep, unk = tokenizer.cls_id, tokenizer.sep_id, tokenizer.unk_id
    whale = tokenizer.token_to_id(["whale"]).numpy().tolist()
    assert rows["huggingface"] == [[cls, unk, *whale, sep], [cls, *whale, sep]]
    assert unk not in rows["google"][0] and len(rows["google"][0]) > 5
    assert rows["google"][1] == [cls, unk, sep]


def test_the_saved_model_refuses_quantize(exported, tiny_model_dir, tmp_path, capsys):
    """`quantize` is LiteRT's: a SavedModel export given one says why in one line, names the
    faster form it has, and writes nothing; `none` (the CLI's default) exports (the module's
    MiniLM export). The model refused: the session's tiny encoder (`tests/conftest.py`)."""
    from keras_bert.cli import main

    task_dir = tiny_model_dir
    for quantize in ("int8", "float16"):
        with pytest.raises(ValueError, match=r"^quantize: the SavedModel has no int8 form .*"
                                             r"--precision bfloat16"):
            export_model(task_dir, str(tmp_path / "out"), quantize=quantize)
    code = main(["export", task_dir, str(tmp_path / "cli"), "--quantize", "int8"])
    err = capsys.readouterr().err.strip()
    assert code != 0 and err.count("\n") == 0 and "--precision bfloat16" in err, err
    assert not (tmp_path / "out").exists() and not (tmp_path / "cli").exists()
    assert exported.version == 1 and os.path.isfile(os.path.join(exported.path,
                                                                  "saved_model.pb"))
