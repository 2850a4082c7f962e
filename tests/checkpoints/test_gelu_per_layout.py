"""Each checkpoint layout computes the GELU of the code that reads it: a Google release the
tanh form of Google's `modeling.py`, a Hugging Face directory what its `config.json` names;
a Google checkpoint written for Hugging Face computes the same in `transformers`; a model
directory written before the names said which GELU keeps its erf GELU; and the writers of
tanh-only layouts refuse the exact GELU unless asked to approximate it.

References: `tests/support/numpy_bert.py` (float64, from the papers' equations) with the
activation each source's code computes passed in, not read from our layers."""

from __future__ import annotations

import json
import os

import numpy as np
import pytest

from keras_bert import BertConfig, BertEncoder
from keras_bert.activation_names import UnwritableActivationError
from keras_bert.checkpoints import (
    load_google_dir,
    load_hf_dir,
    load_model_dir,
    save_model_dir,
    with_approximate_gelu,
)
from keras_bert.checkpoints.conversion import read_checkpoint, write_checkpoint
from keras_bert.checkpoints.google import save_google_checkpoint
from keras_bert.checkpoints.huggingface import encoder_to_hf_state, write_hf_dir
from tests.support import numpy_bert as nb
from tests.support.reference import require

# Wide enough intermediate pre-activations (|x| up to ~5) that the two GELUs differ visibly.
CONFIG = BertConfig(vocab_size=40, hidden_size=16, num_layers=2, num_heads=2,
                    intermediate_size=32, max_position_embeddings=16)
# Google's `bert_config.json` of that model, as Google writes it (`BertConfig.to_json_string`).
GOOGLE_CONFIG = {"attention_probs_dropout_prob": 0.1, "hidden_act": "gelu",
                 "hidden_dropout_prob": 0.1, "hidden_size": 16, "initializer_range": 0.02,
                 "intermediate_size": 32, "max_position_embeddings": 16,
                 "num_attention_heads": 2, "num_hidden_layers": 2, "type_vocab_size": 2,
                 "vocab_size": 40}
TOL = 1e-5
VOCAB = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"] + [f"w{i}" for i in range(35)]


def _weights(seed=0, hidden_act="gelu_exact") -> BertEncoder:
    """An encoder of random weights (its activation is what the layouts say it is)."""
    encoder = BertEncoder(CONFIG.replace(hidden_act=hidden_act))
    nb.randomize_weights(encoder, np.random.default_rng(seed), scale=0.3)
    return encoder


def _inputs():
    return nb.random_inputs(CONFIG, np.random.default_rng(7), lengths=[12, 7, 3])


def _outputs(encoder) -> dict:
    out = encoder(_inputs())
    return {k: np.asarray(out[k]) for k in ("sequence_output", "pooled_output")}


def _reference(encoder, activation) -> dict:
    x = _inputs()
    return nb.encoder(encoder, x["input_word_ids"], x["input_mask"], x["input_type_ids"],
                      activation=activation)


def _max_diff(ours: dict, ref: dict, mask) -> float:
    real = np.asarray(mask).astype(bool)
    return max(np.abs(ours["sequence_output"][real] - ref["sequence_output"][real]).max(),
               np.abs(ours["pooled_output"] - ref["pooled_output"]).max())


def _google_release(path) -> str:
    """A directory in Google's release layout: the checkpoint, and `bert_config.json` and
    `vocab.txt` written by hand."""
    os.makedirs(path)
    save_google_checkpoint(_weights(), os.path.join(path, "bert_model.ckpt"))
    with open(os.path.join(path, "bert_config.json"), "w", encoding="utf-8") as f:
        json.dump(GOOGLE_CONFIG, f)
    with open(os.path.join(path, "vocab.txt"), "w", encoding="utf-8") as f:
        f.write("\n".join(VOCAB) + "\n")
    return str(path)


def test_a_google_release_computes_googles_tanh_gelu(tmp_path):
    encoder = load_google_dir(_google_release(tmp_path / "google"))
    assert encoder.config.hidden_act == "gelu_approximate"
    ours, mask = _outputs(encoder), _inputs()["input_mask"]
    assert _max_diff(ours, _reference(encoder, nb.gelu_tanh), mask) <= TOL
    # The erf GELU (Hugging Face's reading of "gelu") is visibly another model.
    assert _max_diff(ours, _reference(encoder, nb.gelu_exact), mask) > 20 * TOL


@pytest.mark.parametrize("name, activation", [("gelu", nb.gelu_exact),
                                              ("gelu_new", nb.gelu_tanh),
                                              ("gelu_pytorch_tanh", nb.gelu_tanh)])
