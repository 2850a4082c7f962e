"""Checkpoint import/export: mapping tables both ways, error paths, model directories."""

import json
import os

import numpy as np
import pytest
import tensorflow as tf

from keras_bert import BertConfig, BertEncoder
from keras_bert.checkpoints import (
    CheckpointMismatchError,
    convert,
    detect_format,
    load_google_dir,
    load_hf_dir,
    load_model_dir,
    save_google_dir,
    save_hf_dir,
    save_model_dir,
)
from keras_bert.checkpoints.google import read_checkpoint, save_google_checkpoint
from keras_bert.checkpoints.huggingface import encoder_to_hf_state
from keras_bert.checkpoints.variables import encoder_variables
from tests.support.reference import require

# The tanh GELU: Google's layout holds it (its code computes no other GELU), Hugging Face's
# names it gelu_new. The exact GELU per layout: tests/checkpoints/test_gelu_per_layout.py.
CONFIG = BertConfig(vocab_size=50, hidden_size=16, num_layers=2, num_heads=2,
                    intermediate_size=32, max_position_embeddings=24,
                    hidden_act="gelu_approximate")


def _inputs(seed=0, batch=3, seq=10):
    rng = np.random.default_rng(seed)
    mask = np.ones((batch, seq), np.int32)
    mask[1, 6:] = 0
    types = np.zeros((batch, seq), np.int32)
    types[:, 5:] = 1
    return {"input_word_ids": rng.integers(0, CONFIG.vocab_size, (batch, seq)).astype(np.int32),
            "input_mask": mask, "input_type_ids": types}


def _random_encoder(seed=1, config=CONFIG):
    """An encoder whose every weight is random (non-trivial LayerNorm and biases too)."""
    encoder = BertEncoder(config)
    rng = np.random.default_rng(seed)
    for v in encoder.weights:
        v.assign(rng.normal(0, 0.2, v.shape).astype("float32") + (1.0 if "gamma" in v.path else 0))
    return encoder


def _same_outputs(a, b, tol=1e-6):
    x = _inputs()
    oa, ob = a(x), b(x)
    for key in ("sequence_output", "pooled_output"):
        np.testing.assert_allclose(oa[key], ob[key], atol=tol)


@pytest.fixture
def vocab_file(tmp_path):
    path = tmp_path / "vocab.txt"
    tokens = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"] + [f"w{i}" for i in range(45)]
    path.write_text("\n".join(tokens) + "\n")
    return str(path)


# ----- Google TF1 ---------------------------------------------------------------------------

def test_google_names_are_the_released_ones(tmp_path):
    save_google_dir(_random_encoder(), str(tmp_path))
    names = set(read_checkpoint(str(tmp_path)))
    expected_layer0 = {
        f"bert/encoder/layer_0/{n}" for n in [
            "attention/self/query/kernel", "attention/self/query/bias",
            "attention/self/key/kernel", "attention/self/key/bias",
            "attention/self/value/kernel", "attention/self/value/bias",
            "attention/output/dense/kernel", "attention/output/dense/bias",
            "attention/output/LayerNorm/gamma", "attention/output/LayerNorm/beta",
            "intermediate/dense/kernel", "intermediate/dense/bias",
            "output/dense/kernel", "output/dense/bias",
            "output/LayerNorm/gamma", "output/LayerNorm/beta"]}
    expected = expected_layer0 | {n.replace("layer_0", "layer_1") for n in expected_layer0} | {
        "bert/embeddings/word_embeddings", "bert/embeddings/position_embeddings",
        "bert/embeddings/token_type_embeddings", "bert/embeddings/LayerNorm/gamma",
        "bert/embeddings/LayerNorm/beta", "bert/pooler/dense/kernel", "bert/pooler/dense/bias"}
    assert names == expected
    config = json.loads((tmp_path / "bert_config.json").read_text())
    assert config["num_hidden_layers"] == 2 and config["hidden_act"] == "gelu"


def test_google_round_trip(tmp_path):
    encoder = _random_encoder()
    save_google_dir(encoder, str(tmp_path))
    _same_outputs(encoder, load_google_dir(str(tmp_path)), tol=0)


def test_google_ignores_heads_and_optimizer_slots(tmp_path):
    encoder = _random_encoder()
    extra = {"cls/predictions/output_bias": np.zeros(CONFIG.vocab_size, np.float32),
             "bert/pooler/dense/kernel/adam_m": np.zeros((16, 16), np.float32),
             "global_step": np.array(7, np.int64)}
    save_google_checkpoint(encoder, str(tmp_path / "bert_model.ckpt"), extra=extra)
    CONFIG.save_json(tmp_path / "bert_config.json", flavor="google")
    _same_outputs(encoder, load_google_dir(str(tmp_path)), tol=0)


