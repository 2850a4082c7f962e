"""`TextEmbedder`: vectors from raw strings by the model's own pooling and normalization,
the same in `predict`, the export (read as TF Serving reads it) and `keras-bert encode`;
save / load / `.keras` round trips; paraphrase retrieval; what it refuses.

The reference vectors are computed here from the encoder's outputs in NumPy (masked mean,
[CLS], the pooler; L2 norm), not by the code under test.
"""

from __future__ import annotations

import io
import json
import sys

import keras
import numpy as np
import pytest
import tensorflow as tf

from keras_bert import FitSchedule, TextEmbedder
from keras_bert.checkpoints import load_model_dir
from keras_bert.cli import main
from keras_bert.export.session_bundle import SessionBundle
from keras_bert.tasks.task_dir import export_model, read_task_dir
from keras_bert.tasks.task_model import TextTaskModel
from keras_bert.tasks.text_embedding.model import SIMILARITY_SCALE
from tests.jobs.test_finetune import FILLER, WORDS

TEXTS = ["the whale swam", "a ship sailed far", "", "whale " * 40, "the sea the sea"]


def _reference(model_dir: str, texts, pooling: str, normalize: bool,
               seq_length: int = 16) -> np.ndarray:
    """The vectors by the definition: the encoder on the packed texts, pooled in NumPy."""
    source = load_model_dir(model_dir)
    inputs = source.preprocessor().with_length(None, seq_length)(tf.constant(texts))
    outputs = source.load_encoder()(inputs)
    if pooling == "pooled":
        vectors = outputs["pooled_output"].numpy()
    elif pooling == "cls":
        vectors = outputs["sequence_output"].numpy()[:, 0]
    else:
        mask = inputs["input_mask"].numpy()[..., None].astype(np.float64)
        vectors = (outputs["sequence_output"].numpy() * mask).sum(1) / mask.sum(1)
    if normalize:
        vectors = vectors / np.linalg.norm(vectors, axis=1, keepdims=True)
    return vectors


@pytest.fixture(scope="module")
def embedder(model_dir):
    return TextEmbedder.from_pretrained(model_dir, pooling="mean", normalize=True,
                                        seq_length=16, precision="float32")


def test_predict_is_the_models_pooling_and_normalization(embedder, model_dir):
    got = embedder.predict(TEXTS)
    assert got["embedding"].shape == (len(TEXTS), 32)
    np.testing.assert_allclose(got["embedding"], _reference(model_dir, TEXTS, "mean", True),
                               rtol=0, atol=1e-5)
    np.testing.assert_allclose(np.linalg.norm(got["embedding"], axis=1), 1.0, atol=1e-5)
    np.testing.assert_allclose(got["pooled_output"],
                               _reference(model_dir, TEXTS, "pooled", False), atol=1e-5)
    plain = TextEmbedder.from_pretrained(model_dir, pooling="cls", seq_length=16,
                                         precision="float32").predict(TEXTS)["embedding"]
    np.testing.assert_allclose(plain, _reference(model_dir, TEXTS, "cls", False), atol=1e-5)
    assert not np.allclose(np.linalg.norm(plain, axis=1), 1.0)  # the control: no normalizing


def test_export_and_encode_answer_what_predict_answered(embedder, tmp_path, capsys,
                                                        monkeypatch):
    want = embedder.predict(TEXTS)
    path = embedder.export(str(tmp_path / "served"))
    with SessionBundle(path) as bundle:  # TF Serving's Session path
        got = bundle.run("serving_default", {"text": np.array(TEXTS, dtype=object)})
    for name in ("embedding", "pooled_output"):
        np.testing.assert_allclose(got[name], want[name], rtol=0, atol=1e-5, err_msg=name)
    saved = embedder.save(str(tmp_path / "model"))
    monkeypatch.setattr(sys, "stdin", io.StringIO("".join(t + "\n" for t in TEXTS)))
    assert main(["encode", saved, "--seq-length", "16"]) == 0
    lines = capsys.readouterr().out.splitlines()
    np.testing.assert_allclose(np.array([json.loads(line) for line in lines]),
                               want["embedding"], atol=1e-5)
    # --pooling replaces the pooling and keeps the model's normalization
    monkeypatch.setattr(sys, "stdin", io.StringIO("".join(t + "\n" for t in TEXTS)))
    assert main(["encode", saved, "--seq-length", "16", "--pooling", "cls"]) == 0
    cls = np.array([json.loads(line) for line in capsys.readouterr().out.splitlines()])
    np.testing.assert_allclose(cls, _reference(saved, TEXTS, "cls", True), atol=1e-5)


