"""`BertEncoder`: the full forward pass against NumPy, masks, tracing, saving, training."""

from __future__ import annotations

import keras
import numpy as np
import pytest
import tensorflow as tf

from keras_bert import BertConfig, BertEncoder
from keras_bert.models import INPUT_NAMES
from tests.support import numpy_bert as nb

ATOL = 1e-4
OUTPUT_KEYS = {"sequence_output", "pooled_output", "encoder_outputs", "default"}


@pytest.fixture(scope="module")
def encoder(tiny_config):
    """A tiny encoder (dropout 0.1) with random weights; shared, so do not train it."""
    model = BertEncoder(tiny_config)
    nb.randomize_weights(model, np.random.default_rng(42))
    return model


def np_(x):
    return keras.ops.convert_to_numpy(x)


def cosine(a, b):
    a, b = np.asarray(a, np.float64), np.asarray(b, np.float64)
    return (a * b).sum(-1) / np.linalg.norm(a, axis=-1) / np.linalg.norm(b, axis=-1)


# ----- forward pass ----------------------------------------------------------------------------


def test_forward_matches_numpy_reference(encoder, tiny_config, rng):
    inputs = nb.random_inputs(tiny_config, rng, [12, 5, 1, 9])
    assert inputs["input_type_ids"].max() == 1 and inputs["input_mask"].min() == 0
    out = encoder(inputs)
    ref = nb.encoder(encoder, **inputs)
    for key in ("sequence_output", "pooled_output", "default"):
        np.testing.assert_allclose(np_(out[key]), ref[key], rtol=0, atol=ATOL, err_msg=key)
    for got, want in zip(out["encoder_outputs"], ref["encoder_outputs"], strict=True):
        np.testing.assert_allclose(np_(got), want, rtol=0, atol=ATOL)


def test_output_structure(encoder, tiny_config, rng):
    out = encoder(nb.random_inputs(tiny_config, rng, [7, 4]))
    assert set(out) == OUTPUT_KEYS
    assert tuple(out["sequence_output"].shape) == (2, 7, tiny_config.hidden_size)
    assert tuple(out["pooled_output"].shape) == (2, tiny_config.hidden_size)
    assert len(out["encoder_outputs"]) == tiny_config.num_layers
    for layer_output in out["encoder_outputs"]:
        assert tuple(layer_output.shape) == (2, 7, tiny_config.hidden_size)
    np.testing.assert_array_equal(np_(out["encoder_outputs"][-1]), np_(out["sequence_output"]))
    np.testing.assert_array_equal(np_(out["default"]), np_(out["pooled_output"]))
    # The blocks' outputs are distinct tensors, not one repeated.
    assert np.abs(np_(out["encoder_outputs"][0]) - np_(out["encoder_outputs"][1])).max() > 1e-3


def test_input_names_and_layers(encoder, tiny_config):
    assert INPUT_NAMES == ("input_word_ids", "input_mask", "input_type_ids")
    assert set(encoder.input) == set(INPUT_NAMES)
    assert len(encoder.blocks) == tiny_config.num_layers
    assert encoder.config == tiny_config
    assert encoder.token_embedding is encoder.embeddings.word_embeddings
    assert tuple(encoder.token_embedding.embeddings.shape) == (tiny_config.vocab_size,
                                                               tiny_config.hidden_size)


def test_encoder_is_deterministic_at_inference(encoder, tiny_config, rng):
    inputs = nb.random_inputs(tiny_config, rng, [9, 9])
    a, b = encoder(inputs), encoder(inputs, training=False)
    np.testing.assert_array_equal(np_(a["pooled_output"]), np_(b["pooled_output"]))
    trained = encoder(inputs, training=True)
    assert np.abs(np_(trained["sequence_output"]) - np_(a["sequence_output"])).max() > 1e-3


def test_construction_from_dict_and_preset():
    small = dict(vocab_size=50, max_position_embeddings=16)
    model = BertEncoder.from_preset("tiny", **small)
    assert model.config == BertConfig.from_preset("tiny", **small)
    assert len(model.blocks) == 2 and model.pooler.hidden_size == 128
    from_dict = BertEncoder(model.config.to_dict())
    assert from_dict.config == model.config
    assert from_dict.count_params() == model.count_params()


