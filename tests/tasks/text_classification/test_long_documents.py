"""Texts longer than the sequence length, read in windows (`long_text="windows"`) or
truncated, by the sentence-level task models: what `predict`, `evaluate`, training and the
export compute, and what a client is told about what was read.

The learning test's task (the rule): documents of consecutive sentences of the embedded
Moby Dick (neutral filler, ~110 words), with one sentence inserted at a random sentence
boundary after the first 70 words -- beyond the first window at sequence length 64, whose
62 word pieces hold fewer than 70 words -- that decides the label: "the secret colour of the
flag is violet." (label `violet`) or "... indigo." (`indigo`); neither word is in the book.
"""

from __future__ import annotations

import dataclasses
import random
import re

import numpy as np
import pytest
import tensorflow as tf

import keras_bert
from keras_bert.config import LongTextReading
from keras_bert.data.corpus import default_corpus_files
from keras_bert.export.session_bundle import SessionBundle
from keras_bert.tasks import serving as serving_module

ISHMAEL = ("call me ishmael some years ago never mind how long precisely having little or "
           "no money in my purse and nothing particular to interest me on shore").split()
MARKERS = {"indigo": "the secret colour of the flag is indigo.",
           "violet": "the secret colour of the flag is violet."}


def _sentences() -> list[str]:
    text = " ".join(open(default_corpus_files()[0], encoding="utf-8").read().split())
    return [s for s in re.split(r"(?<=[.!?])\s+", text) if 4 <= len(s.split()) <= 30]


def documents(count: int, seed: int, words: int = 110) -> tuple[list[str], list[str]]:
    """`(texts, labels)` by the rule of the module docstring."""
    sentences, rng = _sentences(), random.Random(seed)
    words_of_the_book = {w.strip(".,;:!?'\"()-").lower() for s in sentences for w in s.split()}
    assert not words_of_the_book & set(MARKERS)  # the rule holds
    texts, labels = [], []
    for _ in range(count):
        at, body = rng.randrange(len(sentences) - 60), []
        while sum(len(s.split()) for s in body) < words:
            body.append(sentences[at + len(body)])
        after = [j + 1 for j in range(len(body))
                 if sum(len(s.split()) for s in body[:j + 1]) >= 70]
        label = rng.choice(sorted(MARKERS))
        body.insert(rng.choice(after), MARKERS[label])
        texts.append(" ".join(body))
        labels.append(label)
    return texts, labels


def _reading(model, reading: LongTextReading):
    """The same weights, reading as `reading` says (the reading is the model's config)."""
    config = model.get_config()
    config["config"] = {**config["config"], "reading": reading}
    copy = type(model).from_config(config)
    copy.network.set_weights(model.network.get_weights())
    return copy


@pytest.mark.slow
def test_windows_find_the_deciding_sentence_that_truncation_never_reads(minilm_model_dir):
    """Real all-MiniLM-L6-v2, 2 epochs on 60 documents, 40 held out. Read in windows, the
    sentence is found: with the windows' logits' maximum, accuracy >= 0.9 (2026-11-27: 1.0
    at learning rates 2e-4 and 4e-4, 2 and 3 epochs); with their mean (the default) well
    above the majority baseline (0.825-0.9 in those runs: one window holds the evidence,
    the others pull the mean towards the prior); the first window alone stays at chance
    (0.375-0.4). Truncated, the same weights or a model trained truncating stay at the
    majority baseline. (A tiny random BERT learns neither in this budget.)"""
    train, train_labels = documents(60, seed=1)
    test, test_labels = documents(40, seed=2)
    scores = {}
    for mode in ("windows", "truncate"):
        model = keras_bert.TextClassifier.from_pretrained(
            minilm_model_dir, labels=sorted(MARKERS), seq_length=64, reading=mode, seed=0,
            precision="float32")
        model.fit(train, train_labels, epochs=2, batch_size=32, seed=1, verbose=0)
        scores[mode] = model.evaluate(test, test_labels)
        if mode == "windows":
            read = model.predict(test)
            assert (read["num_windows"] > 1).all() and not read["truncated"].any()
            for aggregate in ("max", "first"):
                scores[f"windows, {aggregate}"] = _reading(
                    model, dataclasses.replace(model.config.reading, aggregate=aggregate)
                ).evaluate(test, test_labels)
            scores["windows-weights, truncated"] = _reading(
                model, LongTextReading("truncate")).evaluate(test, test_labels)
    print({name: score["accuracy"] for name, score in scores.items()})
    majority = scores["windows"]["majority_baseline"]
    assert scores["windows, max"]["accuracy"] >= 0.9, scores
    assert scores["windows"]["accuracy"] >= majority + 0.2, scores
    for name in ("truncate", "windows-weights, truncated", "windows, first"):
        assert scores[name]["accuracy"] <= majority + 0.15, scores


