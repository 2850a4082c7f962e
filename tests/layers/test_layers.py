"""The BERT layers against the independent NumPy reference in `tests/support/numpy_bert.py`."""

from __future__ import annotations

import keras
import numpy as np
import pytest

from keras_bert.layers import BertEmbeddings, BertPooler, BertSelfAttention, BertTransformerBlock
from keras_bert.layers.activations import get_activation
from tests.support import numpy_bert as nb

ATOL = 1e-5
BATCH, SEQ = 3, 10
LENGTHS = [10, 6, 1]  # one full row, one padded row, one with only [CLS]


# ----- factories -------------------------------------------------------------------------------


def make_embeddings(config, rng, dropout=None):
    layer = BertEmbeddings(config.vocab_size, config.hidden_size, config.max_position_embeddings,
                           config.type_vocab_size, config.initializer_range,
                           config.layer_norm_epsilon,
                           config.hidden_dropout if dropout is None else dropout)
    layer.build()
    nb.randomize_weights(layer, rng)
    return layer


def make_attention(config, rng, dropout=None):
    layer = BertSelfAttention(config.hidden_size, config.num_heads, config.initializer_range,
                              config.attention_dropout if dropout is None else dropout)
    layer.build((None, None, config.hidden_size))
    nb.randomize_weights(layer, rng)
    return layer


def make_block(config, rng, dropout=None, hidden_act=None):
    rate = {} if dropout is None else dict(hidden_dropout=dropout, attention_dropout=dropout)
    layer = BertTransformerBlock(
        config.hidden_size, config.num_heads, config.intermediate_size,
        hidden_act=hidden_act or config.hidden_act,
        hidden_dropout=rate.get("hidden_dropout", config.hidden_dropout),
        attention_dropout=rate.get("attention_dropout", config.attention_dropout),
        initializer_range=config.initializer_range,
        layer_norm_epsilon=config.layer_norm_epsilon)
    layer.build((None, None, config.hidden_size))
    nb.randomize_weights(layer, rng)
    return layer


def make_pooler(config, rng):
    layer = BertPooler(config.hidden_size, config.initializer_range)
    layer.build((None, None, config.hidden_size))
    nb.randomize_weights(layer, rng)
    return layer


def hidden_states(config, rng, batch=BATCH, seq=SEQ):
    return rng.standard_normal((batch, seq, config.hidden_size)).astype("float32")


@pytest.fixture
def inputs(tiny_config, rng):
    return nb.random_inputs(tiny_config, rng, LENGTHS)


def np_(x):
    return keras.ops.convert_to_numpy(x)


# ----- activations -----------------------------------------------------------------------------

GRID = np.linspace(-6.0, 6.0, 1201).astype("float32")


# "gelu": the name a layer config saved before the names said which GELU holds (Keras' erf).
@pytest.mark.parametrize("name", ["gelu_exact", "gelu"])
def test_gelu_exact_is_the_erf_gelu(name):
    exact = nb.gelu_exact(GRID)
    tanh_approx = nb.gelu_tanh(GRID)
    # The two GELUs differ by ~2e-4 at most: this test can tell them apart.
    assert np.abs(exact - tanh_approx).max() > 1e-4
    ours = np_(get_activation(name)(keras.ops.convert_to_tensor(GRID)))
    np.testing.assert_allclose(ours, exact, rtol=0, atol=2e-6)


def test_gelu_approximate_is_the_tanh_gelu():
    ours = np_(get_activation("gelu_approximate")(keras.ops.convert_to_tensor(GRID)))
    np.testing.assert_allclose(ours, nb.gelu_tanh(GRID), rtol=0, atol=2e-6)
    assert np.abs(ours - nb.gelu_exact(GRID)).max() > 1e-4


@pytest.mark.parametrize("name", ["relu", "tanh", "silu"])
def test_other_activations(name):
    ours = np_(get_activation(name)(keras.ops.convert_to_tensor(GRID)))
    np.testing.assert_allclose(ours, nb.ACTIVATIONS[name](GRID.astype(np.float64)),
                               rtol=0, atol=2e-6)


