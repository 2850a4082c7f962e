"""The pretraining heads: NumPy references, tying, serialization, and their checkpoints
in Google and Hugging Face naming (both ways, error paths, against `transformers`)."""

import json
import math
import os

import keras
import numpy as np
import pytest
import tensorflow as tf

from keras_bert import BertConfig, BertEncoder
from keras_bert.checkpoints import CheckpointMismatchError
from keras_bert.checkpoints.google import read_checkpoint, save_google_checkpoint
from keras_bert.checkpoints.pretraining_heads import (
    load_google_pretrainer,
    load_google_pretrainer_weights,
    load_hf_pretrainer,
    load_hf_pretrainer_weights,
    pretrainer_to_google_heads,
    pretrainer_to_hf_state,
    pretrainer_variables,
    save_google_pretrainer,
    save_hf_pretrainer,
)
from keras_bert.layers import BertMaskedLMHead, BertNextSentenceHead
from keras_bert.layers.mlm_head import gather_positions
from keras_bert.models import BertPretrainer
from tests.checkpoints.test_checkpoints import _inputs as encoder_inputs
from tests.support.reference import require

CONFIG = BertConfig(vocab_size=50, hidden_size=16, num_layers=2, num_heads=2,
                    intermediate_size=32, max_position_embeddings=24)
# Google's layout holds the tanh GELU alone: the one its modeling.py computes.
GOOGLE_CONFIG = CONFIG.replace(hidden_act="gelu_approximate")


def _inputs(seed=0, batch=3, seq=10, predictions=4):
    """The encoder inputs of tests/checkpoints/test_checkpoints.py (the same vocabulary) and
    `predictions` masked positions per row."""
    rng = np.random.default_rng(seed + 100)
    return {**encoder_inputs(seed, batch, seq),
            "masked_lm_positions": rng.integers(1, 6, (batch, predictions)).astype(np.int32)}


def _random_pretrainer(seed=1, config=CONFIG):
    """A pretrainer whose every weight is random (non-trivial LayerNorms and biases too)."""
    model = BertPretrainer.from_bert_config(config)
    rng = np.random.default_rng(seed)
    for v in model.weights:
        v.assign(rng.normal(0, 0.2, v.shape).astype("float32") + (1.0 if "gamma" in v.path else 0))
    return model


def _weights(model):
    return {name: v.numpy() for name, v in pretrainer_variables(model).items()}


def _same_weights(a, b):
    wa, wb = _weights(a), _weights(b)
    assert wa.keys() == wb.keys()
    for name in wa:
        np.testing.assert_array_equal(wa[name], wb[name], err_msg=name)


def _layer_norm(x, gamma, beta, eps):
    mean = x.mean(-1, keepdims=True)
    var = ((x - mean) ** 2).mean(-1, keepdims=True)
    return (x - mean) / np.sqrt(var + eps) * gamma + beta


def _gelu(x):
    return 0.5 * x * (1.0 + np.vectorize(math.erf)(x / math.sqrt(2.0)))


# ----- the layers ----------------------------------------------------------------------------

def test_gather_positions_matches_numpy(rng):
    x = rng.normal(size=(3, 7, 5)).astype("float32")
    positions = rng.integers(0, 7, (3, 4)).astype("int32")
    expected = np.take_along_axis(x, positions[:, :, None], axis=1)
    np.testing.assert_array_equal(gather_positions(x, positions), expected)


def test_mlm_head_matches_numpy_and_only_reads_the_positions():
    model = _random_pretrainer()
    head, table = model.mlm_head, model.encoder.token_embedding.embeddings.numpy()
    x = _inputs()
    sequence = model.encoder({k: x[k] for k in ("input_word_ids", "input_mask",
                                                "input_type_ids")})["sequence_output"].numpy()
    logits = head(sequence, x["masked_lm_positions"]).numpy()
    assert logits.shape == (3, 4, CONFIG.vocab_size) and logits.dtype == np.float32

    gathered = np.take_along_axis(sequence, x["masked_lm_positions"][:, :, None], axis=1)
    h = _gelu(gathered @ head.dense.kernel.numpy() + head.dense.bias.numpy())
    h = _layer_norm(h, head.layer_norm.gamma.numpy(), head.layer_norm.beta.numpy(),
                    CONFIG.layer_norm_epsilon)
    expected = h @ table.T + head.output_bias.numpy()
    np.testing.assert_allclose(logits, expected, atol=1e-4, rtol=1e-4)

    # Positions not asked for do not matter: change every other token's state.
    other = sequence + 100.0
    rows = np.arange(3)[:, None]
    other[rows, x["masked_lm_positions"]] = sequence[rows, x["masked_lm_positions"]]
    np.testing.assert_allclose(head(other, x["masked_lm_positions"]), logits, atol=1e-6)


