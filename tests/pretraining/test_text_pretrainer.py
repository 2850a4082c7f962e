"""`TextPretrainer`: BERT's pretraining on raw documents for a Python user (the engine
`keras-bert pretrain` runs: tests/jobs/test_pretrain_engine.py), its resumable fit, and, for
`predict`'s fill-mask answers, a check against Hugging Face's `BertForMaskedLM` on AntiBERTy
(a real BERT with its masked-LM head)."""

from __future__ import annotations

import os
import shutil

import keras
import numpy as np
import pytest

from keras_bert import TextPretrainer
from keras_bert.data.corpus import default_corpus_files, guess_format
from keras_bert.data.corpus import read_documents as read_file
from keras_bert.pretraining.model import MaskingConfig, as_documents
from keras_bert.training import ResumableCheckpoint
from tests.support.reference import require


@pytest.fixture(scope="module")
def corpus(tmp_path_factory) -> str:
    """The embedded corpus' first 40 documents, one sentence per line."""
    path = default_corpus_files()[0]
    documents = list(read_file(path, guess_format(path)))[:40]
    out = tmp_path_factory.mktemp("corpus") / "small.txt"
    out.write_text("\n\n".join("\n".join(doc) for doc in documents) + "\n", encoding="utf-8")
    return str(out)


def _tiny(seed: int = 3) -> TextPretrainer:
    return TextPretrainer.from_preset("tiny", seq_length=32,
                                      masking=MaskingConfig(max_predictions=5),
                                      precision="float32", seed=seed)


def test_fit_without_steps_runs_the_steps_of_one_pass(corpus):
    """One fit, no steps given: one epoch of `training_data`'s count of steps (one pass
    over the documents' NSP pairs), which halves (give or take the remainder) at twice the
    batch. The fast guard of the slow test below, which fits at both batch sizes."""
    model = _tiny()
    documents = as_documents(corpus)[:8]
    history = model.fit(documents, batch_size=16, seed=5, verbose=0)
    steps = int(model.pretrainer.optimizer.iterations.numpy())
    assert len(history.history["loss"]) == 1 and steps >= 2
    assert model.training_data(documents, batch_size=16, seed=5)[1] == steps
    assert model.training_data(documents, batch_size=32, seed=5)[1] == steps * 16 // 32


# 9.7 s on a 2-core Zen 4 (two fits, each traced): slow. In the README's tier:
# test_fit_without_steps_runs_the_steps_of_one_pass (the first fit, and the count of steps
# `fit` takes from `training_data` at both batch sizes).
@pytest.mark.slow
def test_fit_without_steps_makes_one_pass_and_ends(corpus):
    """The stream is endless; an epoch defaults to the full batches of one pass over the
    documents' NSP pairs, so a newcomer's `fit(documents)` returns."""
    model = _tiny()
    documents = as_documents(corpus)[:8]
    history = model.fit(documents, batch_size=16, seed=5, verbose=0)
    steps = int(model.pretrainer.optimizer.iterations.numpy())
    assert len(history.history["loss"]) == 1 and steps >= 2
    bigger = _tiny()  # twice the batch: half the steps, give or take the remainder
    bigger.fit(documents, batch_size=32, seed=5, verbose=0)
    assert int(bigger.pretrainer.optimizer.iterations.numpy()) == steps * 16 // 32


class _Preempted(Exception):
    pass


class _StopAfterFirstEpoch(keras.callbacks.Callback):
    def on_epoch_end(self, epoch, logs=None):
        raise _Preempted  # after the checkpoint, first of the callbacks, saved the epoch


# 41 s on a busy 2-core Zen 3: two fits; kill-9 resume is tests/jobs/test_pretrain_resume.py's
@pytest.mark.slow
def test_fit_interrupted_resumes_from_its_checkpoint(corpus, tmp_path):
    """`fit(checkpoint=...)` stopped after its first epoch and called again on a new model
    resumes at step 2 of 4 (it runs 2 steps) and ends with the weights of the fit that ran
    straight through."""
    def fit(callbacks=()):
        model = _tiny()
        model.compile(optimizer="lamb", learning_rate=1e-3)
        model.fit(corpus, batch_size=4, epochs=2, steps_per_epoch=2, seed=7, verbose=0,
                  checkpoint=ResumableCheckpoint(str(tmp_path / "ckpt"), every_seconds=None),
                  callbacks=list(callbacks))
        return model

    straight = _tiny()
    straight.compile(optimizer="lamb", learning_rate=1e-3)
    straight.fit(corpus, batch_size=4, epochs=2, steps_per_epoch=2, seed=7, verbose=0)
    with pytest.raises(_Preempted):
        fit([_StopAfterFirstEpoch()])
    assert len(ResumableCheckpoint(str(tmp_path / "ckpt")).checkpoints()) == 1
    batches = []
    resumed = fit([keras.callbacks.LambdaCallback(
        on_train_batch_end=lambda batch, logs: batches.append(batch))])
    assert len(batches) == 2  # only the second epoch's steps ran again
    assert int(resumed.pretrainer.optimizer.iterations.numpy()) == 4
    for a, b in zip(straight.pretrainer.weights, resumed.pretrainer.weights, strict=True):
        np.testing.assert_array_equal(a.numpy(), b.numpy(), err_msg=b.path)


