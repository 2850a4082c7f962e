"""`keras-bert pretrain --init`: a Google release or a Hugging Face directory continues
pretraining with ITS pretraining heads (MLM transform + NSP), a keras_bert model directory
with new heads; the heads are compared with the arrays written into the checkpoint."""

from __future__ import annotations

import os
import warnings

import numpy as np
import pytest

from keras_bert.checkpoints.model_dir import save_model_dir
from keras_bert.checkpoints.pretraining_heads import (
    head_variables,
    save_google_pretrainer,
    save_hf_pretrainer,
)
from keras_bert.cli import main
from keras_bert.config import BertConfig
from keras_bert.data.corpus import DEFAULT_VOCAB
from keras_bert.jobs.pretrain import PretrainJob, pretraining_model
from keras_bert.models import BertPretrainer
from keras_bert.text.tokenizer import load_vocab

# The tanh GELU: the one GELU Google's layout holds (its modeling.py computes no other).
CONFIG = BertConfig(vocab_size=len(load_vocab(DEFAULT_VOCAB)), hidden_size=16, num_layers=1,
                    num_heads=2, intermediate_size=32, max_position_embeddings=64,
                    hidden_act="gelu_approximate")
SEQ = 32  # within CONFIG's 64 positions (the model refuses a longer sequence length)


def _source(seed: int) -> BertPretrainer:
    """A pretrainer whose weights (heads included) are all random, hence recognisable."""
    model = BertPretrainer.from_bert_config(CONFIG)
    rng = np.random.default_rng(seed)
    for v in model.weights:
        v.assign(rng.normal(0, 0.2, v.shape).astype("float32"))
    return model


def _heads(model) -> dict[str, np.ndarray]:
    return {name: v.numpy() for name, v in head_variables(model).items()}


@pytest.mark.parametrize("layout", ["google", "huggingface"])
def test_init_from_a_checkpoint_brings_its_heads(tmp_path, layout):
    source = _source(seed=3)
    path = str(tmp_path / layout)
    save = save_google_pretrainer if layout == "google" else save_hf_pretrainer
    save(source, path, vocab_file=DEFAULT_VOCAB)
    job = PretrainJob(out=str(tmp_path / "run"), init=path, seq_length=SEQ)
    model = pretraining_model(job)
    tokenizer = model.tokenizer
    assert tokenizer.vocab == load_vocab(os.path.join(path, "vocab.txt"))
    pretrainer = model.pretrainer
    want, got = _heads(source), _heads(pretrainer)
    assert sorted(got) == sorted(want) and len(want) >= 6
    for name in want:
        np.testing.assert_allclose(got[name], want[name], atol=1e-6, err_msg=name)
    np.testing.assert_allclose(pretrainer.encoder.embeddings.word_embeddings.embeddings.numpy(),
                               source.encoder.embeddings.word_embeddings.embeddings.numpy())


def test_init_from_a_model_directory_starts_new_heads(tmp_path):
    source = _source(seed=4)
    model_dir = save_model_dir(source.encoder, str(tmp_path / "model"), DEFAULT_VOCAB, True)
    job = PretrainJob(out=str(tmp_path / "run"), init=model_dir.path, seq_length=SEQ)
    pretrainer = pretraining_model(job).pretrainer
    assert not np.allclose(_heads(pretrainer)["nsp/kernel"], _heads(source)["nsp/kernel"])


@pytest.mark.slow
def test_cli_continues_a_google_release(tmp_path):
    path = str(tmp_path / "google")
    save_google_pretrainer(_source(seed=5), path, vocab_file=DEFAULT_VOCAB)
    with warnings.catch_warnings():
        warnings.simplefilter("error", UserWarning)  # no head left initialised
        assert main(["pretrain", "--init", path, "--out", str(tmp_path / "run"), "--steps",
                     "2", "--steps-per-epoch", "2", "--batch-size", "4", "--seq-length",
                     "32", "--max-predictions", "4"]) == 0
    assert os.path.exists(tmp_path / "run" / "model" / "keras_bert.json")
    # The run's model directory holds its heads: `--init run/model` continues with them.
    job = PretrainJob(out=str(tmp_path / "run2"), init=str(tmp_path / "run" / "model"),
                      seq_length=SEQ)
    with warnings.catch_warnings():
        warnings.simplefilter("error", UserWarning)
        continued = pretraining_model(job).pretrainer
    trained = BertPretrainer.from_bert_config(CONFIG)
    trained.load_weights(str(tmp_path / "run" / "pretrainer.weights.h5"))
    for name, value in _heads(trained).items():
        np.testing.assert_allclose(_heads(continued)[name], value, atol=1e-6, err_msg=name)


def test_a_directory_of_no_known_layout_is_named(tmp_path):
    (tmp_path / "nothing").mkdir()
    with pytest.raises(ValueError, match="holds none of: a keras_bert model directory"):
        pretraining_model(PretrainJob(out=str(tmp_path / "run"),
                                      init=str(tmp_path / "nothing")))


def test_converting_a_google_release_keeps_its_heads(tmp_path):
    source = _source(seed=6)
    path = str(tmp_path / "google")
    save_google_pretrainer(source, path, vocab_file=DEFAULT_VOCAB)
    dest = str(tmp_path / "converted")
    assert main(["convert", path, dest]) == 0
    assert os.path.exists(os.path.join(dest, "pretraining_heads.weights.h5"))
    job = PretrainJob(out=str(tmp_path / "run"), init=dest, seq_length=SEQ)
    with warnings.catch_warnings():
        warnings.simplefilter("error", UserWarning)  # every head came from the release
        continued = pretraining_model(job).pretrainer
    for name, value in _heads(source).items():
        np.testing.assert_allclose(_heads(continued)[name], value, atol=1e-6, err_msg=name)
    # --encoder-only: the encoder alone, as before
    bare = str(tmp_path / "bare")
    assert main(["convert", path, bare, "--encoder-only"]) == 0
    assert not os.path.exists(os.path.join(bare, "pretraining_heads.weights.h5"))