def _write_google(tmp_path, arrays):
    names = sorted(arrays)
    tf.raw_ops.SaveV2(prefix=str(tmp_path / "bert_model.ckpt"), tensor_names=names,
                      shape_and_slices=[""] * len(names),
                      tensors=[tf.constant(arrays[n]) for n in names])
    CONFIG.save_json(tmp_path / "bert_config.json", flavor="google")


@pytest.mark.parametrize("damage, message", [
    ("drop", "missing from the checkpoint.*layer_1/intermediate/kernel"),
    ("extra", "match nothing in the model.*bert/encoder/layer_0/surprise"),
    ("shape", "wrong shape.*pooler/kernel \\(bert/pooler/dense/kernel\\): "
              "model \\(16, 16\\) vs .* \\(16, 8\\)"),
    ("layers", "not in the model: layer_2/.* \\(bert/encoder/layer_2/"),
])
def test_google_mismatch_names_the_variable_and_loads_nothing(tmp_path, damage, message):
    source = _random_encoder(seed=5)
    save_google_dir(source, str(tmp_path / "ok"))
    arrays = read_checkpoint(str(tmp_path / "ok"))
    if damage == "drop":
        del arrays["bert/encoder/layer_1/intermediate/dense/kernel"]
    elif damage == "extra":
        arrays["bert/encoder/layer_0/surprise"] = np.zeros(3, np.float32)
    elif damage == "shape":
        arrays["bert/pooler/dense/kernel"] = np.zeros((16, 8), np.float32)
    else:
        for name in list(arrays):
            if "layer_1/" in name:
                arrays[name.replace("layer_1/", "layer_2/")] = arrays[name]
    _write_google(tmp_path, arrays)
    target = _random_encoder(seed=9)
    before = [v.numpy().copy() for v in target.weights]
    with pytest.raises(CheckpointMismatchError, match=message):
        from keras_bert.checkpoints.google import load_google_weights

        load_google_weights(target, str(tmp_path))
    for old, v in zip(before, target.weights, strict=True):
        np.testing.assert_array_equal(old, v.numpy())  # nothing half loaded


# ----- Hugging Face -------------------------------------------------------------------------

def test_hf_state_names_and_layouts():
    encoder = _random_encoder()
    state = encoder_to_hf_state(encoder)
    ours = encoder_variables(encoder)
    assert len(state) == len(ours)
    np.testing.assert_array_equal(state["encoder.layer.1.intermediate.dense.weight"],
                                  ours["layer_1/intermediate/kernel"].numpy().T)
    assert state["encoder.layer.0.attention.output.LayerNorm.weight"].shape == (16,)
    assert state["embeddings.token_type_embeddings.weight"].shape == (2, 16)


def test_hf_round_trip(tmp_path):
    encoder = _random_encoder()
    save_hf_dir(encoder, str(tmp_path))
    _same_outputs(encoder, load_hf_dir(str(tmp_path)), tol=0)


def test_hf_prefixed_and_old_layer_norm_names(tmp_path):
    from safetensors.numpy import save_file

    encoder = _random_encoder()
    state = {"bert." + k.replace("LayerNorm.weight", "LayerNorm.gamma")
             .replace("LayerNorm.bias", "LayerNorm.beta"): v
             for k, v in encoder_to_hf_state(encoder).items()}
    state["bert.embeddings.position_ids"] = np.arange(24, dtype=np.int64)[None]
    state["cls.predictions.bias"] = np.zeros(CONFIG.vocab_size, np.float32)
    save_file(state, str(tmp_path / "model.safetensors"))
    CONFIG.save_json(tmp_path / "config.json", flavor="hf")
    _same_outputs(encoder, load_hf_dir(str(tmp_path)), tol=0)


