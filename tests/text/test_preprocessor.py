"""`BertPreprocessor`: the tokenizer then the packer, as one serializable Keras layer."""

from __future__ import annotations

import keras
import numpy as np
import pytest
import tensorflow as tf

from keras_bert.text import BertPacker, BertPreprocessor, BertTokenizer

VOCAB = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "call", "me", "ish", "##mael", ".",
         "who", "?", "the", "whale", "some", "years", "ago"]
TEXTS = ["Call me Ishmael.", "Who? The whale", "", "some years ago " * 5]
TEXTS_B = ["the whale", "", "call me", "who"]


@pytest.fixture(scope="module")
def tokenizer():
    return BertTokenizer(VOCAB)


def _by_hand(tokenizer, seq_length, *segments, max_length=8):
    """The packer applied to the tokenizer's ids: what the preprocessor must equal."""
    packer = BertPacker(seq_length, 2, 3, 0, max_length=max_length)
    return packer([tokenizer.tokenize(tf.constant(s)) for s in segments])


def _assert_equal(got, want):
    assert sorted(got) == ["input_mask", "input_type_ids", "input_word_ids"]
    for name in got:
        np.testing.assert_array_equal(np.asarray(got[name]), np.asarray(want[name]), name)


@pytest.mark.parametrize("seq_length", [8, None])
def test_single_pair_and_dict_inputs(tokenizer, seq_length):
    pre = BertPreprocessor(tokenizer, seq_length, max_length=8)
    _assert_equal(pre(tf.constant(TEXTS)), _by_hand(tokenizer, seq_length, TEXTS))
    pair = pre((tf.constant(TEXTS), tf.constant(TEXTS_B)))
    _assert_equal(pre({"text": TEXTS, "text_b": TEXTS_B}), pair)
    _assert_equal(pre(np.asarray(TEXTS, object)), pre(tf.constant(TEXTS)))
    assert pair["input_type_ids"].numpy().max() == 1
    # "call me ish ##mael ." | "the whale" in 8 - 3 = 5 pieces, longest first: 3 | 2.
    assert pair["input_word_ids"].numpy()[0].tolist() == [2, 5, 6, 7, 3, 12, 13, 3]


def test_labels_pass_through_a_dataset_map(tokenizer):
    pre = BertPreprocessor(tokenizer, 8)
    ds = tf.data.Dataset.from_tensor_slices(((TEXTS, TEXTS_B), [0, 1, 1, 0])).batch(4).map(pre)
    features, labels = next(iter(ds))
    assert labels.numpy().tolist() == [0, 1, 1, 0]
    _assert_equal(features, _by_hand(tokenizer, 8, TEXTS, TEXTS_B))


def test_traced_function_matches_eager(tokenizer):
    pre = BertPreprocessor(tokenizer, None, max_length=6)
    fn = tf.function(lambda text: pre(text), input_signature=[tf.TensorSpec([None], tf.string)])
    _assert_equal(fn(tf.constant(TEXTS)), pre(tf.constant(TEXTS)))
    assert fn(tf.constant(TEXTS))["input_word_ids"].shape == (4, 6)


def test_serializes_with_its_vocabulary(tokenizer):
    pre = BertPreprocessor(BertTokenizer(VOCAB, lower_case=False, rules="huggingface"), 10,
                           name="pre")
    config = keras.saving.serialize_keras_object(pre)
    again = keras.saving.deserialize_keras_object(config)
    assert isinstance(again, BertPreprocessor) and again.name == "pre"
    assert (again.seq_length, again.max_length, again.tokenizer.lower_case) == (10, 10, False)
    assert again.tokenizer.rules == "huggingface"
    assert again.tokenizer.vocab == VOCAB
    _assert_equal(again(tf.constant(TEXTS)), pre(tf.constant(TEXTS)))


def test_with_length_shares_the_tokenizer(tokenizer):
    pre = BertPreprocessor(tokenizer, 16)
    dynamic = pre.with_length(None)
    assert dynamic.tokenizer is tokenizer and (dynamic.seq_length, dynamic.max_length) == (
        None, 16)
    assert pre.with_length(8).max_length == 8
    assert pre.special_token_ids["cls"] == 2


def test_bad_inputs_are_named(tokenizer):
    pre = BertPreprocessor(tokenizer, 8)
    with pytest.raises(ValueError, match="one or two text segments, got 3"):
        pre((TEXTS, TEXTS, TEXTS))
    with pytest.raises(ValueError, match="'text' and optionally 'text_b'.*'txt'"):
        pre({"txt": TEXTS})
    with pytest.raises(ValueError, match="seq_length must be at least 3"):
        BertPreprocessor(tokenizer, 2)