def test_block_uses_exact_gelu_for_gelu_exact(tiny_config, rng):
    block = make_block(tiny_config, rng, hidden_act="gelu_exact")
    # Spread the pre-activations over [-5, 5], where the two GELUs differ most.
    h = 3.0 * hidden_states(tiny_config, rng)
    ours = np_(block.intermediate(h))
    pre = h.astype(np.float64) @ nb.to_numpy(block.intermediate.kernel) + nb.to_numpy(
        block.intermediate.bias)
    np.testing.assert_allclose(ours, nb.gelu_exact(pre), rtol=0, atol=ATOL)
    assert np.abs(ours - nb.gelu_tanh(pre)).max() > 1e-4


def test_block_uses_tanh_gelu_for_gelu_approximate(tiny_config, rng):
    block = make_block(tiny_config, rng, hidden_act="gelu_approximate")
    h = 3.0 * hidden_states(tiny_config, rng)
    pre = h.astype(np.float64) @ nb.to_numpy(block.intermediate.kernel) + nb.to_numpy(
        block.intermediate.bias)
    np.testing.assert_allclose(np_(block.intermediate(h)), nb.gelu_tanh(pre), rtol=0, atol=ATOL)


# ----- embeddings ------------------------------------------------------------------------------


def test_embeddings_match_reference(tiny_config, rng, inputs):
    layer = make_embeddings(tiny_config, rng)
    out = layer(inputs["input_word_ids"], inputs["input_type_ids"])
    assert tuple(out.shape) == (BATCH, SEQ, tiny_config.hidden_size)
    expected = nb.embeddings(layer, inputs["input_word_ids"], inputs["input_type_ids"])
    np.testing.assert_allclose(np_(out), expected, rtol=0, atol=ATOL)


def test_embeddings_use_positions_and_segments(tiny_config, rng):
    layer = make_embeddings(tiny_config, rng)
    ids = np.full((1, 5), 7, dtype="int32")  # the same token everywhere
    zeros = np.zeros_like(ids)
    out = np_(layer(ids, zeros))
    # Positions make equal tokens differ ...
    assert np.abs(out[0, 0] - out[0, 1]).max() > 1e-3
    # ... and segments change every position.
    out_b = np_(layer(ids, np.ones_like(ids)))
    assert np.abs(out - out_b).max(axis=-1).min() > 1e-3


@pytest.mark.parametrize("seq", [1, 2, 17, 64])
def test_embeddings_any_length_up_to_max(tiny_config, rng, seq):
    layer = make_embeddings(tiny_config, rng)
    ids = rng.integers(0, tiny_config.vocab_size, (2, seq)).astype("int32")
    types = rng.integers(0, 2, (2, seq)).astype("int32")
    out = layer(ids, types)
    assert tuple(out.shape) == (2, seq, tiny_config.hidden_size)
    np.testing.assert_allclose(np_(out), nb.embeddings(layer, ids, types), rtol=0, atol=ATOL)
    assert layer.compute_output_shape((2, seq), (2, seq)) == (2, seq, tiny_config.hidden_size)


def test_embeddings_too_long(tiny_config, rng):
    layer = make_embeddings(tiny_config, rng)
    ids = np.zeros((1, tiny_config.max_position_embeddings + 1), dtype="int32")
    with pytest.raises(ValueError, match="max_position_embeddings"):
        layer(ids, ids)


def test_embeddings_word_table_is_exposed(tiny_config, rng):
    layer = make_embeddings(tiny_config, rng)
    assert tuple(layer.word_embeddings.embeddings.shape) == (tiny_config.vocab_size,
                                                             tiny_config.hidden_size)


# ----- attention -------------------------------------------------------------------------------