def test_hf_missing_and_unknown(tmp_path):
    from safetensors.numpy import save_file

    from keras_bert.checkpoints.huggingface import load_hf_weights

    state = encoder_to_hf_state(_random_encoder())
    del state["pooler.dense.bias"]
    state["encoder.layer.0.attention.self.rotary.weight"] = np.zeros(2, np.float32)
    save_file(state, str(tmp_path / "model.safetensors"))
    with pytest.raises(CheckpointMismatchError, match="attention.self.rotary.weight"):
        load_hf_weights(BertEncoder(CONFIG), str(tmp_path))
    del state["encoder.layer.0.attention.self.rotary.weight"]
    save_file(state, str(tmp_path / "model.safetensors"))
    with pytest.raises(CheckpointMismatchError, match="missing.*pooler/bias"):
        load_hf_weights(BertEncoder(CONFIG), str(tmp_path))
    # A BertForMaskedLM checkpoint has no pooler: allowed when asked for.
    load_hf_weights(BertEncoder(CONFIG), str(tmp_path), optional=[r"^pooler/"])


@pytest.mark.needs_torch
@pytest.mark.parametrize("hidden_act, hf_name", [("gelu_exact", "gelu"),
                                                 ("gelu_approximate", "gelu_new")])
def test_hf_written_weights_load_in_transformers(tmp_path, hidden_act, hf_name):
    torch = require("torch")
    transformers = require("transformers")
    encoder = _random_encoder(config=CONFIG.replace(hidden_act=hidden_act))
    save_hf_dir(encoder, str(tmp_path))
    assert json.loads((tmp_path / "config.json").read_text())["hidden_act"] == hf_name
    ref = transformers.BertModel.from_pretrained(str(tmp_path)).eval()
    x = _inputs()
    with torch.no_grad():
        out = ref(**{"input_ids": torch.tensor(x["input_word_ids"], dtype=torch.long),
                     "attention_mask": torch.tensor(x["input_mask"], dtype=torch.long),
                     "token_type_ids": torch.tensor(x["input_type_ids"], dtype=torch.long)})
    ours = encoder(x)
    real = x["input_mask"].astype(bool)
    np.testing.assert_allclose(ours["sequence_output"].numpy()[real],
                               out.last_hidden_state.numpy()[real], atol=1e-4)
    np.testing.assert_allclose(ours["pooled_output"], out.pooler_output.numpy(), atol=1e-4)


# ----- model directories and convert --------------------------------------------------------

def test_model_dir_round_trip(tmp_path, vocab_file):
    encoder = _random_encoder()
    model_dir = save_model_dir(encoder, str(tmp_path / "m"), vocab_file, lower_case=False)
    loaded = load_model_dir(str(tmp_path / "m"))
    assert loaded.config == CONFIG and loaded.lower_case is False
    assert open(loaded.vocab_file).read() == open(vocab_file).read()
    _same_outputs(encoder, model_dir.load_encoder(), tol=0)
    assert not [p for p in os.listdir(tmp_path) if ".tmp-" in p]


def test_extra_files_are_in_place_before_the_rename(tmp_path, vocab_file, monkeypatch):
    """`write_extra` files (the pretraining heads) land with the directory, not after it; a
    directory being replaced stays readable until the new one is in place."""
    path = str(tmp_path / "m")
    save_model_dir(_random_encoder(), path, vocab_file, lower_case=True)
    renames, real_replace = [], os.replace

    def replace(src, dst):
        renames.append((os.path.basename(src), os.path.basename(dst), sorted(os.listdir(src))))
        if dst == path:  # the new directory goes in: the old one waits aside, whole
            aside = [p for p in os.listdir(tmp_path) if ".old-" in p]
            assert len(aside) == 1 and os.path.exists(tmp_path / aside[0] / "encoder.weights.h5")
        real_replace(src, dst)

    monkeypatch.setattr(os, "replace", replace)
    save_model_dir(_random_encoder(), path, vocab_file, lower_case=True,
                   write_extra=lambda d: open(os.path.join(d, "extra.bin"), "wb").close())
    (new_src, new_dst, contents), = [r for r in renames if r[1] == "m"]
    assert ".tmp-" in new_src and "extra.bin" in contents
    assert not [p for p in os.listdir(tmp_path) if ".tmp-" in p or ".old-" in p]
    assert "extra.bin" in os.listdir(path)


def test_model_dir_refuses_to_overwrite_other_directories(tmp_path, vocab_file):
    (tmp_path / "precious").mkdir()
    (tmp_path / "precious" / "notes.txt").write_text("keep me")
    with pytest.raises(FileExistsError, match="refusing"):
        save_model_dir(_random_encoder(), str(tmp_path / "precious"), vocab_file, True)
    assert (tmp_path / "precious" / "notes.txt").read_text() == "keep me"
    with pytest.raises(FileNotFoundError, match="not a keras_bert model directory"):
        load_model_dir(str(tmp_path / "precious"))