def test_a_hugging_face_directory_computes_what_its_config_names(tmp_path, name, activation):
    hf_config = {**CONFIG.to_hf_dict(), "hidden_act": name}
    write_hf_dir(str(tmp_path / "hf"), hf_config, encoder_to_hf_state(_weights()))
    encoder = load_hf_dir(str(tmp_path / "hf"))
    other = nb.gelu_exact if activation is nb.gelu_tanh else nb.gelu_tanh
    ours, mask = _outputs(encoder), _inputs()["input_mask"]
    assert _max_diff(ours, _reference(encoder, activation), mask) <= TOL
    assert _max_diff(ours, _reference(encoder, other), mask) > 20 * TOL


@pytest.mark.needs_torch
def test_a_google_release_written_for_hugging_face_computes_the_same_in_transformers(tmp_path):
    torch = require("torch")
    transformers = require("transformers")
    google = _google_release(tmp_path / "google")
    hf = write_checkpoint(google, str(tmp_path / "hf"), "huggingface")
    assert json.loads(open(os.path.join(hf, "config.json")).read())["hidden_act"] == "gelu_new"
    model = transformers.BertModel.from_pretrained(hf).eval()
    x = _inputs()
    with torch.no_grad():
        out = model(input_ids=torch.tensor(x["input_word_ids"], dtype=torch.long),
                    attention_mask=torch.tensor(x["input_mask"], dtype=torch.long),
                    token_type_ids=torch.tensor(x["input_type_ids"], dtype=torch.long))
    theirs = {"sequence_output": out.last_hidden_state.numpy(),
              "pooled_output": out.pooler_output.numpy()}
    ours = _outputs(load_google_dir(google))
    assert _max_diff(ours, theirs, x["input_mask"]) <= TOL


def test_a_model_directory_written_before_says_gelu_keeps_the_erf_gelu(tmp_path):
    encoder = _weights(seed=3)
    vocab = tmp_path / "vocab.txt"
    vocab.write_text("\n".join(VOCAB) + "\n")
    path = save_model_dir(encoder, str(tmp_path / "model"), str(vocab), True).path
    manifest_path = os.path.join(path, "keras_bert.json")
    manifest = json.loads(open(manifest_path).read())
    assert manifest["config"]["hidden_act"] == "gelu_exact"  # it says which GELU
    manifest["config"]["hidden_act"] = "gelu"  # as every directory said before
    with open(manifest_path, "w", encoding="utf-8") as f:
        json.dump(manifest, f)
    loaded = load_model_dir(path)
    assert loaded.config.hidden_act == "gelu_exact"
    ours = _outputs(loaded.load_encoder())
    np.testing.assert_array_equal(ours["pooled_output"], _outputs(encoder)["pooled_output"])
    assert _max_diff(ours, _reference(encoder, nb.gelu_exact), _inputs()["input_mask"]) <= TOL


@pytest.fixture
def exact_model_dir(tmp_path):
    vocab = tmp_path / "vocab.txt"
    vocab.write_text("\n".join(VOCAB) + "\n")
    return save_model_dir(_weights(seed=5), str(tmp_path / "exact"), str(vocab), True).path


@pytest.mark.parametrize("layout", ["google", "model_garden", "keras_hub"])
def test_a_tanh_only_layout_takes_the_exact_gelu_only_when_asked(tmp_path, exact_model_dir,
                                                                 layout):
    dest = tmp_path / layout
    with pytest.raises(UnwritableActivationError, match="exact .erf. GELU"):
        write_checkpoint(exact_model_dir, str(dest), layout)
    assert not dest.exists()
    write_checkpoint(exact_model_dir, str(dest), layout, approximate_gelu=True)
    back, *_ = read_checkpoint(str(dest))
    assert back.config.hidden_act == "gelu_approximate"
    approximated = with_approximate_gelu(load_model_dir(exact_model_dir).load_encoder())
    ours, mask = _outputs(back), _inputs()["input_mask"]
    assert _max_diff(ours, _outputs(approximated), mask) <= 1e-6
    assert _max_diff(ours, _reference(back, nb.gelu_tanh), mask) <= TOL


def test_approximating_is_refused_where_the_exact_gelu_can_be_written(tmp_path, exact_model_dir):
    with pytest.raises(ValueError, match="huggingface's layout writes it as it is"):
        write_checkpoint(exact_model_dir, str(tmp_path / "hf"), "huggingface",
                         approximate_gelu=True)
    assert not (tmp_path / "hf").exists()
