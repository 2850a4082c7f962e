"""`TextClassifier` / `TextRegressor`: raw strings through fit, evaluate and predict, the
same weights as `keras-bert finetune`, the export answering what `predict` answered (read
as TF Serving reads it), save / load / `.keras` round trips, and bad input named.

Data: the classify rule of tests/jobs/test_finetune.py (label `whale` when the sentence
mentions "whale"), over its tiny vocabulary (`model_dir` fixture: a random 2-layer encoder).
"""

from __future__ import annotations

import csv

import keras
import numpy as np
import pytest

from keras_bert import FitSchedule, TextClassifier, TextRegressor
from keras_bert.export.session_bundle import SessionBundle
from keras_bert.jobs.finetune import FinetuneJob, run_finetuning
from keras_bert.tasks.task_dir import read_task_dir
from keras_bert.tasks.task_model import TextTaskModel
from tests.jobs.test_finetune import FILLER
from tests.support.callbacks import KillAt, Killed

LABELS = ["other", "whale"]
SEQ = 24
LEARN = FitSchedule(learning_rate=5e-3)  # the CLI test's LEARN rate: the rule in 12 epochs


def _sentences(seed: int, n: int) -> tuple[list[str], list[str]]:
    rng = np.random.default_rng(seed)
    texts, labels = [], []
    for i in range(n):
        words = list(rng.choice(FILLER[:14], size=rng.integers(4, 9)))
        if i % 2:
            words[rng.integers(len(words))] = "whale"
        texts.append(" ".join(words))
        labels.append("whale" if "whale" in words else "other")
    return texts, labels


@pytest.fixture(scope="module")
def trained(model_dir):
    """A classifier fitted on 96 sentences (12 epochs at 5e-3) and its held-out set."""
    keras.utils.set_random_seed(7)
    clf = TextClassifier.from_pretrained(model_dir, labels=LABELS, seq_length=SEQ,
                                         precision="float32")
    clf.compile(schedule=LEARN)
    texts, labels = _sentences(1, 96)
    clf.fit(texts, labels, epochs=12, batch_size=16, seed=7, verbose=0)
    return clf, _sentences(2, 32)


def test_fit_on_raw_strings_learns_the_rule(trained):
    clf, (texts, labels) = trained
    scores = clf.evaluate(texts, labels)
    answers = clf.predict(texts)
    accuracy = float(np.mean(answers["label"] == np.array(labels)))
    assert scores["accuracy"] == pytest.approx(accuracy)  # evaluate == predict, scored here
    assert scores["majority_baseline"] == 0.5
    # Measured over the starting models of seeds 0-4 (tests/conftest.py: model_dir):
    # accuracy 1.0 each; shuffled labels 0.375-0.5 (the held-out set is balanced).
    assert accuracy >= 0.9, scores


# The control's own 12-epoch fit, 5.4 s on a 2-core Zen 4: slow. In the README's tier the
# controls of the same fit path stay: test_multilabel_classifier.py's shuffled labels (a
# SentenceModel too, fitted as this one) and test_token_classifier.py's shuffled tags.
@pytest.mark.slow
def test_fit_on_shuffled_labels_stays_near_chance(model_dir):
    """Negative control of test_fit_on_raw_strings_learns_the_rule: the same fit on
    shuffled labels stays near chance on the same held-out set."""
    texts, labels = _sentences(2, 32)
    keras.utils.set_random_seed(7)
    control = TextClassifier.from_pretrained(model_dir, labels=LABELS, seq_length=SEQ,
                                             precision="float32")
    control.compile(schedule=LEARN)
    train, train_labels = _sentences(1, 96)
    control.fit(train, list(np.random.default_rng(0).permutation(train_labels)), epochs=12,
                batch_size=16, seed=7, verbose=0)
    assert control.evaluate(texts, labels)["accuracy"] <= 0.75


def test_fit_ends_with_the_weights_of_keras_bert_finetune(trained, model_dir, tmp_path):
    # The command repeats `trained`'s fit (its data, rate, epochs and seed), so that the
    # Python side is the module's model rather than a fit of its own.
    texts, labels = _sentences(1, 96)
    train = tmp_path / "train.csv"
    with open(train, "w", encoding="utf-8", newline="") as f:
        csv.writer(f).writerows([("text", "label"), *zip(texts, labels, strict=True)])
    run_finetuning(FinetuneJob(task="classify", model=model_dir, train=str(train),
                               out=str(tmp_path / "cli"), seq_length=SEQ, epochs=12,
                               batch_size=16, learning_rate=LEARN.learning_rate,
                               precision="float32", seed=7, verbose=0))
    cli = TextTaskModel.load(str(tmp_path / "cli" / "model")).network
    ours, theirs = trained[0].network.weights, cli.weights
    assert len(ours) == len(theirs) > 30
    start = TextTaskModel.load(model_dir).network.weights  # the encoder before training
    assert not np.array_equal(ours[0].numpy(), start[0].numpy())  # it did train
    for a, b in zip(ours, theirs, strict=True):
        np.testing.assert_array_equal(a.numpy(), b.numpy(), err_msg=a.path)