@pytest.fixture(scope="module")
def windowed():
    """A tiny random classifier at sequence length 32 reading in windows (stride 8, at
    most 4 windows a text), with texts of every hard length."""
    reading = LongTextReading("windows", doc_stride=8, max_windows=4, aggregate="mean")
    model = keras_bert.TextClassifier.from_pretrained("random-tiny", labels=["a", "b", "c"],
                                                      seq_length=32, reading=reading, seed=3,
                                                      precision="float32")
    texts = ["", "the", " ".join(["the"] * 30), " ".join(["the"] * 31),  # 30 fit: 32 - 2
             " ".join((ISHMAEL * 4)[:60]), "call me ishmael " * 6000]  # ~100,000 characters
    return model, texts


def test_windows_say_what_was_read(windowed):
    model, texts = windowed
    read = model.predict(texts)
    assert read["num_windows"].tolist() == [1, 1, 1, 2, 4, 4]
    assert read["truncated"].tolist() == [False, False, False, False, True, True]
    assert read["num_tokens"][:4].tolist() == [0, 1, 30, 31]
    assert read["num_tokens"][5] >= 18_000
    assert np.isfinite(read["logits"]).all()
    # The same weights reading by truncation: one window, the rest flagged unread.
    cut = _reading(model, LongTextReading("truncate")).predict(texts)
    assert cut["num_windows"].tolist() == [1] * 6
    assert cut["truncated"].tolist() == [False, False, False, True, True, True]
    # Texts that fit in one window: identical answers either way.
    np.testing.assert_array_equal(cut["logits"][:3], read["logits"][:3])


def test_windows_logits_are_the_mean_of_each_window_read_alone(windowed):
    """A text's windows, each packed and run alone, then averaged (NumPy): `predict`."""
    model, texts = windowed
    text = texts[4]  # 60+ pieces: windows at 0, 8, 16, 24 (30 each; the rest unread)
    pieces = model.preprocessor.tokenize(tf.constant([text]))[0].numpy()
    rows = [pieces[start:start + 30] for start in (0, 8, 16, 24)]
    packed = model.preprocessor.pack([tf.ragged.constant([list(r) for r in rows],
                                                         dtype=tf.int32)])
    alone = model.network(packed, training=False).numpy()
    np.testing.assert_allclose(model.predict([text])["logits"][0], alone.mean(axis=0),
                               rtol=1e-5, atol=1e-6)


def test_training_evaluate_predict_and_export_read_the_same_windows(windowed, tmp_path):
    model, texts = windowed
    labels = ["a", "b", "c", "a", "b", "c"]
    stream, count = model._stream(model._rows(texts, labels), batch_size=64)
    features, targets = next(iter(stream))
    assert count == 13 and len(targets) == 13  # 1 + 1 + 1 + 2 + 4 + 4 windows
    assert targets.numpy().tolist() == [0, 1, 2, 0, 0, 1, 1, 1, 1, 2, 2, 2, 2]
    export = model.export(str(tmp_path / "export"))
    request = {"text": np.array([t.encode() for t in texts], dtype=object)}
    predicted = model.predict(texts)
    with SessionBundle(export) as bundle:  # as TF Serving loads it
        served = bundle.run("serving_default", request)
        windows = bundle.run("preprocess", request)
    for name in ("input_word_ids", "input_mask", "input_type_ids"):
        width = windows[name].shape[1]
        np.testing.assert_array_equal(windows[name], features[name].numpy()[:, :width])
        assert not features[name].numpy()[:, width:].any()  # training pads to 32
    np.testing.assert_array_equal(windows["text_index"], [0, 1, 2, 3, 3, 4, 4, 4, 4,
                                                          5, 5, 5, 5])
    for name in ("logits", "probabilities"):
        np.testing.assert_allclose(served[name], predicted[name], atol=1e-5)
    for name in ("num_tokens", "num_windows", "truncated"):
        np.testing.assert_array_equal(served[name], predicted[name])
    assert [t.decode() for t in served["label"]] == predicted["label"].tolist()
    evaluation = model.evaluate(texts, labels)
    gold = np.array([0, 1, 2, 0, 1, 2])
    assert evaluation["accuracy"] == pytest.approx(
        np.mean(np.argmax(predicted["logits"], axis=-1) == gold))


def test_a_request_over_the_window_cap_is_refused_by_name(windowed, monkeypatch):
    model, texts = windowed
    monkeypatch.setattr(serving_module, "MAX_REQUEST_WINDOWS", 5)
    fresh = keras_bert.TextClassifier.from_config(model.get_config())
    assert fresh.predict(texts[:4])["num_windows"].sum() == 5  # at the cap: answered
    with pytest.raises(tf.errors.InvalidArgumentError, match="more than 5 windows"):
        fresh.predict(texts[:5])


