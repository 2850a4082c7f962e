"""The pretraining tf.data pipeline: structure, consistency with the tokenizer, dynamic masks."""

import os

import numpy as np
import pytest

from keras_bert.data.corpus import default_corpus_files, guess_format, read_documents
from keras_bert.pretraining import dataset as pretraining
from keras_bert.pretraining.dataset import (
    PretrainingOptions,
    pretraining_dataset,
    tokenize_documents,
)
from keras_bert.pretraining.nsp import create_nsp_examples
from keras_bert.text import BertTokenizer
from tests.support.reference import minilm_dir

SEQ, PRED = 64, 10


@pytest.fixture(scope="module")
def tokenizer():
    return BertTokenizer(os.path.join(minilm_dir(), "vocab.txt"), lower_case=True)


@pytest.fixture(scope="module")
def documents(tokenizer):
    path = default_corpus_files()[0]
    docs = list(read_documents(path, guess_format(path)))[:150]
    return tokenize_documents(docs, tokenizer)


def test_tokenize_documents_keeps_structure(tokenizer):
    docs = [["Call me Ishmael.", "Hi."], ["Whale!"]]
    out = tokenize_documents(docs, tokenizer, batch_size=2)
    assert [len(d) for d in out] == [2, 1]
    assert out[0][1].tolist() == tokenizer.tokenize(["Hi."]).to_list()[0]
    assert out[1][0].tolist() == tokenizer.tokenize(["Whale!"]).to_list()[0]


def test_batches_are_packed_masked_pairs_from_the_corpus(tokenizer, documents):
    options = PretrainingOptions(seq_length=SEQ, max_predictions=PRED, seed=3)
    ds = pretraining_dataset(documents, tokenizer, batch_size=16, options=options,
                             drop_remainder=True)
    spec = ds.element_spec
    assert spec["input_word_ids"].shape.as_list() == [16, SEQ]
    assert spec["masked_lm_positions"].shape.as_list() == [16, PRED]
    stream = np.concatenate([s for d in documents for s in d]).tolist()
    text = " " + " ".join(map(str, stream)) + " "
    ids = tokenizer.special_token_ids
    labels = []
    for batch in ds.take(6).as_numpy_iterator():
        for row in range(16):
            words = batch["input_word_ids"][row].copy()
            weights = batch["masked_lm_weights"][row] > 0
            positions = batch["masked_lm_positions"][row][weights]
            words[positions] = batch["masked_lm_ids"][row][weights]  # undo the corruption
            length = int(batch["input_mask"][row].sum())
            seps = np.nonzero(words[:length] == ids["sep"])[0]
            assert words[0] == ids["cls"] and len(seps) == 2 and seps[1] == length - 1
            types = batch["input_type_ids"][row][:length]
            assert (types[:seps[0] + 1] == 0).all() and (types[seps[0] + 1:] == 1).all()
            assert (words[length:] == ids["pad"]).all()
            # Both segments are contiguous runs of the tokenized corpus.
            for segment in (words[1:seps[0]], words[seps[0] + 1:seps[1]]):
                assert len(segment) > 0
                assert " " + " ".join(map(str, segment.tolist())) + " " in text
            assert 1 <= weights.sum() <= PRED
            labels.append(batch["next_sentence_labels"][row])
    assert 0.3 < np.mean(labels) < 0.8


def test_dynamic_masks_and_pairs_per_epoch(tokenizer, documents):
    options = PretrainingOptions(seq_length=SEQ, max_predictions=PRED, seed=5)
    ds = pretraining_dataset(documents, tokenizer, batch_size=32, options=options)
    first = next(iter(ds))["input_word_ids"].numpy()
    second = next(iter(ds))["input_word_ids"].numpy()
    assert not np.array_equal(first, second)
    again = next(iter(pretraining_dataset(documents, tokenizer, 32, options)))
    np.testing.assert_array_equal(first, again["input_word_ids"].numpy())
    static = pretraining_dataset(documents, tokenizer, 32, options, dynamic=False)
    np.testing.assert_array_equal(next(iter(static))["input_word_ids"].numpy(),
                                  next(iter(static))["input_word_ids"].numpy())


def test_whole_word_masking_in_the_pipeline(tokenizer, documents):
    options = PretrainingOptions(seq_length=SEQ, max_predictions=PRED, whole_word=True)
    batch = next(iter(pretraining_dataset(documents, tokenizer, 64, options)))
    vocab = tokenizer.vocab
    positions = batch["masked_lm_positions"].numpy()
    weights = batch["masked_lm_weights"].numpy() > 0
    labels = batch["masked_lm_ids"].numpy()
    words = batch["input_word_ids"].numpy()
    special = set(tokenizer.special_token_ids.values())
    pieces = 0
    for row in range(64):
        chosen = dict(zip(positions[row][weights[row]], labels[row][weights[row]], strict=True))
        for position, label in chosen.items():
            if vocab[label].startswith("##"):
                # A piece is masked with the piece before it, unless it starts a segment (the
                # random truncation can cut a word's front).
                assert position - 1 in chosen or words[row, position - 1] in special
                pieces += 1
    assert pieces > 5


def test_epochs_made_ahead_in_the_background_are_the_seeded_epochs(documents):
    """Epoch e is made (inline or in the background thread) from seed + 1000003 * e."""
    options = PretrainingOptions(seq_length=SEQ, seed=9)
    generate = pretraining._nsp_epochs(documents, options, dynamic=True)
    for epoch in range(3):
        (got,) = list(generate())
        expected = pretraining._epoch_arrays(create_nsp_examples(
            documents, SEQ, options.short_seq_prob, options.dupe_factor,
            seed=9 + 1000003 * epoch))
        for a, b in zip(got, expected, strict=True):
            np.testing.assert_array_equal(a, b)
    static = pretraining._nsp_epochs(documents, options, dynamic=False)
    first, second = next(static()), next(static())
    assert all(np.array_equal(a, b) for a, b in zip(first, second, strict=True))
