"""keras-hub BERT presets in and out of `keras-bert convert`, checked against keras-hub itself."""

import json
import os

import h5py
import numpy as np
import pytest

from keras_bert import BertConfig, BertEncoder
from keras_bert.checkpoints import (
    CheckpointMismatchError,
    detect_format,
    load_hf_dir,
    load_model_dir,
)
from keras_bert.checkpoints.conversion import write_checkpoint
from keras_bert.checkpoints.keras_hub import load_keras_hub_preset, read_weights
from keras_bert.checkpoints.model_dir import save_model_dir
from keras_bert.cli import main
from keras_bert.text.tokenizer import BertTokenizer
from tests.support.reference import minilm_dir, require

VOCAB = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "the", "quick", "brown", "fox", "jump",
         "##s", "##ed", "over", "lazy", "dog", "cafe", "naive", ".", ",", "!", "a", "##b"]
SENTENCES = ["The quick brown fox jumps over the lazy dog.", "Café, naïve DOG!",
             "the foxed dogs jumped", ""]
REAL_TEXT = ["Call me Ishmael.", "The State of the Union is strong.",
             "Naïve café owners ate crème brûlée — twice!",
             "Some years ago—never mind how long precisely—having little or no money in my "
             "purse, and nothing particular to interest me on shore, I thought I would sail."]


@pytest.fixture(scope="module")
def keras_hub():
    return require("keras_hub")


@pytest.fixture(scope="module")
def preset(keras_hub, tmp_path_factory):
    """A random 2-layer keras-hub BERT (every weight random) and its tokenizer, as a preset."""
    root = tmp_path_factory.mktemp("keras_hub")
    (root / "vocab.txt").write_text("\n".join(VOCAB) + "\n")
    backbone = keras_hub.models.BertBackbone(
        vocabulary_size=len(VOCAB), num_layers=2, num_heads=2, hidden_dim=64,
        intermediate_dim=128, max_sequence_length=32,
        name="bert_backbone")  # as keras-hub names a preset's backbone in a fresh process
    rng = np.random.default_rng(0)
    for v in backbone.weights:
        v.assign(rng.normal(0, 0.2, v.shape).astype("float32") + ("gamma" in v.path))
    backbone.save_to_preset(str(root / "preset"))
    tokenizer = keras_hub.models.BertTokenizer(vocabulary=str(root / "vocab.txt"),
                                               lowercase=True)
    tokenizer.save_to_preset(str(root / "preset"))
    return str(root / "preset"), backbone