def test_a_plain_encoder_directory_embeds_with_the_pooled_output(model_dir, tmp_path):
    """One default for a directory without an embed block, in every path: BERT's pooler."""
    loaded = TextTaskModel.load(model_dir)
    assert loaded.kind == "embed" and loaded.network.pooling == "pooled"
    path = export_model(model_dir, str(tmp_path / "plain"), target=None).path
    with SessionBundle(path) as bundle:
        got = bundle.run("serving_default", {"text": np.array(TEXTS, dtype=object)})
    want = _reference(model_dir, TEXTS, "pooled", False, seq_length=64)
    np.testing.assert_allclose(got["embedding"], want, atol=1e-5)
    np.testing.assert_allclose(got["pooled_output"], want, atol=1e-5)


# 2.8 s on a 2-core Zen 4 (three loads, each tracing `predict`): slow. In the README's
# tier: tests/tasks/test_task_networks.py::test_task_model_directory_round_trip[embed] (the
# directory, the `.keras` file and the task block) and the classifier's round trip of the
# same `TextTaskModel` code, answers compared.
@pytest.mark.slow
def test_model_directory_and_keras_file_round_trips(embedder, tmp_path):
    want = embedder.predict(TEXTS)["embedding"]
    path = embedder.save(str(tmp_path / "model"))
    task = read_task_dir(path).block
    assert (task["kind"], task["pooling"], task["normalize"]) == ("embed", "mean", True)
    embedder.save(str(tmp_path / "embedder.keras"))
    for loaded in (TextEmbedder.load(path), TextEmbedder.from_pretrained(path),
                   keras.saving.load_model(str(tmp_path / "embedder.keras"))):
        assert isinstance(loaded, TextEmbedder)
        assert (loaded.config.pooling, loaded.config.normalize) == ("mean", True)
        np.testing.assert_allclose(loaded.predict(TEXTS)["embedding"], want, atol=1e-6)


def test_retrieval_scores_paraphrases(embedder):
    texts = [" ".join(FILLER[i:i + 4]) for i in range(0, 24, 4)]
    same = embedder.evaluate([(t, t) for t in texts])  # each text is its own paraphrase
    assert same["retrieval_accuracy"] == 1.0 and same["pairs"] == len(texts)
    assert same["pair_cosine"] == pytest.approx(1.0, abs=1e-5)
    assert same["other_cosine"] < same["pair_cosine"]
    shuffled = embedder.evaluate([(t, texts[(i + 1) % len(texts)])
                                  for i, t in enumerate(texts)])
    assert shuffled["retrieval_accuracy"] < 1.0  # the control: wrong pairs


@pytest.mark.parametrize("call, error, match", [
    (lambda e: e.fit([("a", "b"), ("c", "d")], [1, 0]), ValueError, "no y"),
    (lambda e: e.fit(["a", "b"]), ValueError, "pair"),
    (lambda e: TextEmbedder.from_pretrained("random-tiny", reading="windows", seq_length=16).fit(
        [("a", "b"), ("c", "d")]), ValueError, "reading='truncate'"),
    (lambda e: e.evaluate([("a", "b"), ("c", "d")], [1, 0]), ValueError, "no y"),
    (lambda e: e.evaluate([("a", "b")]), ValueError, "at least 2 pairs"),
    (lambda e: TextEmbedder.from_pretrained("random-tiny", pooling="max"), ValueError,
     "unknown pooling 'max'"),
])
def test_bad_use_gets_one_clear_error(embedder, call, error, match):
    with pytest.raises(error, match=match):
        call(embedder)