def test_attention_without_mask_matches_reference(tiny_config, rng):
    layer = make_attention(tiny_config, rng)
    x = hidden_states(tiny_config, rng)
    out, probs = layer(x, return_attention_scores=True)
    assert tuple(out.shape) == x.shape
    assert tuple(probs.shape) == (BATCH, tiny_config.num_heads, SEQ, SEQ)
    expected, expected_probs = nb.self_attention(layer, x)
    np.testing.assert_allclose(np_(out), expected, rtol=0, atol=ATOL)
    np.testing.assert_allclose(np_(probs), expected_probs, rtol=0, atol=ATOL)
    np.testing.assert_allclose(np_(layer(x)), np_(out), rtol=0, atol=1e-6)


def test_attention_with_mask_matches_reference(tiny_config, rng, inputs):
    layer = make_attention(tiny_config, rng)
    x = hidden_states(tiny_config, rng)
    mask = inputs["input_mask"]
    out, probs = layer(x, padding_mask=mask, return_attention_scores=True)
    expected, expected_probs = nb.self_attention(layer, x, mask)
    np.testing.assert_allclose(np_(out), expected, rtol=0, atol=ATOL)
    np.testing.assert_allclose(np_(probs), expected_probs, rtol=0, atol=ATOL)
    probs = np_(probs)
    np.testing.assert_allclose(probs.sum(-1), 1.0, rtol=0, atol=1e-5)
    # Padded keys get exactly zero weight, for every head and query.
    assert np.all(probs[np.broadcast_to(mask[:, None, None, :] == 0, probs.shape)] == 0.0)
    # And the mask matters: without it the padded rows come out differently.
    unmasked, _ = nb.self_attention(layer, x)
    assert np.abs(unmasked[1] - expected[1]).max() > 1e-3


