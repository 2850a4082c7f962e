"""Batches at their texts' length (`keras_bert.tasks.batches`): each batch cut to its longest
row rounded up to a length bucket, rows grouped by length on request, the same training
either way, a bounded number of compiled step shapes, and bad settings named.

The independent reference is the full-length batch (`length_buckets="full"`, what every
batch was before): a cut batch must be its first columns, and everything cut away padding.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import keras
import numpy as np
import pytest

from keras_bert import BertConfig, BertEncoder, FitSchedule, TextClassifier
from keras_bert.checkpoints.model_dir import save_model_dir
from keras_bert.cli import main
from keras_bert.tasks.batches import Batching, length_buckets
from tests.support.step_shapes import _texts
from tests.support.tiny_data import SPECIAL, WORDS

ROOT = Path(__file__).resolve().parents[2]
SEQ = 64
BUCKETS = length_buckets(SEQ)  # 16, 32, 48, 64


@pytest.fixture(scope="module")
def still_model_dir(tmp_path_factory) -> str:
    """The tiny BERT of `tests/support/tiny_data.py` without dropout, so that two fits of
    the same batches take the same steps whatever their shapes."""
    root = tmp_path_factory.mktemp("still")
    vocab = root / "vocab.txt"
    vocab.write_text("".join(f"{t}\n" for t in SPECIAL + WORDS), encoding="utf-8")
    config = BertConfig(vocab_size=len(SPECIAL) + len(WORDS), hidden_size=32, num_layers=2,
                        num_heads=4, intermediate_size=64, max_position_embeddings=64,
                        hidden_dropout=0.0, attention_dropout=0.0)
    keras.utils.set_random_seed(11)
    save_model_dir(BertEncoder(config), str(root / "model"), str(vocab), lower_case=True)
    return str(root / "model")


@pytest.fixture(scope="module")
def classifier(still_model_dir):
    return TextClassifier.from_pretrained(still_model_dir, labels=["long", "short"],
                                          seq_length=SEQ, precision="float32", dropout=0.0)


def _stream(clf, rows, batching, count=16, seed=5):
    stream, _ = clf._stream(rows, 8, seed, batching=batching)
    return [(x, y) for x, y in stream.take(count)]


def test_each_batch_is_its_full_length_batch_cut_at_the_first_bucket_that_holds_it(
        classifier):
    rows = classifier._rows(*_texts(60, seed=1))  # 7 batches of 8 and one of 4 an epoch
    cut = _stream(classifier, rows, Batching(length_buckets=BUCKETS))
    full = _stream(classifier, rows, Batching(length_buckets="full"))
    widths = []
    for (x, y), (x_full, y_full) in zip(cut, full, strict=True):
        width = x["input_word_ids"].shape[1]
        longest = int(np.max(np.sum(x_full["input_mask"].numpy(), axis=1)))
        assert x_full["input_word_ids"].shape[1] == SEQ
        if x["input_word_ids"].shape[0] < 8:  # an epoch's partial batch stays whole
            assert width == SEQ
            continue
        assert width == min(b for b in BUCKETS if b >= longest), (width, longest)
        widths.append(width)
        for name in x:
            np.testing.assert_array_equal(x[name], x_full[name][:, :width])
            assert not np.any(x_full[name].numpy()[:, width:]), name  # only padding cut
        np.testing.assert_array_equal(y, y_full)
    assert len(set(widths)) >= 2 and max(widths) <= SEQ


def test_auto_rounds_up_to_the_exports_buckets_only_where_steps_compile_per_shape(
        classifier):
    """XLA and JAX compile one program per shape: there `auto` is the export's buckets.
    TensorFlow without XLA (on CPUs by default) runs any shape: there each batch, the
    partial one too, is cut to exactly its longest row."""
    assert Batching().buckets(SEQ, per_shape=True) == BUCKETS
    assert Batching().resolved(SEQ, per_shape=True).length_buckets == tuple(BUCKETS)
    assert Batching().resolved(SEQ, per_shape=False).length_buckets == "longest"
    assert Batching("longest").buckets(SEQ) == list(range(1, SEQ + 1))
    rows = classifier._rows(*_texts(60, seed=1))
    for x, _ in _stream(classifier, rows, Batching("longest"), 8):
        longest = int(np.max(np.sum(x["input_mask"].numpy(), axis=1)))
        assert x["input_word_ids"].shape[1] == longest


def test_a_cut_batch_answers_as_the_full_one(classifier):
    rows = classifier._rows(*_texts(24, seed=3))
    widths = []
    for (x, _), (x_full, _) in zip(_stream(classifier, rows, Batching(group_by_length=3), 3),
                                   _stream(classifier, rows, Batching("full", 3), 3),
                                   strict=True):
        widths.append(x["input_word_ids"].shape[1])
        np.testing.assert_allclose(classifier.network(x), classifier.network(x_full),
                                   atol=1e-5)
    assert min(widths) < SEQ, widths


def test_grouping_batches_similar_lengths_from_the_same_rows_each_epoch(classifier):
    texts, labels = _texts(64, seed=1)
    rows = classifier._rows(texts, labels)
    per_epoch = 8

    def epochs(batching, seed=5):
        batches = _stream(classifier, rows, batching, 2 * per_epoch, seed)
        lengths = [np.sum(x["input_mask"].numpy(), axis=1) for x, _ in batches]
        ids = [[row + [0] * (SEQ - len(row)) for row in x["input_word_ids"].numpy().tolist()]
               for x, _ in batches]  # each row whole, padded back to the sequence length
        return lengths, ids, batches

    plain_lengths, plain_ids, _ = epochs(Batching())
    lengths, ids, batches = epochs(Batching(group_by_length=4))
    for epoch in range(2):
        take = slice(epoch * per_epoch, (epoch + 1) * per_epoch)
        assert sorted(np.concatenate(lengths[take]).tolist()) == sorted(
            np.concatenate(plain_lengths[take]).tolist())
        assert sorted(sum(ids[take], [])) == sorted(sum(plain_ids[take], []))
    spread = sum(int(b.max() - b.min()) for b in lengths)
    plain_spread = sum(int(b.max() - b.min()) for b in plain_lengths)
    assert spread * 3 < plain_spread, (spread, plain_spread)
    computed = sum(x["input_word_ids"].shape[1] for x, _ in batches)
    plain = sum(x["input_word_ids"].shape[1] for x, _ in _stream(classifier, rows, Batching(),
                                                                   2 * per_epoch))
    assert computed < plain
    # Seeded: the same seed, the same batches; another seed, others.
    again, _, _ = epochs(Batching(group_by_length=4))
    other, _, _ = epochs(Batching(group_by_length=4), seed=6)
    assert all(np.array_equal(a, b) for a, b in zip(lengths, again, strict=True))
    assert not all(np.array_equal(a, b) for a, b in zip(lengths, other, strict=True))


def test_batch_k_is_the_same_from_a_fresh_stream(classifier):
    """What an exact resume needs of grouping: batch k depends on k alone."""
    rows = classifier._rows(*_texts(40, seed=4))
    stream, _ = classifier._stream(rows, 8, 9, batching=Batching(group_by_length=2))
    ordered = [x["input_word_ids"].numpy() for x, _ in stream.take(12)]
    for k in (3, 7, 11):
        x, _ = next(iter(stream.skip(k)))
        np.testing.assert_array_equal(x["input_word_ids"], ordered[k])


def _fitted(model_dir, **batching):
    """A classifier fitted on `_texts(48, seed=7)` with `batching`, and its losses."""
    keras.utils.set_random_seed(3)
    clf = TextClassifier.from_pretrained(model_dir, labels=["long", "short"], seq_length=SEQ,
                                         precision="float32")
    clf.compile(schedule=FitSchedule(learning_rate=3e-3))
    history = clf.fit(*_texts(48, seed=7), batch_size=8, epochs=4, seed=2, verbose=0,
                      **batching)
    return clf, history.history["loss"]


def test_fit_on_cut_batches_trains_as_on_full_ones(still_model_dir):
    """Cut batches take the steps full-length batches take (the same rows per batch)."""
    cut, cut_loss = _fitted(still_model_dir)
    full, full_loss = _fitted(still_model_dir, length_buckets="full")
    np.testing.assert_allclose(cut_loss, full_loss, rtol=1e-5)
    for a, b in zip(cut.network.weights, full.network.weights, strict=True):
        np.testing.assert_allclose(a.numpy(), b.numpy(), atol=1e-5, err_msg=a.path)


# Its fit, a third of the 7.2 s the cut, full and grouped fits took together on a 2-core
# Zen 4: slow. In the README's tier: test_grouping_batches_similar_lengths_from_the_same_
# rows_each_epoch (grouped batches hold the same rows each epoch, of similar lengths) and
# test_fit_on_cut_batches_trains_as_on_full_ones (batches narrower than the full ones
# train as the full ones do).
@pytest.mark.slow
def test_fit_on_grouped_batches_still_learns(still_model_dir):
    """Grouped batches train on the same rows in other batches and still learn."""
    grouped, _ = _fitted(still_model_dir, group_by_length=2)
    assert grouped.evaluate(*_texts(32, seed=8))["accuracy"] >= 0.75


@pytest.mark.parametrize("batching, match", [
    (dict(length_buckets=[16, 32]), "must end at the sequence length 64"),
    (dict(length_buckets=[32, 16, 64]), "must be increasing positive lengths"),
    (dict(length_buckets="short"), "length_buckets is 'auto', 'longest', 'full' or a list"),
    (dict(group_by_length=-2), "group_by_length is a number of batches per chunk"),
])
def test_bad_batching_is_one_clear_error_before_any_work(classifier, batching, match):
    with pytest.raises(ValueError, match=match):
        classifier.fit(["a short text"] * 8, ["short"] * 8, **batching)


def test_the_command_line_names_a_bad_bucket_list(model_dir, tmp_path, capsys):
    train = tmp_path / "train.csv"
    train.write_text("text,label\nthe whale,whale\nthe sea,other\n")
    for flags, message in (
            (["--length-buckets", "16,32"], "must end at the sequence length"),
            (["--length-buckets", "16,x"], "--length-buckets is auto, longest, full"),
            (["--group-by-length", "-1"], "group_by_length is a number")):
        code = main(["finetune", "--task", "classify", "--model", model_dir, "--train",
                     str(train), "--out", str(tmp_path / "out"), "--seq-length", "64",
                     *flags])
        err = capsys.readouterr().err
        assert code == 2 and "Traceback" not in err and message in err, err


def _step_shapes(backend: str, tmp_path, *arguments) -> dict:
    out = tmp_path / f"{backend}.json"
    env = dict(os.environ, KERAS_BACKEND=backend, TF_CPP_MIN_LOG_LEVEL="3")
    done = subprocess.run([sys.executable, "-m", "tests.support.step_shapes", str(out),
                           *arguments], cwd=ROOT, env=env, capture_output=True, text=True,
                          timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(out.read_text())


@pytest.mark.slow  # two processes of about 30-50 s each
@pytest.mark.needs_jax
def test_jax_and_xla_compile_at_most_one_step_per_bucket(tmp_path):
    """Under JAX each traced shape is one compilation: training (no partial batch) traces
    at most one step per bucket, and the streams with a partial batch one more. Under
    TensorFlow with XLA, one program is compiled per distinct shape fed: the same bound."""
    jax = _step_shapes("jax", tmp_path)
    assert jax["backend"] == "jax" and jax["jit_compile"]
    assert 2 <= jax["traces"]["train"] <= len(BUCKETS), jax
    assert {width for _, width in jax["traced"]["train"]} <= set(BUCKETS), jax
    for phase in ("validate", "evaluate"):
        assert jax["traces"][phase] <= len(BUCKETS) + 1, (phase, jax)
    xla = _step_shapes("tensorflow", tmp_path, "--xla")
    assert xla["jit_compile"] is True
    assert 2 <= len(xla["train_widths"]) <= len(BUCKETS)
    assert set(xla["train_widths"]) <= set(BUCKETS), xla
    assert xla["traces"]["train"] <= len(BUCKETS), xla