def _batch(ids_list, seq):
    """`[CLS] ids [SEP]` rows padded to `seq`, two segments: (ours, keras-hub's) inputs."""
    ids = np.zeros((len(ids_list), seq), np.int32)
    mask, types = np.zeros_like(ids), np.zeros_like(ids)
    for row, pieces in enumerate(ids_list):
        pieces = [2, *pieces, 3]
        ids[row, :len(pieces)], mask[row, :len(pieces)] = pieces, 1
        types[row, len(pieces) // 2:len(pieces)] = 1
    return ({"input_word_ids": ids, "input_mask": mask, "input_type_ids": types},
            {"token_ids": ids, "padding_mask": mask, "segment_ids": types})


def _max_diffs(encoder, backbone, ids_list, seq):
    ours, theirs = _batch(ids_list, seq)
    out, ref = encoder(ours), backbone(theirs)
    mask = ours["input_mask"][:, :, None].astype(bool)  # padded positions are not compared
    return (float(np.abs(np.where(mask, out["sequence_output"] - ref["sequence_output"], 0))
                  .max()),
            float(np.abs(np.asarray(out["pooled_output"]) - ref["pooled_output"]).max()))


def _datasets(path):
    with h5py.File(os.path.join(path, "model.weights.h5")) as f:
        found = {}
        f.visititems(lambda n, d: found.update({n: d.shape}) if isinstance(d, h5py.Dataset)
                     else None)
        return found


def test_preset_converts_to_keras_bert_and_back(keras_hub, preset, tmp_path, capsys):
    path, backbone = preset
    assert detect_format(path).name == "keras_hub"
    dest, out = tmp_path / "ours", tmp_path / "back"
    assert main(["convert", path, str(dest)]) == 0
    assert "keras_hub checkpoint, L2/H64/A2, vocab 22, uncased, huggingface tokenizer rules" \
        in capsys.readouterr().out
    model_dir = load_model_dir(str(dest))
    assert model_dir.config.hidden_act == "gelu_approximate"  # keras-hub's BERT activation
    encoder = model_dir.load_encoder()
    rng = np.random.default_rng(1)
    random_ids = [list(rng.integers(5, len(VOCAB), n)) for n in (20, 9, 14)]
    seq_diff, pooled_diff = _max_diffs(encoder, backbone, random_ids, 22)
    assert seq_diff <= 1e-4 and pooled_diff <= 1e-4, (seq_diff, pooled_diff)

    assert main(["convert", str(dest), str(out), "--to", "keras-hub"]) == 0
    assert _datasets(str(out)) == _datasets(path)  # the very h5 layout keras-hub writes
    for name, key in (("config.json", "config"), ("metadata.json", "parameter_count")):
        assert json.loads((out / name).read_text())[key] == \
            json.loads(open(os.path.join(path, name)).read())[key]
    loaded = keras_hub.models.BertBackbone.from_preset(str(out))
    seq_diff, pooled_diff = _max_diffs(encoder, loaded, random_ids, 22)
    assert seq_diff <= 1e-4 and pooled_diff <= 1e-4, (seq_diff, pooled_diff)
    their_tokenizer = keras_hub.models.BertTokenizer.from_preset(str(out))
    our_tokenizer = model_dir.tokenizer()
    theirs = [list(map(int, t)) for t in their_tokenizer(SENTENCES)]
    assert theirs == our_tokenizer.tokenize(SENTENCES).to_list()
    assert 1 not in theirs[0] and 15 in theirs[1]  # "Café" -> "cafe": accents stripped


# 10 s on a 2-core Zen 4 (the real MiniLM through keras-hub): slow. In the README's tier:
# test_preset_converts_to_keras_bert_and_back (both directions against keras-hub's own
# model and tokenizer, on a random preset) and
# tests/checkpoints/test_gelu_per_layout.py (keras-hub refuses the exact GELU unless asked
# to approximate it, and the approximation computes the tanh GELU).
@pytest.mark.slow
def test_real_minilm_as_keras_hub_preset_matches_keras_hub(keras_hub, tmp_path, capsys):
    out = tmp_path / "minilm-keras-hub"
    # MiniLM computes the exact GELU, which keras-hub's BertBackbone cannot: asked for.
    assert main(["convert", minilm_dir(), str(out), "--to", "keras_hub"]) == 2
    assert "exact (erf) GELU" in capsys.readouterr().err and not out.exists()
    assert main(["convert", minilm_dir(), str(out), "--to", "keras_hub",
                 "--approximate-gelu"]) == 0
    backbone = keras_hub.models.BertBackbone.from_preset(str(out))
    tokenizer = keras_hub.models.BertTokenizer.from_preset(str(out))
    ids = [list(map(int, t)) for t in tokenizer(REAL_TEXT)]
    ours = BertTokenizer(os.path.join(minilm_dir(), "vocab.txt"), lower_case=True,
                         rules="huggingface")
    assert ids == ours.tokenize(REAL_TEXT).to_list()
    # Read back, the preset is keras-hub's model (tanh GELU): equal within float32 noise.
    seq_diff, pooled_diff = _max_diffs(load_keras_hub_preset(str(out)), backbone, ids, 48)
    assert seq_diff <= 1e-4 and pooled_diff <= 1e-4, (seq_diff, pooled_diff)
    # The source model (exact GELU) differs from keras-hub's run of it by the approximation.
    seq_diff, pooled_diff = _max_diffs(load_hf_dir(minilm_dir()), backbone, ids, 48)
    assert 1e-6 < seq_diff <= 1e-2 and pooled_diff <= 1e-2, (seq_diff, pooled_diff)


def _fake_preset(path, registered_name):
    os.makedirs(path)
    with open(os.path.join(path, "config.json"), "w") as f:
        json.dump({"class_name": registered_name.split(">")[-1], "config": {},
                   "registered_name": registered_name}, f)
    with open(os.path.join(path, "metadata.json"), "w") as f:
        json.dump({"keras_version": "3.15.1", "keras_hub_version": "0.32.0"}, f)
    h5py.File(os.path.join(path, "model.weights.h5"), "w").close()
    return str(path)


def test_preset_of_another_architecture_is_refused(tmp_path, capsys):
    path = _fake_preset(tmp_path / "distilbert", "keras_hub>DistilBertBackbone")
    assert detect_format(path).name == "keras_hub"
    with pytest.raises(ValueError, match="'keras_hub>DistilBertBackbone', not a BERT backbone"):
        load_keras_hub_preset(path)
    assert main(["convert", path, str(tmp_path / "out")]) == 2
    assert "DistilBertBackbone', not a BERT backbone" in capsys.readouterr().err


def test_preset_weights_that_do_not_fit_are_named(preset, tmp_path):
    path, _ = preset
    damaged = tmp_path / "damaged"
    for name in ("config.json", "tokenizer.json", "metadata.json"):
        os.makedirs(damaged, exist_ok=True)
        (damaged / name).write_text(open(os.path.join(path, name)).read())
    with h5py.File(damaged / "model.weights.h5", "w") as f:
        for name, value in read_weights(path).items():
            if not name.startswith("layers/transformer_encoder_0/_feedforward_output"):
                f[name.replace("transformer_encoder_0/", "transformer_encoder/")] = value
    with pytest.raises(CheckpointMismatchError, match="missing.*layer_0/output/kernel"):
        load_keras_hub_preset(str(damaged))


def test_writing_a_model_keras_hub_cannot_run_is_refused(tmp_path):
    vocab = tmp_path / "vocab.txt"
    vocab.write_text("\n".join(VOCAB) + "\n")
    config = BertConfig(vocab_size=len(VOCAB), hidden_size=16, num_layers=1, num_heads=2,
                        intermediate_size=32, hidden_act="relu")
    save_model_dir(BertEncoder(config), str(tmp_path / "relu"), str(vocab), True)
    with pytest.raises(ValueError, match="keras-hub preset has no 'relu' activation"):
        write_checkpoint(str(tmp_path / "relu"), str(tmp_path / "out"), "keras_hub")
    assert not (tmp_path / "out").exists()