def test_parameter_count(tiny_config):
    # Counted by hand from the BERT architecture.
    v, h, i, p, t, n = (tiny_config.vocab_size, tiny_config.hidden_size,
                        tiny_config.intermediate_size, tiny_config.max_position_embeddings,
                        tiny_config.type_vocab_size, tiny_config.num_layers)
    embeddings = (v + p + t) * h + 2 * h
    block = 4 * (h * h + h) + 2 * h + (h * i + i) + (i * h + h) + 2 * h
    pooler = h * h + h
    assert BertEncoder(tiny_config).count_params() == embeddings + n * block + pooler


# ----- masks -----------------------------------------------------------------------------------


def _pad(inputs, num_padding, rng, vocab_size):
    """Appends `num_padding` positions with mask 0 and random word and segment ids."""
    if not num_padding:
        return dict(inputs)
    batch = inputs["input_word_ids"].shape[0]
    pad = {
        "input_word_ids": rng.integers(0, vocab_size, (batch, num_padding)),
        "input_mask": np.zeros((batch, num_padding)),
        "input_type_ids": rng.integers(0, 2, (batch, num_padding)),
    }
    return {k: np.concatenate([v, pad[k]], axis=1).astype("int32") for k, v in inputs.items()}


def test_padding_changes_nothing_for_real_tokens(encoder, tiny_config, rng):
    sentence = nb.random_inputs(tiny_config, rng, [6])
    outputs = [encoder(_pad(sentence, n, rng, tiny_config.vocab_size)) for n in (0, 3, 20)]
    assert [tuple(o["sequence_output"].shape)[1] for o in outputs] == [6, 9, 26]
    unpadded = outputs[0]
    for padded in outputs[1:]:
        np.testing.assert_allclose(np_(padded["sequence_output"])[:, :6],
                                   np_(unpadded["sequence_output"]), rtol=0, atol=1e-5)
        np.testing.assert_allclose(np_(padded["pooled_output"]),
                                   np_(unpadded["pooled_output"]), rtol=0, atol=1e-5)


def test_padding_in_a_batch_of_different_lengths(encoder, tiny_config, rng):
    # Each row of a padded batch equals that sentence encoded alone.
    batch = nb.random_inputs(tiny_config, rng, [3, 11, 6])
    out = encoder(batch)
    for row, n in enumerate([3, 11, 6]):
        alone = encoder({k: v[row:row + 1, :n] for k, v in batch.items()})
        np.testing.assert_allclose(np_(out["sequence_output"])[row, :n],
                                   np_(alone["sequence_output"])[0], rtol=0, atol=1e-5)
        np.testing.assert_allclose(np_(out["pooled_output"])[row],
                                   np_(alone["pooled_output"])[0], rtol=0, atol=1e-5)


def test_ids_at_padded_positions_change_nothing(encoder, tiny_config, rng):
    inputs = nb.random_inputs(tiny_config, rng, [10, 4, 7], seq_length=16)
    other = {k: v.copy() for k, v in inputs.items()}
    padded = inputs["input_mask"] == 0
    other["input_word_ids"][padded] = rng.integers(0, tiny_config.vocab_size, padded.sum())
    other["input_type_ids"][padded] = 1 - other["input_type_ids"][padded]
    a, b = encoder(inputs), encoder(other)
    real = ~padded
    np.testing.assert_allclose(np_(b["sequence_output"])[real], np_(a["sequence_output"])[real],
                               rtol=0, atol=1e-5)
    np.testing.assert_allclose(np_(b["pooled_output"]), np_(a["pooled_output"]), rtol=0,
                               atol=1e-5)
    # Whereas the same change at a real position does change the output.
    other["input_word_ids"][0, 3] = (inputs["input_word_ids"][0, 3] + 1) % tiny_config.vocab_size
    c = encoder(other)
    assert np.abs(np_(c["pooled_output"])[0] - np_(a["pooled_output"])[0]).max() > 1e-4


def test_the_mask_is_used(encoder, tiny_config, rng):
    inputs = nb.random_inputs(tiny_config, rng, [5], seq_length=12)
    all_real = dict(inputs, input_mask=np.ones_like(inputs["input_mask"]))
    a, b = encoder(inputs), encoder(all_real)
    assert np.abs(np_(a["pooled_output"]) - np_(b["pooled_output"])).max() > 1e-4


# ----- execution modes -------------------------------------------------------------------------


