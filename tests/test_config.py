"""`BertConfig`: presets, the Google / Hugging Face / own JSON formats, and validation."""

from __future__ import annotations

import dataclasses
import json
import os

import pytest

from keras_bert import PRESETS, BertConfig
from keras_bert.activation_names import GOOGLE, HIDDEN_ACTS
from tests.support.reference import minilm_dir

# Google's released `bert_config.json` of uncased_L-12_H-768_A-12, verbatim.
GOOGLE_BASE_JSON = """{
  "attention_probs_dropout_prob": 0.1,
  "hidden_act": "gelu",
  "hidden_dropout_prob": 0.1,
  "hidden_size": 768,
  "initializer_range": 0.02,
  "intermediate_size": 3072,
  "max_position_embeddings": 512,
  "num_attention_heads": 12,
  "num_hidden_layers": 12,
  "type_vocab_size": 2,
  "vocab_size": 30522
}
"""
GOOGLE_KEYS = set(json.loads(GOOGLE_BASE_JSON))
GOOGLE_REQUIRED_KEYS = ["vocab_size", "hidden_size", "num_hidden_layers",
                        "num_attention_heads", "intermediate_size"]


# A config where no field has its default value, so every field is exercised.
NON_DEFAULT = BertConfig(vocab_size=1001, hidden_size=96, num_layers=3, num_heads=6,
                         intermediate_size=200, hidden_act="gelu_approximate",
                         hidden_dropout=0.25, attention_dropout=0.05,
                         max_position_embeddings=128, type_vocab_size=3,
                         initializer_range=0.05, layer_norm_epsilon=1e-6)


# ----- presets ---------------------------------------------------------------------------------


@pytest.mark.parametrize("name, layers, hidden, heads", [
    ("tiny", 2, 128, 2),
    ("mini", 4, 256, 4),
    ("small", 4, 512, 8),
    ("medium", 8, 512, 8),
    ("base", 12, 768, 12),
    ("large", 24, 1024, 16),
])
def test_preset_sizes(name, layers, hidden, heads):
    config = BertConfig.from_preset(name)
    assert config == PRESETS[name]
    assert (config.num_layers, config.hidden_size, config.num_heads) == (layers, hidden, heads)
    assert config.intermediate_size == 4 * hidden
    assert config.head_size == hidden // heads
    # The rest is BERT's: uncased WordPiece vocabulary, 512 positions, 2 segments, erf GELU
    # (the paper's; Google's code computes the tanh approximation, see below).
    assert (config.vocab_size, config.max_position_embeddings, config.type_vocab_size) == (
        30522, 512, 2)
    assert config.hidden_act == "gelu_exact"
    assert (config.hidden_dropout, config.attention_dropout) == (0.1, 0.1)


def test_presets_are_exactly_the_six_sizes():
    assert list(PRESETS) == ["tiny", "mini", "small", "medium", "base", "large"]


def test_defaults_are_bert_base():
    assert BertConfig() == PRESETS["base"]


def test_preset_overrides():
    config = BertConfig.from_preset("mini", vocab_size=119547, hidden_dropout=0.0)
    assert config.vocab_size == 119547 and config.hidden_dropout == 0.0
    assert config.hidden_size == 256 and config.num_layers == 4
    assert PRESETS["mini"].vocab_size == 30522  # the preset itself is untouched


def test_unknown_preset():
    with pytest.raises(ValueError, match="huge"):
        BertConfig.from_preset("huge")


def test_preset_override_is_validated():
    with pytest.raises(ValueError, match="divisible"):
        BertConfig.from_preset("base", num_heads=7)


# ----- the config object -----------------------------------------------------------------------


def test_frozen_and_hashable():
    config = BertConfig()
    with pytest.raises(dataclasses.FrozenInstanceError):
        config.hidden_size = 1  # type: ignore[misc]
    assert hash(config) == hash(BertConfig())