def test_mlm_head_is_tied_to_the_word_embeddings():
    model = _random_pretrainer()
    embedding = model.encoder.token_embedding
    assert model.mlm_head.embedding is embedding
    table_shape = (CONFIG.vocab_size, CONFIG.hidden_size)
    assert [tuple(w.shape) for w in model.weights].count(table_shape) == 1
    assert [tuple(w.shape) for w in model.trainable_variables].count(table_shape) == 1

    x = _inputs()
    sequence = model.encoder({k: x[k] for k in ("input_word_ids", "input_mask",
                                                "input_type_ids")})["sequence_output"]
    before = model.mlm_head(sequence, x["masked_lm_positions"]).numpy()
    # Change only the row of token 7 in the embedding table: only its logits move.
    table = embedding.embeddings.numpy()
    table[7] += 1.0
    embedding.embeddings.assign(table)
    after = model.mlm_head(sequence, x["masked_lm_positions"]).numpy()
    assert np.abs(after[..., 7] - before[..., 7]).min() > 1e-3
    np.testing.assert_array_equal(np.delete(after, 7, -1), np.delete(before, 7, -1))


def test_mlm_head_rejects_a_mismatched_embedding():
    with pytest.raises(ValueError, match="tied embedding"):
        BertMaskedLMHead(51, 16, embedding=keras.layers.Embedding(50, 16))


def test_heads_serialize():
    head = BertMaskedLMHead(50, 16, embedding=keras.layers.Embedding(50, 16),
                            hidden_act="gelu_approximate", layer_norm_epsilon=1e-6)
    config = head.get_config()
    assert config["hidden_act"] == "gelu_approximate" and "embedding" not in config
    # Alone, a deserialized head owns an (untied) table of the right shape.
    clone = BertMaskedLMHead.from_config(config)
    clone.build()
    assert clone.embedding.embeddings.shape == (50, 16)
    assert clone(np.zeros((2, 5, 16), "float32"), np.zeros((2, 3), "int32")).shape == (2, 3, 50)
    nsp = BertNextSentenceHead.from_config(BertNextSentenceHead(16, name="n").get_config())
    assert nsp.name == "n" and nsp.hidden_size == 16


def test_nsp_head_matches_numpy(rng):
    head = BertNextSentenceHead(16)
    pooled = rng.normal(size=(3, 16)).astype("float32")
    logits = head(pooled).numpy()
    expected = pooled @ head.dense.kernel.numpy() + head.dense.bias.numpy()
    assert logits.shape == (3, 2)
    np.testing.assert_allclose(logits, expected, atol=1e-5)


@pytest.mark.parametrize("policy", ["mixed_float16", "mixed_bfloat16"])
def test_head_logits_are_float32_under_mixed_precision(policy):
    model = BertPretrainer.from_bert_config(CONFIG, dtype=policy)
    assert model.mlm_head.compute_dtype == policy.split("_")[1]
    out = model(_inputs())
    assert out["mlm_logits"].dtype == "float32" and out["nsp_logits"].dtype == "float32"
    assert np.isfinite(out["mlm_logits"].numpy()).all()


# ----- Google TF1 checkpoints ------------------------------------------------------------------

def _same_outputs(a, b, tol=1e-6):
    x = _inputs()
    oa, ob = a(x), b(x)
    for key in ("mlm_logits", "nsp_logits"):
        np.testing.assert_allclose(oa[key], ob[key], atol=tol)


def test_google_names_shapes_and_round_trip(tmp_path):
    model = _random_pretrainer(config=GOOGLE_CONFIG)
    save_google_pretrainer(model, str(tmp_path))
    arrays = read_checkpoint(str(tmp_path))
    h, v = CONFIG.hidden_size, CONFIG.vocab_size
    expected = {"cls/predictions/transform/dense/kernel": (h, h),
                "cls/predictions/transform/dense/bias": (h,),
                "cls/predictions/transform/LayerNorm/gamma": (h,),
                "cls/predictions/transform/LayerNorm/beta": (h,),
                "cls/predictions/output_bias": (v,),
                "cls/seq_relationship/output_weights": (2, h),
                "cls/seq_relationship/output_bias": (2,)}
    assert {k: arrays[k].shape for k in arrays if k.startswith("cls/")} == expected
    # [out, in], as the original `get_next_sentence_output` declares it.
    np.testing.assert_array_equal(arrays["cls/seq_relationship/output_weights"],
                                  model.nsp_head.dense.kernel.numpy().T)
    loaded = load_google_pretrainer(str(tmp_path))
    _same_weights(model, loaded)
    _same_outputs(model, loaded, tol=0)