def _softmax64(scores):
    e = np.exp(scores - scores.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


def test_mixed_precision_scores_are_float32(rng):
    # 512 tokens and large scores (|q.k| ~ 10): a bfloat16 product would round every score
    # to 8 significant bits. Reference: the layer's own bfloat16 query and key (what the
    # compute dtype gives), their product and the softmax in float64.
    # head_size 32: the 1/sqrt(32) score scale is not a power of 2, so it must multiply the
    # float32 query (a bfloat16 scale would be off by ~0.2%; the reference scales in float64).
    hidden, heads, seq = 64, 2, 512
    layer = BertSelfAttention(hidden, heads, dropout=0.0, dtype="mixed_bfloat16")
    layer.build((1, seq, hidden))
    for dense in (layer.query, layer.key):
        dense.kernel.assign(rng.normal(0, 0.6, (hidden, hidden)).astype("float32"))
    # bfloat16 activations, as the encoder's embeddings hand them to its first layer.
    x = keras.ops.cast(rng.normal(0, 1, (1, seq, hidden)).astype("float32"), "bfloat16")
    mask = np.ones((1, seq), np.int32)
    mask[0, 400:] = 0
    _, probs = layer(x, padding_mask=mask, return_attention_scores=True)
    assert probs.dtype == "float32"
    tokens = keras.ops.reshape(x, (seq, hidden))
    q, k = layer.query(tokens), layer.key(tokens)
    assert q.dtype == k.dtype == "bfloat16"
    q, k = (np.asarray(keras.ops.cast(t, "float32"), np.float64).reshape(seq, heads, -1)
            .transpose(1, 0, 2) for t in (q, k))
    scores = (q / np.sqrt(hidden // heads)) @ k.transpose(0, 2, 1)
    scores += np.where(mask[0] == 1, 0.0, -1e9)[None, None, :]
    assert np.abs(scores[..., :400]).max() > 10
    want = _softmax64(scores)
    error = np.abs(np.asarray(probs[0], np.float64) - want).max()
    assert error < 2e-5
    # What a product in bfloat16 would give (the scores rounded to bfloat16): far worse.
    rounded = np.asarray(keras.ops.cast(keras.ops.cast(scores, "bfloat16"), "float32"),
                         np.float64)
    assert np.abs(_softmax64(rounded) - want).max() > 100 * error


def test_attention_all_ones_mask_equals_no_mask(tiny_config, rng):
    layer = make_attention(tiny_config, rng)
    x = hidden_states(tiny_config, rng)
    ones = np.ones((BATCH, SEQ), dtype="int32")
    np.testing.assert_allclose(np_(layer(x, padding_mask=ones)), np_(layer(x)), rtol=0, atol=1e-6)


def test_attention_ignores_padded_values(tiny_config, rng, inputs):
    layer = make_attention(tiny_config, rng)
    mask = inputs["input_mask"]
    x = hidden_states(tiny_config, rng)
    x2 = np.where(mask[..., None] == 1, x, 100.0 * hidden_states(tiny_config, rng))
    out, out2 = np_(layer(x, padding_mask=mask)), np_(layer(x2, padding_mask=mask))
    real = mask == 1
    np.testing.assert_allclose(out2[real], out[real], rtol=0, atol=ATOL)


def test_attention_rejects_indivisible_heads():
    with pytest.raises(ValueError, match="divisible"):
        BertSelfAttention(30, 4)


# ----- transformer block -----------------------------------------------------------------------


@pytest.mark.parametrize("hidden_act", ["gelu_exact", "gelu_approximate", "relu", "tanh", "silu"])
@pytest.mark.parametrize("masked", [False, True])
def test_block_matches_reference(tiny_config, rng, inputs, hidden_act, masked):
    layer = make_block(tiny_config, rng, hidden_act=hidden_act)
    x = hidden_states(tiny_config, rng)
    mask = inputs["input_mask"] if masked else None
    out = layer(x, padding_mask=mask)
    assert tuple(out.shape) == x.shape
    np.testing.assert_allclose(np_(out), nb.transformer_block(layer, x, mask), rtol=0, atol=ATOL)


def test_block_returns_attention_probs(tiny_config, rng, inputs):
    layer = make_block(tiny_config, rng)
    x = hidden_states(tiny_config, rng)
    mask = inputs["input_mask"]
    out, probs = layer(x, padding_mask=mask, return_attention_scores=True)
    np.testing.assert_allclose(np_(out), np_(layer(x, padding_mask=mask)), rtol=0, atol=1e-6)
    _, expected_probs = nb.self_attention(layer.attention, x, mask)
    np.testing.assert_allclose(np_(probs), expected_probs, rtol=0, atol=ATOL)


def test_block_uses_its_layer_norm_epsilon(tiny_config, rng):
    config = tiny_config.replace(layer_norm_epsilon=0.5)  # large enough to matter
    layer = make_block(config, rng)
    x = 0.3 * hidden_states(config, rng)
    expected = nb.transformer_block(layer, x)
    np.testing.assert_allclose(np_(layer(x)), expected, rtol=0, atol=ATOL)
    assert layer.attention_layer_norm.epsilon == 0.5 and layer.output_layer_norm.epsilon == 0.5


# ----- pooler ----------------------------------------------------------------------------------


def test_pooler_matches_reference(tiny_config, rng):
    layer = make_pooler(tiny_config, rng)
    seq = hidden_states(tiny_config, rng)
    out = layer(seq)
    assert tuple(out.shape) == (BATCH, tiny_config.hidden_size)
    np.testing.assert_allclose(np_(out), nb.pooler(layer, seq), rtol=0, atol=ATOL)
    assert layer.compute_output_shape((BATCH, SEQ, tiny_config.hidden_size)) == (
        BATCH, tiny_config.hidden_size)


def test_pooler_reads_only_the_first_token(tiny_config, rng):
    layer = make_pooler(tiny_config, rng)
    seq = hidden_states(tiny_config, rng)
    seq2 = seq.copy()
    seq2[:, 1:] = hidden_states(tiny_config, rng)[:, 1:]
    np.testing.assert_array_equal(np_(layer(seq2)), np_(layer(seq)))
    seq3 = seq.copy()
    seq3[:, 0] += 1.0
    assert np.abs(np_(layer(seq3)) - np_(layer(seq))).max() > 1e-3


# ----- serialization ---------------------------------------------------------------------------

FACTORIES = {
    "embeddings": make_embeddings,
    "attention": make_attention,
    "block": make_block,
    "pooler": make_pooler,
}


def call_layer(kind, layer, config, inputs, rng, training=None):
    """Calls a layer of `kind` on fixed inputs (the same for a given `rng` state)."""
    if kind == "embeddings":
        return layer(inputs["input_word_ids"], inputs["input_type_ids"], training=training)
    x = hidden_states(config, rng)
    if kind == "pooler":
        return layer(x)
    return layer(x, padding_mask=inputs["input_mask"], training=training)


@pytest.mark.parametrize("kind", list(FACTORIES))
def test_get_config_round_trip(tiny_config, rng, inputs, kind):
    config = tiny_config.replace(hidden_act="gelu_approximate", hidden_dropout=0.2,
                                 attention_dropout=0.3, initializer_range=0.05,
                                 layer_norm_epsilon=1e-6)
    layer = FACTORIES[kind](config, rng)
    layer_config = layer.get_config()
    clone = type(layer).from_config(layer_config)
    assert clone.get_config() == layer_config
    # Every constructor argument made it into the config.
    if kind == "block":
        assert layer_config["hidden_act"] == "gelu_approximate"
        assert (layer_config["hidden_dropout"], layer_config["attention_dropout"]) == (0.2, 0.3)
    if kind in ("embeddings", "block"):
        assert layer_config["layer_norm_epsilon"] == 1e-6
    assert layer_config["initializer_range"] == 0.05
    # Generic Keras serialization (registered name) gives the same layer back.
    revived = keras.saving.deserialize_keras_object(keras.saving.serialize_keras_object(layer))
    assert type(revived) is type(layer) and revived.get_config() == layer_config
    # With the weights copied over, the clone computes the same function.
    clone.build((None, None, config.hidden_size))
    assert [tuple(w.shape) for w in clone.weights] == [tuple(w.shape) for w in layer.weights]
    clone.set_weights(layer.get_weights())
    seed = rng.integers(1 << 30)
    a = call_layer(kind, layer, config, inputs, np.random.default_rng(seed))
    b = call_layer(kind, clone, config, inputs, np.random.default_rng(seed))
    np.testing.assert_array_equal(np_(a), np_(b))


# ----- dropout ---------------------------------------------------------------------------------


@pytest.mark.parametrize("kind", ["embeddings", "attention", "block"])
def test_dropout_only_in_training(tiny_config, rng, inputs, kind):
    seed = rng.integers(1 << 30)

    def run(layer, training):
        return np_(call_layer(kind, layer, tiny_config, inputs, np.random.default_rng(seed),
                              training=training))

    layer = FACTORIES[kind](tiny_config, rng, dropout=0.3)
    inference = run(layer, None)
    np.testing.assert_array_equal(run(layer, False), inference)
    np.testing.assert_array_equal(run(layer, None), inference)  # deterministic
    train_a, train_b = run(layer, True), run(layer, True)
    assert np.abs(train_a - inference).max() > 1e-3
    assert np.abs(train_a - train_b).max() > 1e-3  # fresh noise each call
    # With rate 0, training mode computes the inference function.
    no_dropout = FACTORIES[kind](tiny_config, np.random.default_rng(0), dropout=0.0)
    np.testing.assert_allclose(run(no_dropout, True), run(no_dropout, False), rtol=0, atol=1e-6)


def test_attention_dropout_acts_on_the_probabilities(tiny_config, rng):
    # Hidden dropout 0, attention dropout > 0: the block still differs in training.
    layer = BertTransformerBlock(tiny_config.hidden_size, tiny_config.num_heads,
                                 tiny_config.intermediate_size, hidden_dropout=0.0,
                                 attention_dropout=0.5)
    layer.build((None, None, tiny_config.hidden_size))
    nb.randomize_weights(layer, rng)
    x = hidden_states(tiny_config, rng)
    assert np.abs(np_(layer(x, training=True)) - np_(layer(x))).max() > 1e-3
    np.testing.assert_allclose(np_(layer(x)), nb.transformer_block(layer, x), rtol=0, atol=ATOL)