def test_replace_returns_a_changed_copy():
    base = BertConfig()
    changed = base.replace(num_layers=3)
    assert changed.num_layers == 3 and base.num_layers == 12
    assert changed.replace(num_layers=12) == base


@pytest.mark.parametrize("hidden, heads, head_size", [(768, 12, 64), (384, 12, 32), (32, 4, 8)])
def test_head_size(hidden, heads, head_size):
    assert BertConfig(hidden_size=hidden, num_heads=heads).head_size == head_size


# ----- own JSON format -------------------------------------------------------------------------


@pytest.mark.parametrize("config", [BertConfig(), NON_DEFAULT, PRESETS["tiny"]])
def test_own_dict_round_trip(config):
    d = config.to_dict()
    assert set(d) == {f.name for f in dataclasses.fields(BertConfig)}
    assert BertConfig.from_dict(json.loads(json.dumps(d))) == config


def test_own_dict_says_which_gelu_and_reads_the_old_name_as_erf():
    assert BertConfig().to_dict()["hidden_act"] == "gelu_exact"
    assert NON_DEFAULT.to_dict()["hidden_act"] == "gelu_approximate"
    # Written before the names said which GELU: "gelu" was Keras' erf GELU.
    old = {**BertConfig().to_dict(), "hidden_act": "gelu"}
    assert BertConfig.from_dict(old).hidden_act == "gelu_exact"


def test_own_dict_rejects_unknown_keys():
    with pytest.raises(ValueError, match="num_hidden_layers"):
        BertConfig.from_dict({**BertConfig().to_dict(), "num_hidden_layers": 3})


# ----- Google's bert_config.json ---------------------------------------------------------------


def test_google_dict_has_exactly_googles_keys():
    d = NON_DEFAULT.to_google_dict()
    assert set(d) == GOOGLE_KEYS
    assert d == {
        "attention_probs_dropout_prob": 0.05, "hidden_act": "gelu",
        "hidden_dropout_prob": 0.25, "hidden_size": 96, "initializer_range": 0.05,
        "intermediate_size": 200, "max_position_embeddings": 128, "num_attention_heads": 6,
        "num_hidden_layers": 3, "type_vocab_size": 3, "vocab_size": 1001,
    }


@pytest.mark.parametrize("act", sorted(GOOGLE.writes))
def test_google_dict_round_trip(act):
    # Google's format has no LayerNorm epsilon: it is always BERT's 1e-12.
    config = NON_DEFAULT.replace(hidden_act=act, layer_norm_epsilon=1e-12)
    assert BertConfig.from_google_dict(json.loads(json.dumps(config.to_google_dict()))) == config


@pytest.mark.parametrize("act", sorted(set(HIDDEN_ACTS) - set(GOOGLE.writes)))
def test_google_dict_refuses_what_googles_code_cannot_compute(act):
    # Google's modeling.py knows "gelu" (the tanh form), "relu", "tanh" and "linear" only.
    with pytest.raises(ValueError, match=f"{act if act != 'gelu_exact' else 'exact .erf. GELU'}"):
        NON_DEFAULT.replace(hidden_act=act).to_google_dict()


def test_google_dict_drops_layer_norm_epsilon():
    config = BertConfig.from_google_dict(NON_DEFAULT.to_google_dict())
    assert config.layer_norm_epsilon == 1e-12
    assert config == NON_DEFAULT.replace(layer_norm_epsilon=1e-12)


# Google's releases compute "gelu" with modeling.py's tanh approximation.
GOOGLE_BASE = PRESETS["base"].replace(hidden_act="gelu_approximate")


def test_reads_googles_released_bert_config(tmp_path):
    d = json.loads(GOOGLE_BASE_JSON)
    assert BertConfig.from_google_dict(d) == GOOGLE_BASE
    path = tmp_path / "bert_config.json"
    path.write_text(GOOGLE_BASE_JSON)
    assert BertConfig.from_json_file(path) == GOOGLE_BASE
    assert BertConfig.from_json_file(str(path)) == GOOGLE_BASE