def test_save_and_load_keep_weights_heads_and_answers(corpus, tmp_path):
    model = _tiny()
    model.compile(optimizer="lamb", learning_rate=1e-3)
    model.fit(corpus, batch_size=8, epochs=1, steps_per_epoch=2, seed=1, verbose=0)
    texts = ["call me [MASK].", "the [MASK] whale [MASK] the sea", "no mask here"]
    answers = model.predict(texts, top_k=3)
    path = model.save(str(tmp_path / "model"))
    assert os.path.exists(os.path.join(path, "pretraining_heads.weights.h5"))
    again = TextPretrainer.from_pretrained(path, seq_length=32,
                                           masking=MaskingConfig(max_predictions=5))
    archive = str(tmp_path / "pretrainer.keras")
    model.save(archive)
    reloaded = keras.saving.load_model(archive)
    assert isinstance(reloaded, TextPretrainer) and reloaded.masking == model.masking
    assert reloaded.preprocessor.seq_length == 32
    for other in (again, reloaded):
        for a, b in zip(model.pretrainer.weights, other.pretrainer.weights, strict=True):
            np.testing.assert_array_equal(a.numpy(), b.numpy(), err_msg=b.path)
        got = other.predict(texts, top_k=3)
        np.testing.assert_array_equal(got["tokens"], answers["tokens"])
        np.testing.assert_allclose(got["probabilities"], answers["probabilities"], atol=1e-6)
    assert answers["num_masks"].tolist() == [1, 2, 0]
    assert answers["tokens"].shape == (3, 2, 3)
    assert (answers["tokens"][2] == "").all() and (answers["probabilities"][2] == 0).all()
    assert (np.diff(answers["probabilities"][1], axis=-1) <= 0).all()  # best first


def _antiberty_dir(tmp_path) -> str:
    """AntiBERTy's weights, config and vocabulary in one Hugging Face directory."""
    package = require("antiberty")
    root = os.path.join(os.path.dirname(package.__file__), "trained_models")
    target = tmp_path / "antiberty"
    shutil.copytree(os.path.join(root, "AntiBERTy_md_smooth"), target)
    shutil.copyfile(os.path.join(root, "vocab.txt"), target / "vocab.txt")
    return str(target)


@pytest.mark.needs_torch
def test_predict_answers_what_hugging_faces_masked_lm_answers(tmp_path):
    """Real MLM weights (AntiBERTy, antibody sequences: one token per residue): the top 5
    residues and probabilities for each mask equal `BertForMaskedLM`'s softmax."""
    torch = require("torch")
    transformers = require("transformers")
    path = _antiberty_dir(tmp_path)
    model = TextPretrainer.from_pretrained(path, seq_length=160, precision="float32")
    assert not model.tokenizer.lower_case  # residues are upper-case tokens
    sequences = ["EVQLVESGGGLVQPGGSLRLSCAASGFNIKDTYIHWVRQAPGKGLEWVARIYPTNGYTRYADSVKG",
                 "DIQMTQSPSSLSASVGDRVTITCRASQDVNTAVAWYQQKPGKAPKLLIYSASFLYSGVPSRFSG"]
    masked = [(0, [5, 17, 40]), (1, [9])]
    texts = []
    for row, positions in masked:
        residues = list(sequences[row])
        for p in positions:
            residues[p] = "[MASK]"
        texts.append(" ".join(residues))
    got = model.predict(texts, top_k=5)
    assert got["num_masks"].tolist() == [3, 1]
    vocab = model.preprocessor.tokenizer.vocab
    reference = transformers.BertForMaskedLM.from_pretrained(path).eval()
    for (row, positions), text in zip(masked, texts, strict=True):
        ids = [vocab.index("[CLS]")] + [vocab.index(t) for t in text.split()] + [
            vocab.index("[SEP]")]
        with torch.no_grad():
            logits = reference(torch.tensor([ids])).logits[0].numpy()
        for k, p in enumerate(positions):
            probs = np.exp(logits[p + 1] - logits[p + 1].max())
            probs /= probs.sum()
            best = np.argsort(-probs)[:5]
            assert got["tokens"][row, k].tolist() == [vocab[i] for i in best], (row, p)
            np.testing.assert_allclose(got["probabilities"][row, k], probs[best], atol=1e-4)
    # The masked residues are mostly what the antibody has there (a real MLM head).
    hits = [got["tokens"][row, k, 0] == sequences[row][p]
            for row, positions in masked for k, p in enumerate(positions)]
    assert sum(hits) >= 2, hits


def test_bad_input_gets_one_clear_error(corpus):
    model = _tiny()
    with pytest.raises(ValueError, match="at least 2 documents"):
        model.fit([["one document, one sentence."]], steps_per_epoch=1)
    with pytest.raises(TypeError, match="document 1 is not a list of sentences"):
        model.fit([["a."], [1, 2]], steps_per_epoch=1)
    with pytest.raises(ValueError, match="do not fill one update of 100000 examples"):
        model.fit(corpus, batch_size=100_000)
    with pytest.raises(TypeError, match="not a single string"):
        model.predict("the [MASK] sea")
    with pytest.raises(ValueError, match="non-empty list of texts"):
        model.predict([])
    with pytest.raises(ValueError, match="exceeds the model's max_position_embeddings 512"):
        TextPretrainer(model.pretrainer, model.preprocessor.with_length(600))
    with pytest.raises(ValueError, match="optimizer must be one of"):
        model.compile(optimizer="sgd")