def test_google_ignores_optimizer_slots_of_heads(tmp_path):
    model = _random_pretrainer()
    extra = {"cls/predictions/output_bias/adam_m": np.zeros(CONFIG.vocab_size, "float32"),
             "global_step": np.array(7, np.int64)}
    extra.update(pretrainer_to_google_heads(model))
    save_google_checkpoint(model.encoder, str(tmp_path / "bert_model.ckpt"), extra=extra)
    fresh = BertPretrainer.from_bert_config(CONFIG)
    report = load_google_pretrainer_weights(fresh, str(tmp_path))
    assert report.initialised == []
    assert set(report.ignored) == {"cls/predictions/output_bias/adam_m", "global_step"}
    _same_weights(model, fresh)


@pytest.mark.parametrize("damage,message", [
    ("drop", r"missing from the checkpoint .*: mlm/transform/kernel"),
    ("shape", r"wrong shape.*mlm/output_bias \(cls/predictions/output_bias\)"),
    ("half_nsp", r"missing.*nsp/bias"),
])
def test_google_head_mismatch_names_it_and_loads_nothing(tmp_path, damage, message):
    model = _random_pretrainer()
    heads = pretrainer_to_google_heads(model)
    if damage == "drop":
        del heads["cls/predictions/transform/dense/kernel"]
    elif damage == "shape":
        heads["cls/predictions/output_bias"] = np.zeros(CONFIG.vocab_size + 1, "float32")
    else:
        del heads["cls/seq_relationship/output_bias"]
    save_google_checkpoint(model.encoder, str(tmp_path / "bert_model.ckpt"), extra=heads)
    fresh = BertPretrainer.from_bert_config(CONFIG)
    before = _weights(fresh)
    with pytest.raises(CheckpointMismatchError, match=message):
        load_google_pretrainer_weights(fresh, str(tmp_path))
    after = _weights(fresh)
    for name in before:  # nothing half-loaded, not even the encoder
        np.testing.assert_array_equal(before[name], after[name], err_msg=name)


# ----- Hugging Face --------------------------------------------------------------------------

def test_hf_round_trip_and_names(tmp_path):
    model = _random_pretrainer()
    state = pretrainer_to_hf_state(model)
    assert state["cls.seq_relationship.weight"].shape == (2, CONFIG.hidden_size)
    assert state["cls.predictions.bias"].shape == (CONFIG.vocab_size,)
    assert "bert.embeddings.word_embeddings.weight" in state
    save_hf_pretrainer(model, str(tmp_path))
    with open(tmp_path / "config.json") as f:
        assert json.load(f)["architectures"] == ["BertForPreTraining"]
    loaded = load_hf_pretrainer(str(tmp_path))
    _same_weights(model, loaded)
    _same_outputs(model, loaded, tol=0)


def _torch_state(model, **changes):
    """The model as a HF state dict the way torch saves it: tied copies and old names."""
    state = pretrainer_to_hf_state(model)
    state["cls.predictions.decoder.weight"] = state["bert.embeddings.word_embeddings.weight"]
    state["cls.predictions.decoder.bias"] = state["cls.predictions.bias"]
    gamma = "cls.predictions.transform.LayerNorm.gamma"
    state[gamma] = state.pop("cls.predictions.transform.LayerNorm.weight")
    state.update(changes)
    return {k: v for k, v in state.items() if v is not None}


@pytest.mark.needs_torch
def test_hf_pytorch_bin_with_tied_copies_and_old_names(tmp_path):
    torch = require("torch")
    model = _random_pretrainer()
    torch.save({k: torch.from_numpy(np.array(v)) for k, v in _torch_state(model).items()},
               str(tmp_path / "pytorch_model.bin"))
    fresh = BertPretrainer.from_bert_config(CONFIG)
    report = load_hf_pretrainer_weights(fresh, str(tmp_path))
    assert report.initialised == []
    _same_weights(model, fresh)


