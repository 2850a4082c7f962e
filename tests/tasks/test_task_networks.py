"""Task models: each trains (loss goes down on a learnable rule), round-trips `.keras` and its
model directory, and keeps float32 logits under mixed precision; the embedder's poolings
match NumPy computations on the encoder's own outputs.

Cost: most of each training test is tracing the train step once; the `.keras` and model
directory round trips share one test per task kind (no second training run)."""

from __future__ import annotations

import keras
import numpy as np
import pytest

from keras_bert import BertConfig, BertEncoder
from keras_bert.tasks.labels import LabelVocab
from keras_bert.tasks.question_answering.network import BertQuestionAnswerer
from keras_bert.tasks.task_model import TextTaskModel
from keras_bert.tasks.text_classification.network import BertClassifier
from keras_bert.tasks.text_embedding.network import BertEmbedder
from keras_bert.tasks.token_classification.network import BertTokenClassifier
from keras_bert.tasks.token_classification.word_windows import IGNORE_LABEL
from keras_bert.text import BertPreprocessor, BertTokenizer
from tests.conftest import TINY_CONFIG_KWARGS
from tests.export.helpers import task_model

SEQ = 12
N = 32


@pytest.fixture(scope="module")
def config() -> BertConfig:
    """The tiny test config without dropout (deterministic steps)."""
    return BertConfig(**TINY_CONFIG_KWARGS, hidden_dropout=0.0, attention_dropout=0.0)


