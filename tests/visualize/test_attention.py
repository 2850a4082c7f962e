"""Attention probabilities (`BertEncoder.attention_probs`) and `keras-bert attention` heat maps."""

from __future__ import annotations

import struct

import keras
import numpy as np
import pytest

from keras_bert import BertConfig, BertEncoder
from keras_bert.checkpoints.model_dir import save_model_dir
from keras_bert.cli import main as cli
from keras_bert.visualize.attention_maps import text_attention
from tests.support import numpy_bert as nb

VOCAB = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "call", "me", "ish", "##mael", ".",
         "the", "whale", "congress", "met"]


def _numpy_attention(encoder, inputs) -> list[np.ndarray]:
    """Each block's attention probabilities from the NumPy reference, block by block."""
    x = nb.embeddings(encoder.embeddings, inputs["input_word_ids"], inputs["input_type_ids"])
    probs = []
    for block in encoder.blocks:
        _, p = nb.self_attention(block.attention, x, inputs["input_mask"])
        probs.append(p)
        x = nb.transformer_block(block, x, inputs["input_mask"])
    return probs


@pytest.fixture
def random_encoder(tiny_config, rng):
    encoder = BertEncoder(tiny_config)
    nb.randomize_weights(encoder, rng)
    return encoder


def test_probs_equal_the_numpy_reference(random_encoder, tiny_config, rng):
    inputs = nb.random_inputs(tiny_config, rng, lengths=[9, 5, 1], seq_length=9)
    got = random_encoder.attention_probs(inputs)
    want = _numpy_attention(random_encoder, inputs)
    assert len(got) == tiny_config.num_layers
    for layer, (g, w) in enumerate(zip(got, want, strict=True)):
        assert tuple(g.shape) == (3, tiny_config.num_heads, 9, 9)
        np.testing.assert_allclose(np.asarray(g), w, atol=2e-5, err_msg=f"layer {layer}")


def test_rows_sum_to_one_over_real_keys_and_padding_gets_zero(random_encoder, tiny_config,
                                                               rng):
    lengths = [8, 3]
    inputs = nb.random_inputs(tiny_config, rng, lengths=lengths, seq_length=8)
    for probs in random_encoder.attention_probs(inputs):
        probs = np.asarray(probs)
        assert probs.dtype == np.float32
        for row, n in enumerate(lengths):
            np.testing.assert_allclose(probs[row, :, :, :n].sum(-1), 1.0, atol=1e-5)
            assert np.all(probs[row, :, :, n:] == 0.0)


def test_default_outputs_unchanged(random_encoder, tiny_config, rng):
    inputs = nb.random_inputs(tiny_config, rng, lengths=[6, 4])
    before = random_encoder(inputs)
    random_encoder.attention_probs(inputs)
    after = random_encoder(inputs)
    assert set(after) == {"sequence_output", "pooled_output", "encoder_outputs", "default"}
    np.testing.assert_array_equal(np.asarray(before["sequence_output"]),
                                  np.asarray(after["sequence_output"]))
    assert len(random_encoder.outputs) == 2 + tiny_config.num_layers + 1


def test_mixed_precision_probs_stay_float32(tiny_config, rng):
    encoder = BertEncoder(tiny_config, dtype="mixed_bfloat16")
    inputs = nb.random_inputs(tiny_config, rng, lengths=[5, 2])
    probs = np.asarray(encoder.attention_probs(inputs)[0])
    assert probs.dtype == np.float32
    np.testing.assert_allclose(probs[1, :, :2, :2].sum(-1), 1.0, atol=1e-5)


# ----- text in, PNG out ------------------------------------------------------------------------

@pytest.fixture
def model_dir(tmp_path, rng):
    """A tiny random model directory (2 layers, 4 heads) over a 14-word vocabulary."""
    vocab = tmp_path / "vocab.txt"
    vocab.write_text("\n".join(VOCAB) + "\n", encoding="utf-8")
    config = BertConfig(vocab_size=len(VOCAB), hidden_size=32, num_layers=2, num_heads=4,
                        intermediate_size=64, max_position_embeddings=64)
    encoder = BertEncoder(config)
    nb.randomize_weights(encoder, rng)
    return save_model_dir(encoder, str(tmp_path / "model"), str(vocab), lower_case=True)


def test_text_attention_tokens_and_probs(model_dir):
    tokens, probs = text_attention(model_dir, "Call me Ishmael.", "The whale met Congress.")
    assert tokens == ["[CLS]", "call", "me", "ish", "##mael", ".", "[SEP]",
                      "the", "whale", "met", "congress", ".", "[SEP]"]
    assert probs.shape == (2, 4, 13, 13)
    # The same numbers as the encoder on the hand-packed ids (segments 0 then 1).
    ids = [VOCAB.index(t) for t in tokens]
    inputs = {"input_word_ids": np.array([ids], "int32"),
              "input_mask": np.ones((1, 13), "int32"),
              "input_type_ids": np.array([[0] * 7 + [1] * 6], "int32")}
    want = _numpy_attention(model_dir.load_encoder(), inputs)
    np.testing.assert_allclose(probs, np.stack([w[0] for w in want]), atol=2e-5)


def _png_size(path) -> tuple[int, int]:
    with open(path, "rb") as f:
        header = f.read(24)
    assert header[:8] == b"\x89PNG\r\n\x1a\n" and header[12:16] == b"IHDR"
    return struct.unpack(">II", header[16:24])


def _expected_size(layers: int, heads: int, tokens: int) -> tuple[int, int]:
    """The documented layout: square cells of max(2.0, 0.16 * tokens) + 0.9 inches, a row
    per layer, a column per head, 0.6 inches of title, 100 dots per inch."""
    cell = max(2.0, 0.16 * tokens) + 0.9
    return round(heads * cell * 100), round((layers * cell + 0.6) * 100)


def test_cli_writes_a_png_of_the_expected_size(model_dir, tmp_path, capsys):
    out = tmp_path / "attn.png"
    assert cli(["attention", model_dir.path, "--text", "Call me Ishmael.", "--out",
                str(out)]) == 0
    assert _png_size(out) == _expected_size(layers=2, heads=4, tokens=7)
    assert "2 layers x 4 heads over 7 tokens" in capsys.readouterr().out

    long_text = " ".join(["the whale"] * 10)  # 20 wordpieces + [CLS] + [SEP]: wider cells
    out_one = tmp_path / "one_layer.png"
    assert cli(["attention", model_dir.path, "--text", long_text, "--out", str(out_one),
                "--layers", "1"]) == 0
    assert _png_size(out_one) == _expected_size(layers=1, heads=4, tokens=22)


def test_cli_refuses_a_layer_the_model_does_not_have(model_dir, tmp_path, capsys):
    status = cli(["attention", model_dir.path, "--text", "call me", "--out",
                  str(tmp_path / "x.png"), "--layers", "2"])
    assert status == 2
    assert "layers must be among 0..1" in capsys.readouterr().err
    assert not (tmp_path / "x.png").exists()


def test_encoder_alone_is_a_functional_model_still(random_encoder):
    # attention_probs calls the layers directly: no new nodes on the encoder's graph.
    nodes = [len(block._inbound_nodes) for block in random_encoder.blocks]
    random_encoder.attention_probs({"input_word_ids": np.ones((1, 4), "int32"),
                                    "input_mask": np.ones((1, 4), "int32"),
                                    "input_type_ids": np.zeros((1, 4), "int32")})
    assert [len(block._inbound_nodes) for block in random_encoder.blocks] == nodes
    assert isinstance(random_encoder, keras.Model)