def test_tf_function_with_dynamic_batch_and_length(encoder, tiny_config, rng):
    traces = []
    spec = {name: tf.TensorSpec([None, None], tf.int32, name=name) for name in INPUT_NAMES}

    @tf.function(input_signature=[spec])
    def serve(inputs):
        traces.append(1)
        return encoder(inputs)

    for lengths in ([7, 3], [19, 1, 12]):
        inputs = nb.random_inputs(tiny_config, rng, lengths)
        graph, eager = serve(inputs), encoder(inputs)
        assert tuple(graph["sequence_output"].shape) == (len(lengths), max(lengths),
                                                        tiny_config.hidden_size)
        for key in ("sequence_output", "pooled_output"):
            np.testing.assert_allclose(np_(graph[key]), np_(eager[key]), rtol=0, atol=1e-5)
    assert len(traces) == 1  # one trace serves both shapes


def test_symbolic_use_inside_another_model(encoder, tiny_config, rng):
    inputs = {name: keras.Input(shape=(None,), dtype="int32", name=name)
              for name in INPUT_NAMES}
    outputs = encoder(inputs)
    assert tuple(outputs["sequence_output"].shape) == (None, None, tiny_config.hidden_size)
    head = keras.layers.Dense(3, name="head")
    model = keras.Model(inputs, head(outputs["pooled_output"]))
    data = nb.random_inputs(tiny_config, rng, [8, 5, 2])
    logits = model.predict(data, verbose=0)
    assert logits.shape == (3, 3)
    expected = np_(head(encoder(data)["pooled_output"]))
    np.testing.assert_allclose(logits, expected, rtol=0, atol=1e-5)


def test_predict(encoder, tiny_config, rng):
    data = nb.random_inputs(tiny_config, rng, [8, 5, 2, 8, 3])
    predicted = encoder.predict(data, batch_size=2, verbose=0)
    assert set(predicted) == OUTPUT_KEYS
    eager = encoder(data)
    for key in ("sequence_output", "pooled_output", "default"):
        np.testing.assert_allclose(predicted[key], np_(eager[key]), rtol=0, atol=1e-5)
    assert len(predicted["encoder_outputs"]) == tiny_config.num_layers