def test_reads_a_small_google_bert_config():
    # uncased_L-4_H-256_A-4 (BERT-mini) as released with Turc et al. 2019.
    d = {"hidden_size": 256, "hidden_act": "gelu", "initializer_range": 0.02,
         "vocab_size": 30522, "hidden_dropout_prob": 0.1, "num_attention_heads": 4,
         "type_vocab_size": 2, "max_position_embeddings": 512, "num_hidden_layers": 4,
         "intermediate_size": 1024, "attention_probs_dropout_prob": 0.1}
    assert BertConfig.from_google_dict(d) == PRESETS["mini"].replace(hidden_act="gelu_approximate")


def test_google_dict_optional_fields_take_bert_defaults():
    d = {k: json.loads(GOOGLE_BASE_JSON)[k] for k in GOOGLE_REQUIRED_KEYS}
    assert BertConfig.from_google_dict(d) == GOOGLE_BASE  # modeling.py's default is "gelu"


@pytest.mark.parametrize("google_act, ours", [
    ("gelu", "gelu_approximate"), ("gelu_new", "gelu_approximate"),
    ("gelu_pytorch_tanh", "gelu_approximate"), ("relu", "relu"), ("tanh", "tanh"),
    ("swish", "silu"), ("silu", "silu"),
])
def test_activation_names(google_act, ours):
    d = {**json.loads(GOOGLE_BASE_JSON), "hidden_act": google_act}
    assert BertConfig.from_google_dict(d).hidden_act == ours


@pytest.mark.parametrize("hf_act, ours", [
    ("gelu", "gelu_exact"), ("gelu_new", "gelu_approximate"),
    ("gelu_pytorch_tanh", "gelu_approximate"), ("relu", "relu"), ("tanh", "tanh"),
    ("swish", "silu"), ("silu", "silu"),
])
def test_hf_activation_names(hf_act, ours):
    d = {**BertConfig().to_hf_dict(), "hidden_act": hf_act}
    assert BertConfig.from_hf_dict(d).hidden_act == ours


def test_hf_writes_gelu_new_for_the_approximation():
    assert BertConfig().to_hf_dict()["hidden_act"] == "gelu"
    assert NON_DEFAULT.to_hf_dict()["hidden_act"] == "gelu_new"


# ----- Hugging Face config.json ----------------------------------------------------------------


@pytest.mark.parametrize("config", [BertConfig(), NON_DEFAULT])
def test_hf_dict_round_trip(config):
    d = config.to_hf_dict()
    assert d["model_type"] == "bert" and d["architectures"] == ["BertModel"]
    assert d["layer_norm_eps"] == config.layer_norm_epsilon
    assert d["position_embedding_type"] == "absolute"
    assert BertConfig.from_hf_dict(json.loads(json.dumps(d))) == config


def test_reads_real_hf_config():
    config_file = os.path.join(minilm_dir(), "config.json")
    expected = BertConfig(vocab_size=30522, hidden_size=384, num_layers=6, num_heads=12,
                          intermediate_size=1536, hidden_act="gelu_exact", hidden_dropout=0.1,
                          attention_dropout=0.1, max_position_embeddings=512, type_vocab_size=2,
                          initializer_range=0.02, layer_norm_epsilon=1e-12)
    with open(config_file, encoding="utf-8") as f:
        assert BertConfig.from_hf_dict(json.load(f)) == expected
    assert BertConfig.from_json_file(config_file) == expected


def test_hf_layer_norm_eps_is_read():
    d = {**BertConfig().to_hf_dict(), "layer_norm_eps": 1e-5}
    assert BertConfig.from_hf_dict(d).layer_norm_epsilon == 1e-5


def test_hf_rejects_other_models():
    with pytest.raises(ValueError, match="roberta"):
        BertConfig.from_hf_dict({**BertConfig().to_hf_dict(), "model_type": "roberta"})
    with pytest.raises(ValueError, match="relative_key"):
        BertConfig.from_hf_dict({**BertConfig().to_hf_dict(),
                                 "position_embedding_type": "relative_key"})