def test_an_xla_export_reads_windows_as_the_plain_one(windowed):
    """`export --xla`: the windows of a request, flattened, run the XLA-compiled network
    (padded to a length bucket and a power-of-two number of rows) and aggregate as without."""
    model, texts = windowed
    module = model.serving_functions()
    module.use_xla()
    got = module.traced("serving_default")(text=tf.constant(texts))
    want = model.predict(texts)
    np.testing.assert_allclose(got["logits"].numpy(), want["logits"], atol=1e-5)
    np.testing.assert_array_equal(got["num_windows"].numpy(), want["num_windows"])


@pytest.mark.slow
def test_the_command_line_reads_in_windows_too(tmp_path, capsys):
    """`keras-bert finetune --long-text windows`: the task block records the reading; the
    evaluation in `metrics.json`, `keras-bert predict` and the Python model loaded from the
    directory answer alike, each saying what it read."""
    import csv
    import json

    from keras_bert.cli import main

    rows = [(" ".join((ISHMAEL * 3)[i:i + 12 + 5 * i]), "long" if i % 2 else "short")
            for i in range(12)]
    data = tmp_path / "data.csv"
    with open(data, "w", encoding="utf-8", newline="") as f:
        csv.writer(f).writerows([("text", "label"), *rows])
    out = tmp_path / "run"
    assert main(["finetune", "--task", "classify", "--model", "random-tiny",
                 "--train", str(data), "--eval", str(data), "--out", str(out),
                 "--seq-length", "32", "--long-text", "windows", "--doc-stride", "8",
                 "--max-windows", "4", "--window-aggregate", "max", "--epochs", "1",
                 "--batch-size", "8", "--quiet", "--precision", "float32"]) == 0
    capsys.readouterr()
    metrics = json.loads((out / "metrics.json").read_text())
    model = keras_bert.TextClassifier.load(str(out / "model"))
    assert model.config.reading == LongTextReading("windows", 8, 4, "max")
    texts = [text for text, _ in rows]
    read = model.predict(texts)
    assert metrics["train_windows"] == int(read["num_windows"].sum()) > len(rows)
    assert metrics["train_examples"] == len(rows)
    assert main(["predict", str(out / "model"), "--input", str(data)]) == 0
    lines = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert [line["num_windows"] for line in lines] == read["num_windows"].tolist()
    assert [line["truncated"] for line in lines] == read["truncated"].tolist()
    np.testing.assert_allclose([line["probabilities"] for line in lines],
                               read["probabilities"], atol=1e-5)
    accuracy = np.mean([line["label"] == label for line, (_, label) in zip(lines, rows,
                                                                           strict=True)])
    assert metrics["eval"]["accuracy"] == pytest.approx(accuracy)


@pytest.mark.slow
def test_embeddings_in_windows_are_the_token_weighted_mean_then_normalized(tmp_path):
    """A text's vector: its windows' vectors (the model's pooling, unnormalized) averaged,
    each weighted by the word pieces it read, then L2-normalized; the export answers it."""
    from keras_bert.tasks.text_embedding.network import BertEmbedder

    reading = LongTextReading("windows", doc_stride=8, max_windows=4)
    embedder = keras_bert.TextEmbedder.from_pretrained(
        "random-tiny", pooling="mean", normalize=True, seq_length=32, reading=reading,
        precision="float32")
    short, long = "call me ishmael", " ".join(ISHMAEL[:26] + ISHMAEL[:14])
    pieces = embedder.preprocessor.tokenize(tf.constant([long]))[0].numpy()
    assert len(pieces) == 40  # windows at 0, 8, 16 holding 30, 30 and 24 pieces
    rows = [list(pieces[start:start + 30]) for start in (0, 8, 16)]
    packed = embedder.preprocessor.pack([tf.ragged.constant(rows, dtype=tf.int32)])
    plain = BertEmbedder(embedder.network.encoder, pooling="mean", normalize=False)
    vectors = plain(packed, training=False).numpy()
    want = np.average(vectors, axis=0, weights=[30, 30, 24])
    got = embedder.predict([short, long])
    assert got["num_windows"].tolist() == [1, 3]
    np.testing.assert_allclose(got["embedding"][1], want / np.linalg.norm(want), atol=1e-6)
    truncating = keras_bert.TextEmbedder.from_pretrained(
        "random-tiny", pooling="mean", normalize=True, seq_length=32, precision="float32")
    truncating.network.set_weights(embedder.network.get_weights())
    np.testing.assert_allclose(truncating.predict([short])["embedding"], got["embedding"][:1],
                               atol=1e-6)  # one window: the same vector either way
    with SessionBundle(embedder.export(str(tmp_path / "export"))) as bundle:
        served = bundle.run("serving_default", {"text": np.array([short.encode(),
                                                                  long.encode()], dtype=object)})
    np.testing.assert_allclose(served["embedding"], got["embedding"], atol=1e-6)