@pytest.mark.parametrize("fmt", ["google", "huggingface"])
def test_convert_each_format(tmp_path, vocab_file, fmt):
    encoder = _random_encoder()
    src = str(tmp_path / "src")
    if fmt == "google":
        save_google_dir(encoder, src, vocab_file)
    else:
        save_hf_dir(encoder, src, vocab_file, lower_case=True)
    assert detect_format(src).name == fmt
    model_dir = convert(src, str(tmp_path / "dest"))
    assert model_dir.metadata["format"] == fmt
    assert model_dir.lower_case is True  # vocab w0..w44 has no capitals / tokenizer_config
    _same_outputs(encoder, model_dir.load_encoder(), tol=0)
    # The tokenizer rules follow the source's layout, and --rules overrides them.
    assert model_dir.rules == fmt and model_dir.tokenizer().rules == fmt
    assert model_dir.preprocessor().tokenizer.rules == fmt
    other = "google" if fmt == "huggingface" else "huggingface"
    assert convert(src, str(tmp_path / "d2"), rules=other).rules == other
    assert convert(str(tmp_path / "d2"), str(tmp_path / "d3")).rules == other  # kept


def test_model_dir_records_rules_and_reads_old_manifests_as_google(tmp_path, vocab_file):
    path = str(tmp_path / "m")
    save_model_dir(_random_encoder(), path, vocab_file, True, rules="huggingface")
    manifest = json.loads((tmp_path / "m" / "keras_bert.json").read_text())
    assert manifest["tokenizer"]["rules"] == "huggingface"
    assert load_model_dir(path).rules == "huggingface"
    assert load_model_dir(path).with_rules("google").tokenizer().rules == "google"
    del manifest["tokenizer"]["rules"]  # written before rules were recorded
    (tmp_path / "m" / "keras_bert.json").write_text(json.dumps(manifest))
    assert load_model_dir(path).rules == "google"
    with pytest.raises(ValueError, match="unknown tokenizer rules 'spacy'"):
        load_model_dir(path).with_rules("spacy")


def test_convert_infers_cased_vocab_and_rejects_unknown(tmp_path, vocab_file):
    src = tmp_path / "src"
    save_google_dir(_random_encoder(), str(src), vocab_file)
    with open(src / "vocab.txt", "a") as f:
        f.write("Paris\n")
    assert convert(str(src), str(tmp_path / "d")).lower_case is False
    assert convert(str(src), str(tmp_path / "d2"), lower_case=True).lower_case is True
    (tmp_path / "junk").mkdir()
    with pytest.raises(ValueError, match="holds none of: a keras_bert model directory"):
        detect_format(str(tmp_path / "junk"))


def test_hf_sharded_index_reads_its_shards_and_refuses_names_outside(tmp_path):
    from safetensors.numpy import save_file

    from keras_bert.checkpoints.huggingface import read_weights

    model = tmp_path / "model"
    model.mkdir()
    save_file({"a": np.ones(2, np.float32)}, str(model / "model-00001-of-00002.safetensors"))
    save_file({"b": np.zeros(3, np.float32)}, str(model / "model-00002-of-00002.safetensors"))
    index = model / "model.safetensors.index.json"
    index.write_text(json.dumps({"weight_map": {"a": "model-00001-of-00002.safetensors",
                                                "b": "model-00002-of-00002.safetensors"}}))
    state = read_weights(str(model))
    assert sorted(state) == ["a", "b"] and state["b"].shape == (3,)

    outside = tmp_path / "secret.safetensors"
    save_file({"c": np.ones(1, np.float32)}, str(outside))
    os.symlink(outside, model / "link.safetensors")
    for name in ["../secret.safetensors", str(outside), "sub/../../secret.safetensors",
                 "link.safetensors"]:
        index.write_text(json.dumps({"weight_map": {"a": "model-00001-of-00002.safetensors",
                                                    "c": name}}))
        with pytest.raises(ValueError, match="outside the model directory"):
            read_weights(str(model))


def test_the_convert_command_offers_every_writable_format():
    """`keras-bert convert --to` spells the layouts `formats.FORMATS` can write (one list)."""
    from keras_bert.checkpoints.formats import WRITABLE, checkpoint_format
    from keras_bert.cli.convert import FORMATS

    assert set(FORMATS) == {"keras_bert", *(name.replace("_", "-") for name in WRITABLE)}
    assert all(checkpoint_format(name).name == name.replace("-", "_") for name in FORMATS)
    with pytest.raises(ValueError, match="Unknown checkpoint layout 'onnx'"):
        checkpoint_format("onnx")