# ----- files -----------------------------------------------------------------------------------


@pytest.mark.parametrize("flavor, config", [
    ("keras_bert", NON_DEFAULT),
    ("google", NON_DEFAULT.replace(layer_norm_epsilon=1e-12)),
    ("hf", NON_DEFAULT),
])
def test_json_file_round_trip(tmp_path, flavor, config):
    path = tmp_path / f"{flavor}.json"
    config.save_json(path, flavor=flavor)
    written = json.loads(path.read_text())
    expected_dict = {"keras_bert": config.to_dict, "google": config.to_google_dict,
                     "hf": config.to_hf_dict}[flavor]()
    assert written == expected_dict
    assert BertConfig.from_json_file(path) == config


def test_a_config_json_without_model_type_is_hugging_faces(tmp_path):
    # Older Hugging Face files have no model_type; their "gelu" is still the erf GELU.
    d = {k: v for k, v in BertConfig().to_hf_dict().items() if k != "model_type"}
    for name, act in (("config.json", "gelu_exact"), ("bert_config.json", "gelu_approximate")):
        (tmp_path / name).write_text(json.dumps(d))
        assert BertConfig.from_json_file(tmp_path / name).hidden_act == act


def test_save_json_default_flavor_is_ours(tmp_path):
    path = tmp_path / "c.json"
    NON_DEFAULT.save_json(path)
    assert json.loads(path.read_text()) == NON_DEFAULT.to_dict()


def test_save_json_bad_flavor(tmp_path):
    with pytest.raises(ValueError, match="pytorch"):
        BertConfig().save_json(tmp_path / "c.json", flavor="pytorch")


# ----- validation ------------------------------------------------------------------------------


def test_hidden_not_divisible_by_heads():
    with pytest.raises(ValueError, match="divisible") as info:
        BertConfig(hidden_size=100, num_heads=12)
    assert "100" in str(info.value) and "12" in str(info.value)


def test_unknown_activation():
    with pytest.raises(ValueError, match="mish"):
        BertConfig(hidden_act="mish")
    with pytest.raises(ValueError, match="mish"):
        BertConfig.from_google_dict({**json.loads(GOOGLE_BASE_JSON), "hidden_act": "mish"})
    # The Google/HF names are not ours: "gelu_new" is only accepted in the file formats,
    # and "gelu" alone, which means the one GELU there and the other here, nowhere.
    with pytest.raises(ValueError, match="gelu_new"):
        BertConfig(hidden_act="gelu_new")
    with pytest.raises(ValueError, match="'gelu' names no GELU.*gelu_exact.*gelu_approximate"):
        BertConfig(hidden_act="gelu")


@pytest.mark.parametrize("missing", GOOGLE_REQUIRED_KEYS)
def test_missing_field_is_named(missing, tmp_path):
    d = json.loads(GOOGLE_BASE_JSON)
    del d[missing]
    with pytest.raises(ValueError, match=f"'{missing}'"):
        BertConfig.from_google_dict(d)
    path = tmp_path / "bert_config.json"
    path.write_text(json.dumps(d))
    with pytest.raises(ValueError, match=missing):
        BertConfig.from_json_file(path)


@pytest.mark.parametrize("field, value", [
    ("vocab_size", 0), ("hidden_size", -8), ("num_layers", 0), ("num_heads", 0),
    ("intermediate_size", 0), ("max_position_embeddings", 0), ("type_vocab_size", 0),
    ("num_layers", 2.0), ("vocab_size", "30522"),
])
def test_non_positive_or_non_int_sizes(field, value):
    with pytest.raises(ValueError, match=field):
        BertConfig(**{field: value})


@pytest.mark.parametrize("field", ["hidden_dropout", "attention_dropout"])
@pytest.mark.parametrize("value", [-0.1, 1.0, 1.5])
def test_dropout_range(field, value):
    with pytest.raises(ValueError, match=field):
        BertConfig(**{field: value})