def _inputs(rng, n=N, seq=SEQ, vocab=101):
    """Random ids in 5..vocab-1 with [CLS]=2 first and random padding at the end."""
    ids = rng.integers(5, vocab, size=(n, seq)).astype("int32")
    lengths = rng.integers(seq // 2, seq + 1, size=n)
    mask = (np.arange(seq)[None, :] < lengths[:, None]).astype("int32")
    ids[:, 0] = 2
    ids = ids * mask
    return {"input_word_ids": ids, "input_mask": mask,
            "input_type_ids": np.zeros_like(ids)}


def _fit_reduces_loss(model, x, y, loss=None, steps=12):
    """Compiles with Adam, trains `steps` full-batch steps; returns (first, last) step loss."""
    model.compile(optimizer=keras.optimizers.Adam(3e-3), loss=loss, jit_compile=False)
    history = model.fit(x, y, batch_size=N, epochs=steps, verbose=0, shuffle=False)
    return history.history["loss"][0], history.history["loss"][-1]


def _round_trip(model, x, tmp_path):
    """Saves and reloads `model` as `.keras`; the reloaded outputs must be identical."""
    path = str(tmp_path / "model.keras")
    model.save(path)
    loaded = keras.saving.load_model(path)
    assert type(loaded) is type(model)
    keras.tree.map_structure(
        lambda a, b: np.testing.assert_allclose(np.asarray(a), np.asarray(b), atol=1e-5),
        model(x), loaded(x))
    return loaded


# ----- classifier / regressor -------------------------------------------------------------------


# 5 s on a 2-core Zen 4 (a fit): slow. The classifier network learning is guarded in the
# README's tier by tests/tasks/text_classification/test_text_classifier.py (its fit learns
# the rule and shuffled labels do not) and the regressor's and span QA's tests here.
@pytest.mark.slow
def test_classifier_trains(config, rng):
    # Rule: the token at position 1 is one of ids 5, 6, 7; the class is that id - 5.
    x = _inputs(rng)
    y = rng.integers(0, 3, size=N)
    x["input_word_ids"][:, 1] = 5 + y
    model = BertClassifier(BertEncoder(config), num_classes=3)
    assert model.output_shape == (None, 3) and not model.is_regression
    before, after = _fit_reduces_loss(
        model, x, y, keras.losses.SparseCategoricalCrossentropy(from_logits=True))
    assert after < 0.9 * before


def test_regressor_with_mean_pooling_trains(config, rng):
    # Rule: score = fraction of real tokens whose id is even.
    x = _inputs(rng)
    even = (x["input_word_ids"] % 2 == 0) * x["input_mask"]
    y = (even.sum(1) / x["input_mask"].sum(1)).astype("float32")
    model = BertClassifier(BertEncoder(config), num_classes=1, pooling="mean")
    assert model.is_regression and model.output_shape == (None, 1)
    assert not model.encoder.pooler.trainable  # unused under mean pooling
    before, after = _fit_reduces_loss(model, x, y, "mse")
    assert after < 0.9 * before


# ----- tagger ------------------------------------------------------------------------------------


# 4 s on a 2-core Zen 4 (a fit): slow. The tagger network learning with ignored positions
# ([CLS], padding, the pieces after a word's first) is guarded in the README's tier by
# tests/tasks/token_classification/test_token_classifier.py (its fit learns the tags and
# shuffled tags do not).
@pytest.mark.slow
def test_tagger_trains_with_ignored_positions(config, rng):
    # Rule: tag of a real token = id mod 4; [CLS] and padding are ignored.
    x = _inputs(rng)
    y = np.where(x["input_mask"] == 1, x["input_word_ids"] % 4, IGNORE_LABEL).astype("int32")
    y[:, 0] = IGNORE_LABEL
    model = BertTokenClassifier(BertEncoder(config), num_tags=4)
    assert model.output_shape == (None, None, 4)
    before, after = _fit_reduces_loss(
        model, x, y, keras.losses.SparseCategoricalCrossentropy(
            from_logits=True, ignore_class=IGNORE_LABEL))
    assert after < 0.9 * before


# ----- span QA -----------------------------------------------------------------------------------


def test_span_qa_trains_on_its_own_loss_and_masks_padding(config, rng):
    # Rule: the answer starts at the token with id 7 and ends one token later.
    x = _inputs(rng)
    starts = rng.integers(1, SEQ // 2 - 1, size=N)
    x["input_word_ids"][np.arange(N), starts] = 7
    x["input_word_ids"][:, 1:][x["input_word_ids"][:, 1:] == 7] = 8  # only one 7 per row ...
    x["input_word_ids"][np.arange(N), starts] = 7  # ... at the answer start
    y = {"start_positions": starts.astype("int32"),
         "end_positions": (starts + 1).astype("int32")}
    model = BertQuestionAnswerer(BertEncoder(config))
    out = model(x)
    assert set(out) == {"start_logits", "end_logits"}
    padded = x["input_mask"] == 0
    assert np.all(np.asarray(out["start_logits"])[padded] < -1000)
    before, after = _fit_reduces_loss(model, x, y)
    assert after < 0.9 * before


def test_span_qa_loss_is_the_mean_of_start_and_end_cross_entropy(config, rng):
    x = _inputs(rng, n=4)
    model = BertQuestionAnswerer(BertEncoder(config))
    out = model(x)
    start, end = np.array([0, 1, 2, 3]), np.array([1, 2, 3, 4])

    def ce(logits, labels):
        logits = np.asarray(logits, np.float64)
        log_p = logits - np.log(np.exp(logits - logits.max(1, keepdims=True)).sum(1,
                                keepdims=True)) - logits.max(1, keepdims=True)
        return -log_p[np.arange(len(labels)), labels].mean()

    expected = (ce(out["start_logits"], start) + ce(out["end_logits"], end)) / 2
    got = model.compute_loss(x, (start, end), out)
    np.testing.assert_allclose(float(got), expected, rtol=1e-5)


# ----- embedder ----------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def deep_config(config) -> BertConfig:
    """4 layers: enough for the last-four concatenation."""
    return config.replace(num_layers=4)


def test_embedder_concat_last4_is_the_last_four_layers_at_cls(deep_config, rng, tmp_path):
    encoder = BertEncoder(deep_config)
    x = _inputs(rng, n=5)
    layers = [np.asarray(t) for t in encoder(x)["encoder_outputs"]]
    expected = np.concatenate([layer[:, 0, :] for layer in layers[-4:]], axis=-1)
    embedder = BertEmbedder(encoder, pooling="concat_last4")
    got = np.asarray(embedder(x))
    assert got.shape == (5, 4 * deep_config.hidden_size) and got.dtype == np.float32
    np.testing.assert_allclose(got, expected, atol=1e-5)
    _round_trip(embedder, x, tmp_path)


def test_embedder_mean_cls_pooled_and_normalize(deep_config, rng):
    encoder = BertEncoder(deep_config)
    x = _inputs(rng, n=5)
    out = encoder(x)
    sequence, mask = np.asarray(out["sequence_output"]), x["input_mask"][:, :, None]
    mean = (sequence * mask).sum(1) / mask.sum(1)
    np.testing.assert_allclose(np.asarray(BertEmbedder(encoder, "mean")(x)), mean, atol=1e-5)
    np.testing.assert_allclose(np.asarray(BertEmbedder(encoder, "cls")(x)), sequence[:, 0],
                               atol=1e-6)
    np.testing.assert_allclose(np.asarray(BertEmbedder(encoder, "pooled")(x)),
                               np.asarray(out["pooled_output"]), atol=1e-6)
    unit = np.asarray(BertEmbedder(encoder, "mean", normalize=True)(x))
    np.testing.assert_allclose(np.linalg.norm(unit, axis=-1), 1.0, rtol=1e-5)
    np.testing.assert_allclose(unit, mean / np.linalg.norm(mean, axis=-1, keepdims=True),
                               atol=1e-5)


def test_embedder_rejects_bad_pooling_and_shallow_encoders(config):
    encoder = BertEncoder(config)  # 2 layers
    with pytest.raises(ValueError, match="at least 4 layers"):
        BertEmbedder(encoder, pooling="concat_last4")
    with pytest.raises(ValueError, match="Unknown pooling"):
        BertEmbedder(encoder, pooling="max")
    with pytest.raises(TypeError, match="needs a BertEncoder"):
        BertClassifier(keras.layers.Dense(2), 2)


# ----- precision, config, model directories ------------------------------------------------------


def test_logits_are_float32_under_mixed_precision(config, rng):
    encoder = BertEncoder(config, dtype="mixed_bfloat16")
    x = _inputs(rng, n=2)
    models = [BertClassifier(encoder, 2), BertTokenClassifier(encoder, 3),
              BertQuestionAnswerer(encoder), BertEmbedder(encoder, "mean")]
    for model in models:
        assert model.dtype_policy.name == "mixed_bfloat16"
        for tensor in keras.tree.flatten(model(x)):
            assert keras.backend.standardize_dtype(tensor.dtype) == "float32", model.name
    clone = BertClassifier.from_config(models[0].get_config())
    assert clone.encoder.blocks[0].compute_dtype == "bfloat16"


# Settings other than the defaults, so that a task block read back with one of them lost
# (the default in its place) differs from the one saved.
NOT_DEFAULTS = {"tag": {"doc_stride": 5, "dropout": 0.2},
                "squad": {"max_query_length": 5, "doc_stride": 3, "version_2": True,
                          "max_answer_length": 7, "dropout": 0.2},
                "embed": {"normalize": True}}


@pytest.mark.parametrize("kind", ["classify", "regress", "tag", "squad", "embed"])
def test_task_model_directory_round_trip(config, rng, tmp_path, kind):
    vocab = tmp_path / "vocab.txt"
    vocab.write_text("".join(f"{t}\n" for t in ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
                             + [f"w{i}" for i in range(96)]))
    encoder = BertEncoder(config)
    labels = LabelVocab(["a", "b", "c"]) if kind in ("classify", "tag") else None
    task = {"kind": kind, "seq_length": SEQ, "pooling": {"classify": "cls", "embed": "mean"}.get(
        kind), **NOT_DEFAULTS.get(kind, {})}
    tokenizer = BertTokenizer(str(vocab), lower_case=True)
    saved = task_model(task, encoder, BertPreprocessor(tokenizer), labels and labels.names)
    model = saved.network
    saved.save(str(tmp_path / "model"))
    loaded = TextTaskModel.load(str(tmp_path / "model"))
    assert loaded.kind == kind and loaded.preprocessor.seq_length == SEQ and loaded.labels == labels
    assert type(loaded.network) is type(model)
    x = _inputs(rng, n=3)
    keras.tree.map_structure(
        lambda a, b: np.testing.assert_allclose(np.asarray(a), np.asarray(b), atol=1e-6),
        model(x), loaded.network(x))
    assert loaded.preprocessor.tokenizer.vocab_size == 101
    # the same model through a `.keras` file: same class, same settings, same outputs
    reloaded = _round_trip(model, x, tmp_path)
    assert reloaded.get_config() == model.get_config()
    # The task model itself, from its directory and through its own `.keras` file: its
    # kind's class, with the task block it was saved with (the kinds' round-trip tests
    # that also compare answers after training are `slow` for the tagger, span QA and
    # the embedder; this is their fast guard).
    saved.save(str(tmp_path / "task.keras"))
    block = saved._task_block()
    given = {key: value for key, value in task.items() if value is not None}
    assert block == {**block, **given}  # the settings it was built with
    for again in (loaded, keras.saving.load_model(str(tmp_path / "task.keras"))):
        assert type(again) is type(saved) and again._task_block() == block, kind
        assert again.labels == labels and again.preprocessor.seq_length == SEQ