def test_export_answers_what_predict_answered(trained, tmp_path):
    clf, (texts, _) = trained
    probe = texts[:6] + ["", "whale " * 40]  # empty and over-long texts too
    want = clf.predict(probe)
    path = clf.export(str(tmp_path / "served"))
    assert path.endswith("/1")
    with SessionBundle(path) as bundle:  # TF Serving's Session path
        got = bundle.run("serving_default", {"text": np.array(probe, dtype=object)})
    assert [v.decode() for v in got["label"]] == list(want["label"])
    np.testing.assert_array_equal(got["label_id"], want["label_id"])
    for name in ("logits", "probabilities"):
        np.testing.assert_allclose(got[name], want[name], rtol=0, atol=1e-5)


def test_predict_traces_its_function_once(trained):
    """Calls after the first reuse the traced function, whatever the batch (tracing it
    again took ~0.8 s per call on a tiny model)."""
    clf, (texts, _) = trained
    first = clf.predict(texts[:3])
    function = clf._serving.traced("serving_default")
    for batch in (texts[:3], texts[:7], ["", "whale " * 40]):
        clf.predict(batch)
    assert clf._serving.traced("serving_default") is function
    assert len(function._list_all_concrete_functions()) == 1
    np.testing.assert_array_equal(clf.predict(texts[:3])["logits"], first["logits"])


def test_predict_command_truncates_at_seq_length_for_its_answers_only(trained, tmp_path,
                                                                      capsys):
    """`keras-bert predict --seq-length 8` answers as the export truncated at 8 pieces
    (`answer_file(max_length=8)`), and the model's `predict` keeps the training length."""
    import json

    from keras_bert.cli import main
    from keras_bert.tasks.in_process import run_in_batches

    clf, (texts, _) = trained
    long = [f"{t} {t}" for t in texts[:5]]  # 8 to 16 words: over 8 pieces, under SEQ
    with open(tmp_path / "texts.csv", "w", newline="", encoding="utf-8") as f:
        csv.writer(f).writerows([["text"], *([t] for t in long)])
    short = run_in_batches(clf.serving_functions(max_length=8).text_function(),
                           {"text": long}, 2)
    before = clf.predict(long)
    answers = clf.answer_file(str(tmp_path / "texts.csv"), 2, max_length=8)
    assert [a["label"] for a in answers] == [label.decode() for label in short["label"]]
    np.testing.assert_allclose([a["probabilities"] for a in answers],
                               short["probabilities"], rtol=0, atol=1e-6)
    assert [a["truncated"] for a in answers] == [True] * 5 == list(short["truncated"])
    np.testing.assert_array_equal(clf.predict(long)["logits"], before["logits"])
    assert not any(a["truncated"] for a in clf.answer_file(str(tmp_path / "texts.csv"), 2))
    directory = clf.save(str(tmp_path / "model"))
    capsys.readouterr()
    assert main(["predict", directory, "--input", str(tmp_path / "texts.csv"),
                 "--seq-length", "8"]) == 0
    lines = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert [a["label"] for a in lines] == [a["label"] for a in answers]
    assert [a["truncated"] for a in lines] == [True] * 5


def test_model_directory_and_keras_file_round_trips(trained, tmp_path):
    clf, (texts, _) = trained
    want = clf.predict(texts)
    path = clf.save(str(tmp_path / "model"))
    assert read_task_dir(path).block["kind"] == "classify"  # keras-bert predict reads it
    for loaded in (TextClassifier.load(path), TextClassifier.from_pretrained(path),
                   _keras_round_trip(clf, tmp_path / "clf.keras")):
        assert isinstance(loaded, TextClassifier) and loaded.labels.names == LABELS
        assert loaded.preprocessor.seq_length == SEQ
        for a, b in zip(loaded.network.weights, clf.network.weights, strict=True):
            np.testing.assert_array_equal(a.numpy(), b.numpy())
        got = loaded.predict(texts)
        assert list(got["label"]) == list(want["label"])
        np.testing.assert_allclose(got["logits"], want["logits"], rtol=0, atol=1e-6)


def _keras_round_trip(model, path):
    model.save(str(path))
    return keras.saving.load_model(str(path))


def test_pairs_and_ids_as_targets(model_dir):
    keras.utils.set_random_seed(0)
    clf = TextClassifier.from_pretrained(model_dir, labels=3, pair=True, seq_length=SEQ,
                                         precision="float32")
    assert clf.labels.names == ["0", "1", "2"] and clf._task_block()["pair"] is True
    pairs = [("the sea", "a whale"), ("the crew sang", "of home")] * 4
    clf.fit(pairs, [0, 2] * 4, epochs=1, batch_size=4, seed=0, verbose=0)
    firsts, seconds = zip(*pairs, strict=True)
    a = clf.predict(pairs)
    b = clf.predict((list(firsts), list(seconds)))
    np.testing.assert_array_equal(a["logits"], b["logits"])
    assert set(clf.evaluate(pairs, ["0", "2"] * 4)) == {"accuracy", "majority_baseline"}