@pytest.mark.filterwarnings("ignore:You are using a softmax over axis -1")  # seq == 1
@pytest.mark.parametrize("seq", [1, 2, 31, 64])
def test_any_length_up_to_max_positions(encoder, tiny_config, rng, seq):
    inputs = nb.random_inputs(tiny_config, rng, [seq, max(1, seq // 2)])
    out = encoder(inputs)
    ref = nb.encoder(encoder, **inputs)
    np.testing.assert_allclose(np_(out["sequence_output"]), ref["sequence_output"], rtol=0,
                               atol=ATOL)
    np.testing.assert_allclose(np_(out["pooled_output"]), ref["pooled_output"], rtol=0, atol=ATOL)


def test_too_long_is_a_clear_error(encoder, tiny_config, rng):
    inputs = nb.random_inputs(tiny_config, rng, [tiny_config.max_position_embeddings + 1])
    with pytest.raises(ValueError, match="max_position_embeddings"):
        encoder(inputs)
    # In a graph with a dynamic length the check happens at run time, but still fails.
    spec = {name: tf.TensorSpec([None, None], tf.int32) for name in INPUT_NAMES}
    serve = tf.function(encoder, input_signature=[spec])
    with pytest.raises((ValueError, tf.errors.InvalidArgumentError)):
        serve(inputs)


# ----- saving ----------------------------------------------------------------------------------


def test_keras_save_load_round_trip(encoder, tiny_config, rng, tmp_path):
    path = tmp_path / "encoder.keras"
    encoder.save(path)
    loaded = keras.saving.load_model(path)
    assert isinstance(loaded, BertEncoder)
    assert loaded.config == tiny_config
    assert len(loaded.blocks) == tiny_config.num_layers
    inputs = nb.random_inputs(tiny_config, rng, [10, 3])
    a, b = encoder(inputs), loaded(inputs)
    for key in ("sequence_output", "pooled_output"):
        np.testing.assert_array_equal(np_(b[key]), np_(a[key]))
    for x, y in zip(encoder.weights, loaded.weights, strict=True):
        assert x.path == y.path
        np.testing.assert_array_equal(np_(x), np_(y))


def test_get_config_round_trip(encoder, tiny_config):
    config = encoder.get_config()
    clone = BertEncoder.from_config(config)
    assert clone.config == tiny_config and clone.name == encoder.name
    assert clone.get_config() == config


# ----- training --------------------------------------------------------------------------------


def _classifier(config, num_classes=2):
    encoder = BertEncoder(config)
    inputs = {name: keras.Input(shape=(None,), dtype="int32", name=name)
              for name in INPUT_NAMES}
    logits = keras.layers.Dense(num_classes)(encoder(inputs)["pooled_output"])
    return keras.Model(inputs, logits)


# With dropout: 4.6 s on a 2-core Zen 4, slow; without it stays in the README's tier, and
# the task tests there train the dropout-0.1 tiny model (tests/support/tiny_data.py).
@pytest.mark.parametrize("dropout", [False, pytest.param(True, marks=pytest.mark.slow)])
def test_fit_reduces_the_loss(tiny_config, tiny_config_no_dropout, rng, dropout):
    config = tiny_config if dropout else tiny_config_no_dropout
    model = _classifier(config)
    model.compile(optimizer=keras.optimizers.Adam(1e-3),
                  loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True),
                  jit_compile=False)
    assert model.jit_compile is False
    data = nb.random_inputs(config, rng, rng.integers(4, 13, size=16))
    labels = rng.integers(0, 2, size=16)
    before = model.evaluate(data, labels, batch_size=16, verbose=0)
    history = model.fit(data, labels, batch_size=8, epochs=3, verbose=0, shuffle=False)
    after = model.evaluate(data, labels, batch_size=16, verbose=0)
    assert len(history.history["loss"]) == 3
    assert np.all(np.isfinite(history.history["loss"]))
    assert after < 0.95 * before
    probs = model.predict(data, verbose=0)
    assert probs.shape == (16, 2)


# ----- mixed precision -------------------------------------------------------------------------


def test_mixed_bfloat16_is_close_to_float32(encoder, tiny_config, rng):
    mixed = BertEncoder(tiny_config, dtype="mixed_bfloat16")
    assert mixed.blocks[0].compute_dtype == "bfloat16"
    assert all(w.dtype == "float32" for w in mixed.weights)  # variables stay float32
    mixed.set_weights(encoder.get_weights())
    inputs = nb.random_inputs(tiny_config, rng, [12, 5, 9])
    full, half = encoder(inputs), mixed(inputs)
    assert half["sequence_output"].dtype == "bfloat16"
    pooled_full = np_(full["pooled_output"])
    pooled_half = np_(keras.ops.cast(half["pooled_output"], "float32"))
    assert np.all(np.isfinite(pooled_half))
    assert cosine(pooled_half, pooled_full).min() >= 0.99
    # bfloat16 really was used: the outputs are not bit-identical.
    assert np.abs(pooled_half - pooled_full).max() > 0


def test_mixed_precision_survives_save_load(tiny_config, tmp_path, rng):
    mixed = BertEncoder(tiny_config, dtype="mixed_bfloat16")
    nb.randomize_weights(mixed, rng)  # no zero biases or unit LayerNorm scales left
    inputs = nb.random_inputs(tiny_config, rng, [12, 5, 9])
    before = mixed(inputs)
    path = tmp_path / "mixed.keras"
    mixed.save(path)
    loaded = keras.saving.load_model(path)
    assert loaded.blocks[0].compute_dtype == "bfloat16"
    # Every weight comes back under its name with its value (and stays float32).
    assert [w.path for w in loaded.weights] == [w.path for w in mixed.weights]
    for saved, restored in zip(mixed.weights, loaded.weights, strict=True):
        assert restored.dtype == "float32", restored.path
        np.testing.assert_array_equal(np_(restored), np_(saved), err_msg=restored.path)
    # ... and the loaded model answers as the saved one did, in bfloat16.
    after = loaded(inputs)
    assert set(after) == OUTPUT_KEYS and after["sequence_output"].dtype == "bfloat16"
    assert len(after["encoder_outputs"]) == tiny_config.num_layers
    for key in sorted(OUTPUT_KEYS):
        for k, (a, b) in enumerate(zip(keras.tree.flatten(after[key]),
                                       keras.tree.flatten(before[key]), strict=True)):
            np.testing.assert_array_equal(np_(keras.ops.cast(a, "float32")),
                                          np_(keras.ops.cast(b, "float32")),
                                          err_msg=f"{key} [{k}]")
