"""The tf.data streams Keras iterates in a fit run without tf.data's autotuning thread
(`keras_bert.training.stream_options.fit_stream`): on TensorFlow 2.21, destroying an iterator
whose thread was tuning often waited out the thread's period, up to a minute after the last
step of a fit (bench/fit_speed.py). The wait itself is a race, so these tests check the
option on every stream a fit, a validation pass or a pretraining run is handed."""

from __future__ import annotations

import os

import keras
import numpy as np
import pytest

from keras_bert import TextClassifier
from keras_bert.pretraining.dataset import (
    PretrainingOptions,
    pretraining_dataset,
    tokenize_documents,
)
from keras_bert.pretraining.tfrecord import read_examples, write_examples
from keras_bert.tasks.batches import Batching, examples_dataset
from keras_bert.tasks.readers import TextExample
from keras_bert.tasks.text_classification.readers import text_dataset
from keras_bert.text import BertTokenizer
from keras_bert.training import resume
from tests.support.reference import minilm_dir


def _tuned(dataset) -> bool:
    """Whether iterating `dataset` starts tf.data's autotuning thread (on by default)."""
    return dataset.options().autotune.enabled is not False


def _features(count: int, seq: int = 16) -> dict:
    lengths = np.arange(count) % seq + 1
    mask = (np.arange(seq)[None] < lengths[:, None]).astype("int32")
    return {"input_word_ids": mask * 7, "input_mask": mask, "input_type_ids": 0 * mask}


@pytest.mark.parametrize("seed", [None, 3])
@pytest.mark.parametrize("batching", [Batching(), Batching(length_buckets="full"),
                                      Batching(group_by_length=True)])
def test_the_kinds_batches_are_not_autotuned(seed, batching):
    ds = examples_dataset(_features(20), np.zeros(20, "int32"), 4, shuffle_seed=seed,
                          batching=batching.resolved(16, False))
    assert not _tuned(ds)


@pytest.mark.parametrize("labels", [None, [0, 1, 0]])
def test_the_classifier_readers_batches_are_not_autotuned(labels):
    examples = [TextExample(text=t, line=i) for i, t in enumerate(["a", "b c", "d"])]
    for seed in (None, 1):
        ds = text_dataset(examples, lambda *x: x, labels, 2, shuffle_seed=seed)
        assert not _tuned(ds)


def test_the_pretraining_batches_are_not_autotuned(tmp_path):
    tokenizer = BertTokenizer(os.path.join(minilm_dir(), "vocab.txt"), lower_case=True)
    docs = tokenize_documents([["Call me Ishmael.", "Some years ago."], ["Whale!", "Ahoy."]],
                              tokenizer)
    options = PretrainingOptions(seq_length=16, max_predictions=3, seed=1)
    assert not _tuned(pretraining_dataset(docs, tokenizer, 2, options))
    batch = next(iter(pretraining_dataset(docs, tokenizer, 2, options, dynamic=False)))
    write_examples([{k: v.numpy() for k, v in batch.items()}], str(tmp_path / "r.tfrecord"))
    assert not _tuned(read_examples(str(tmp_path / "r.tfrecord*"), 16, 3, batch_size=2))


def test_a_fit_hands_keras_untuned_streams(monkeypatch):
    """What `keras.Model.fit` receives in a task model's fit: the training stream and the
    validation stream."""
    seen = []
    fit = keras.Model.fit

    def spy(model, x, **kwargs):
        seen.append(x)
        seen.append(kwargs.get("validation_data"))
        return fit(model, x, **kwargs)

    monkeypatch.setattr(resume.keras.Model, "fit", spy)
    clf = TextClassifier.from_pretrained("random-tiny", labels=["a", "b"], seq_length=16)
    texts, labels = ["the whale", "a ship at sea", "call me", "white"], ["a", "b", "a", "b"]
    clf.fit(texts, labels, epochs=1, batch_size=2, seed=0, verbose=0,
            validation_data=(texts, labels))
    assert len(seen) == 2 and all(ds is not None and not _tuned(ds) for ds in seen)