def test_regressor_fits_scores_and_answers(model_dir):
    keras.utils.set_random_seed(0)
    reg = TextRegressor.from_pretrained(model_dir, seq_length=SEQ, precision="float32")
    texts, labels = _sentences(4, 32)
    targets = np.array([label == "whale" for label in labels], np.float32)
    reg.fit(texts, targets, epochs=1, batch_size=16, seed=0, verbose=0)
    scores = reg.evaluate(texts, targets)
    assert set(scores) == {"pearson", "spearman", "mse"}
    predicted = reg.predict(texts)["score"]
    assert predicted.shape == (32,)
    assert scores["mse"] == pytest.approx(float(np.mean((predicted - targets) ** 2)), abs=1e-5)


@pytest.mark.parametrize("x, y, error, match", [
    ("the sea", ["other"], TypeError, "single string"),
    ([], [], ValueError, "empty"),
    (["the sea", 3], ["other", "other"], TypeError, r"x\[1\] is a int"),
    (["the sea", ("a", "b")], ["other", "other"], TypeError, "mixes single texts and pairs"),
    ([("the sea", "a whale")], ["other"], ValueError, "reads single texts"),
    (["the sea"], ["shark"], ValueError, "'shark', which is not one of the model's labels"),
    (["the sea"], [5], ValueError, "ids run from 0 to 1"),
    (["the sea", "a whale"], ["other"], ValueError, "1 targets for 2 texts"),
    (["the sea"], [["other", "whale"]], ValueError, "one label"),
])
def test_bad_input_gets_one_clear_error(trained, x, y, error, match):
    clf, _ = trained
    with pytest.raises(error, match=match):
        clf.evaluate(x, y)


def test_bad_construction_gets_one_clear_error(model_dir):
    with pytest.raises(ValueError, match="needs labels="):
        TextClassifier.from_pretrained(model_dir)
    with pytest.raises(ValueError, match="at least 2"):
        TextClassifier.from_pretrained(model_dir, labels=["only"])
    with pytest.raises(ValueError, match="exceeds the model's max_position_embeddings 64"):
        TextClassifier.from_pretrained(model_dir, labels=LABELS, seq_length=128)
    with pytest.raises(ValueError, match="has no labels"):
        TextRegressor.from_pretrained(model_dir, labels=LABELS)


@pytest.mark.slow
@pytest.mark.parametrize("group_by_length", [0, 2])  # rows grouped by length: as exact
def test_interrupted_fit_resumes_to_the_uninterrupted_weights(model_dir, tmp_path,
                                                               group_by_length):
    texts, labels = _sentences(5, 48)  # 3 batches of 16: 6 steps in 2 epochs

    def fresh():
        keras.utils.set_random_seed(3)
        clf = TextClassifier.from_pretrained(model_dir, labels=LABELS, seq_length=SEQ,
                                             precision="float32")
        clf.compile(schedule=FitSchedule(learning_rate=1e-3))
        return clf

    fit = dict(epochs=2, batch_size=16, seed=3, verbose=0, group_by_length=group_by_length)
    whole = fresh()
    whole.fit(texts, labels, **fit)
    resumable = dict(checkpoint_dir=str(tmp_path / "ckpt"), checkpoint_steps=2, **fit)
    with pytest.raises(Killed):  # killed after step 5: the last checkpoint is step 4
        fresh().fit(texts, labels, callbacks=[KillAt(5)], **resumable)
    resumed = fresh()
    history = resumed.fit(texts, labels, **resumable)
    assert int(resumed.optimizer.iterations.numpy()) == 6
    assert len(history.history["loss"]) == 1  # only the second epoch's end was still to run
    for a, b in zip(resumed.network.weights, whole.network.weights, strict=True):
        np.testing.assert_array_equal(a.numpy(), b.numpy(), err_msg=a.path)
    with pytest.raises(ValueError, match="seed"):  # other arguments: refused, by name
        fresh().fit(texts, labels, **{**resumable, "seed": 4})
    with pytest.raises(ValueError, match="needs seed="):
        fresh().fit(texts, labels, checkpoint_dir=str(tmp_path / "other"), epochs=1)


def test_seed_fixes_the_new_heads_initial_weights(model_dir):
    """`from_pretrained(seed=)` seeds where `keras-bert finetune --seed` seeds: the same
    seed, the same head; another seed, another head (the encoder's weights are loaded)."""
    def head(seed):
        clf = TextClassifier.from_pretrained(model_dir, labels=LABELS, seq_length=SEQ,
                                             precision="float32", seed=seed)
        return [w.numpy() for layer in clf.network.head_layers for w in layer.weights]

    first, again, other = head(3), head(3), head(4)
    assert first and len(first) == len(again) == len(other)
    for a, b in zip(first, again, strict=True):
        np.testing.assert_array_equal(a, b)
    assert any(not np.array_equal(a, b) for a, b in zip(first, other, strict=True))