def test_hf_masked_lm_checkpoint_leaves_nsp_and_pooler_initialised(tmp_path):
    from safetensors.numpy import save_file

    model = _random_pretrainer()
    state = {k: v for k, v in _torch_state(model).items()
             if not k.startswith(("cls.seq_relationship.", "bert.pooler."))}
    state["cls.species.weight"] = np.zeros((6, CONFIG.hidden_size), "float32")  # other head
    save_file(state, str(tmp_path / "model.safetensors"))
    CONFIG.save_json(str(tmp_path / "config.json"), flavor="hf")
    with pytest.warns(UserWarning, match="no nsp and no pooler weights"):
        loaded = load_hf_pretrainer(str(tmp_path))
    fresh = BertPretrainer.from_bert_config(CONFIG)
    report = load_hf_pretrainer_weights(fresh, str(tmp_path))
    assert report.initialised == ["nsp/bias", "nsp/kernel", "pooler/bias", "pooler/kernel"]
    assert "cls.species.weight" in report.ignored
    x = _inputs()
    np.testing.assert_array_equal(loaded(x)["mlm_logits"], model(x)["mlm_logits"])


@pytest.mark.parametrize("change,message", [
    ("untied", r"cls\.predictions\.decoder\.weight is not tied"),
    ("decoder_bias", r"cls\.predictions\.decoder\.bias differs"),
    ("drop_transform", r"missing.*mlm/transform/kernel"),
    ("shape", r"wrong shape.*nsp/kernel \(cls\.seq_relationship\.weight\)"),
    ("unknown", r"match nothing.*cls\.predictions\.extra"),
])
def test_hf_head_errors_load_nothing(tmp_path, change, message):
    from safetensors.numpy import save_file

    model = _random_pretrainer()
    v, h = CONFIG.vocab_size, CONFIG.hidden_size
    changes = {
        "untied": {"cls.predictions.decoder.weight": np.ones((v, h), "float32")},
        "decoder_bias": {"cls.predictions.decoder.bias": np.ones(v, "float32")},
        "drop_transform": {"cls.predictions.transform.dense.weight": None},
        "shape": {"cls.seq_relationship.weight": np.zeros((2, h + 1), "float32")},
        "unknown": {"cls.predictions.extra": np.zeros(3, "float32")},
    }[change]
    save_file(_torch_state(model, **changes), str(tmp_path / "model.safetensors"))
    fresh = BertPretrainer.from_bert_config(CONFIG)
    before = _weights(fresh)
    with pytest.raises(CheckpointMismatchError, match=message):
        load_hf_pretrainer_weights(fresh, str(tmp_path))
    after = _weights(fresh)
    assert all(np.array_equal(before[n], after[n]) for n in before)


@pytest.mark.needs_torch
def test_hf_written_pretrainer_runs_in_transformers(tmp_path):
    """Ours -> HF files -> `transformers.BertForPreTraining`: the same MLM and NSP logits."""
    torch = require("torch")
    transformers = require("transformers")
    model = _random_pretrainer()
    save_hf_pretrainer(model, str(tmp_path))
    ref = transformers.BertForPreTraining.from_pretrained(str(tmp_path)).eval()
    x = _inputs()
    with torch.no_grad():
        out = ref(input_ids=torch.tensor(x["input_word_ids"], dtype=torch.long),
                  attention_mask=torch.tensor(x["input_mask"], dtype=torch.long),
                  token_type_ids=torch.tensor(x["input_type_ids"], dtype=torch.long))
    ours = model(x)
    rows = np.arange(3)[:, None]
    ref_mlm = out.prediction_logits.numpy()[rows, x["masked_lm_positions"]]
    np.testing.assert_allclose(ours["mlm_logits"], ref_mlm, atol=1e-4, rtol=1e-5)
    np.testing.assert_allclose(ours["nsp_logits"], out.seq_relationship_logits.numpy(),
                               atol=1e-4)
    # And the torch model's own state dict (tied copies included) loads back here.
    torch.save(ref.state_dict(), str(tmp_path / "pytorch_model.bin"))
    os.remove(tmp_path / "model.safetensors")
    back = load_hf_pretrainer(str(tmp_path))
    _same_outputs(model, back, tol=1e-5)


def test_tf_variables_are_the_same_objects_after_loading(tmp_path):
    """Loading assigns in place: the tie survives a checkpoint load."""
    model = _random_pretrainer(config=GOOGLE_CONFIG)
    save_google_pretrainer(model, str(tmp_path))
    loaded = load_google_pretrainer(str(tmp_path))
    assert loaded.mlm_head.embedding.embeddings is loaded.encoder.token_embedding.embeddings
    assert isinstance(loaded.encoder, BertEncoder)
    assert tf.is_tensor(loaded(_inputs())["mlm_logits"])