# The learning task (the rule): a text is 5 words drawn from the first half of the test
# vocabulary's words; its paraphrase is the same text with every word replaced by its image
# under a fixed bijection onto the second half. The two sides share no word, so an untrained
# encoder's vectors barely retrieve the paraphrase (chance: 1 / pairs); learning the
# bijection retrieves it. Control: the same training on shuffled pairs (each text with
# another text's paraphrase) teaches nothing that retrieves held-out pairs.
_WORDS = [w for w in WORDS if w.isalpha()]
_SOURCE, _IMAGE = _WORDS[:len(_WORDS) // 2], _WORDS[len(_WORDS) // 2:2 * (len(_WORDS) // 2)]
_MAP = dict(zip(_SOURCE, _IMAGE, strict=True))


def _mapped_pairs(count: int, seed: int) -> list[tuple[str, str]]:
    rng = np.random.default_rng(seed)
    texts = [" ".join(rng.choice(_SOURCE, 5)) for _ in range(count)]
    return [(t, " ".join(_MAP[w] for w in t.split())) for t in texts]


def _fitted_retrieval(model_dir, pairs, held_out) -> tuple[float, float, list]:
    keras.utils.set_random_seed(0)  # dropout
    embedder = TextEmbedder.from_pretrained(model_dir, pooling="mean", seq_length=8,
                                            precision="float32")
    before = embedder.evaluate(held_out)["retrieval_accuracy"]
    embedder.compile(schedule=FitSchedule(learning_rate=3e-3))
    history = embedder.fit(pairs, epochs=2, batch_size=32, seed=1,
                           validation_data=held_out)
    return before, embedder.evaluate(held_out)["retrieval_accuracy"], history.history


def test_fit_learns_paraphrases_with_in_batch_negatives(model_dir):
    train, held_out = _mapped_pairs(512, seed=1), _mapped_pairs(64, seed=2)
    before, after, history = _fitted_retrieval(model_dir, train, held_out)
    assert before < 0.3 and after > 0.8, (before, after)
    assert history["loss"][-1] < history["loss"][0] and "val_loss" in history


# The control's own fit of 512 pairs, 5.5 s on a 2-core Zen 4: slow. In the README's tier
# the in-batch loss it relies on (a text scored against the other texts' paraphrases) is
# test_the_loss_is_softmax_cross_entropy_over_scaled_cosines, and the retrieval score's
# control (wrong pairs score lower) test_retrieval_scores_paraphrases.
@pytest.mark.slow
def test_fit_on_shuffled_pairs_learns_nothing_that_retrieves(model_dir):
    train, held_out = _mapped_pairs(512, seed=1), _mapped_pairs(64, seed=2)
    shuffled = [(t, train[(i + 1) % len(train)][1]) for i, (t, _) in enumerate(train)]
    _, control, _ = _fitted_retrieval(model_dir, shuffled, held_out)
    assert control < 0.3, control


def test_the_loss_is_softmax_cross_entropy_over_scaled_cosines(embedder):
    rng = np.random.default_rng(0)
    text, paraphrase = rng.normal(size=(2, 5, 32)).astype(np.float32)
    got = float(embedder.compute_loss(y_pred=np.stack([text, paraphrase])))
    unit = [v / np.linalg.norm(v, axis=1, keepdims=True) for v in (text, paraphrase)]
    logits = SIMILARITY_SCALE * unit[0] @ unit[1].T
    log_softmax = logits - np.log(np.exp(logits).sum(axis=1, keepdims=True))
    assert got == pytest.approx(-np.mean(np.diag(log_softmax)), rel=1e-5)
