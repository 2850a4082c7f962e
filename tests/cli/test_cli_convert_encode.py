"""`keras-bert convert` and `keras-bert encode` end to end on the real MiniLM weights."""

import io
import json
import sys

import numpy as np
import pytest

from keras_bert.cli import main
from tests.support.reference import minilm_dir, require

LINES = ["Call me Ishmael.", "", "The State of the Union is strong.",
         "Naïve café owners ate crème brûlée — twice!"]


@pytest.fixture(scope="module")
def converted(tmp_path_factory):
    dest = tmp_path_factory.mktemp("cli") / "minilm"
    assert main(["convert", minilm_dir(), str(dest)]) == 0
    return str(dest)


def _encode(monkeypatch, capsys, model_dir, *flags):
    monkeypatch.setattr(sys, "stdin", io.StringIO("\n".join(LINES) + "\n"))
    assert main(["encode", model_dir, *flags]) == 0
    return [json.loads(line) for line in capsys.readouterr().out.splitlines()]


@pytest.fixture(scope="module")
def transformers_vectors() -> dict[str, np.ndarray]:
    """What Hugging Face's BertModel gives for LINES under each pooling: one forward pass
    for the three parametrizations below."""
    torch = require("torch")
    transformers = require("transformers")
    tokenizer = transformers.BertTokenizerFast.from_pretrained(minilm_dir())
    model = transformers.BertModel.from_pretrained(minilm_dir()).eval()
    batch = tokenizer(LINES, padding=True, return_tensors="pt")
    with torch.no_grad():
        out = model(**batch)
    mask = batch["attention_mask"][:, :, None].float()
    return {"pooled": out.pooler_output.numpy(), "cls": out.last_hidden_state[:, 0].numpy(),
            "mean": ((out.last_hidden_state * mask).sum(1) / mask.sum(1)).numpy()}


@pytest.mark.needs_torch
@pytest.mark.parametrize("pooling", ["pooled", "cls", "mean"])
def test_encode_matches_transformers(monkeypatch, capsys, converted, transformers_vectors,
                                     pooling):
    vectors = _encode(monkeypatch, capsys, converted, "--pooling", pooling, "--batch-size", "3")
    assert len(vectors) == len(LINES)  # one line out per line in, empty ones included
    assert all(len(v) == 384 for v in vectors)
    np.testing.assert_allclose(np.array(vectors), transformers_vectors[pooling], atol=1e-4)


def test_convert_reports_errors(capsys, tmp_path):
    assert main(["convert", str(tmp_path / "missing"), str(tmp_path / "out")]) == 2
    assert "Not a directory" in capsys.readouterr().err
    assert main(["encode", str(tmp_path)]) == 2
    assert "not a keras_bert model directory" in capsys.readouterr().err


def _hf_state(path):
    from safetensors.numpy import load_file

    return {k.removeprefix("bert."): v for k, v in load_file(path).items()}


def test_convert_refuses_the_exact_gelu_for_google_and_an_occupied_directory(capsys, converted,
                                                                            tmp_path):
    """The command's refusals, in the README's tier (the real weights' full circle: slow,
    below)."""
    google_dir = tmp_path / "google"
    # MiniLM computes the exact GELU; Google's code only the tanh form: asked for, on purpose.
    assert main(["convert", converted, str(google_dir), "--to", "google"]) == 2
    assert "--approximate-gelu" in capsys.readouterr().err and not google_dir.exists()
    other = tmp_path / "occupied"
    other.mkdir()
    (other / "notes.txt").write_text("mine")
    assert main(["convert", converted, str(other), "--to", "google"]) == 2
    assert "refusing" in capsys.readouterr().err
    assert [p.name for p in other.iterdir()] == ["notes.txt"]


# ~8 s on a busy 2-core Zen 4 (MiniLM written in Google's layout, read back and written in
# Hugging Face's), slow; the README's tier keeps the refusals above, and on tiny models
# Google's names, both layouts' round trips and converting from each
# (`tests/checkpoints/test_checkpoints.py`), each layout's GELU, and Google's release
# written for Hugging Face (`tests/checkpoints/test_gelu_per_layout.py`).
@pytest.mark.slow
def test_convert_to_google_and_huggingface_round_trips_real_weights(capsys, converted, tmp_path):
    import tensorflow as tf

    original = _hf_state(f"{minilm_dir()}/model.safetensors")
    google_dir = tmp_path / "google"
    assert main(["convert", converted, str(google_dir), "--to", "google",
                 "--approximate-gelu"]) == 0
    assert {"bert_config.json", "vocab.txt", "bert_model.ckpt.index"} <= {
        p.name for p in google_dir.iterdir()}
    prefix = str(google_dir / "bert_model.ckpt")
    # Google names, Google orientation: a TF1 kernel is the transpose of a torch Linear weight.
    np.testing.assert_array_equal(
        tf.train.load_variable(prefix, "bert/encoder/layer_3/attention/self/query/kernel"),
        original["encoder.layer.3.attention.self.query.weight"].T)
    np.testing.assert_array_equal(
        tf.train.load_variable(prefix, "bert/embeddings/word_embeddings"),
        original["embeddings.word_embeddings.weight"])
    config = json.loads((google_dir / "bert_config.json").read_text())
    assert (config["num_hidden_layers"], config["hidden_size"]) == (6, 384)
    assert config["hidden_act"] == "gelu"  # Google's name for the tanh GELU

    hf_dir = tmp_path / "hf"  # from the Google layout: the full circle
    assert main(["convert", str(google_dir), str(hf_dir), "--to", "huggingface"]) == 0
    written = _hf_state(str(hf_dir / "model.safetensors"))
    for name in ("encoder.layer.5.output.dense.weight", "pooler.dense.bias",
                 "embeddings.LayerNorm.weight"):
        np.testing.assert_array_equal(written[name], original[name])
    assert json.loads((hf_dir / "tokenizer_config.json").read_text())["do_lower_case"] is True
    assert (hf_dir / "vocab.txt").read_text() == (google_dir / "vocab.txt").read_text()
    assert json.loads((hf_dir / "config.json").read_text())["hidden_act"] == "gelu_new"
