"""BertPacker: layout, segment ids, and BERT's longest-first truncation."""

import numpy as np
import pytest
import tensorflow as tf
from hypothesis import given, settings
from hypothesis import strategies as st

from keras_bert.text.packer import BertPacker, longest_first_lengths

CLS, SEP, PAD = 101, 102, 0


def truncate_pair_loop(a, b, budget):
    """The rule of the original `truncate_seq_pair`, step by step: pop from the longer
    segment (from B on a tie) until the pair fits."""
    a, b = list(a), list(b)
    while len(a) + len(b) > budget:
        if len(a) > len(b):
            a.pop()
        else:
            b.pop()
    return a, b


@settings(max_examples=300, deadline=None)
@given(st.integers(0, 60), st.integers(0, 60), st.integers(0, 50))
def test_closed_form_equals_the_original_loop(len_a, len_b, budget):
    expected = truncate_pair_loop(range(len_a), range(len_b), budget)
    got = longest_first_lengths(tf.constant([len_a]), tf.constant([len_b]), budget)
    assert (int(got[0][0]), int(got[1][0])) == (len(expected[0]), len(expected[1]))


def test_pair_layout_and_truncation():
    packer = BertPacker(8, CLS, SEP, PAD)
    a = tf.ragged.constant([[1, 2, 3], [1, 2, 3, 4, 5, 6, 7, 8], [5]])
    b = tf.ragged.constant([[9], [9, 8, 7, 6, 5, 4], []])
    out = {k: v.numpy().tolist() for k, v in packer([a, b]).items()}
    assert out["input_word_ids"] == [[CLS, 1, 2, 3, SEP, 9, SEP, PAD],
                                     [CLS, 1, 2, 3, SEP, 9, 8, SEP],
                                     [CLS, 5, SEP, SEP, PAD, PAD, PAD, PAD]]
    assert out["input_type_ids"] == [[0, 0, 0, 0, 0, 1, 1, 0],
                                     [0, 0, 0, 0, 0, 1, 1, 1],
                                     [0, 0, 0, 1, 0, 0, 0, 0]]
    assert out["input_mask"] == [[1] * 7 + [0], [1] * 8, [1] * 4 + [0] * 4]


def test_single_segment_dynamic_length():
    packer = BertPacker(None, CLS, SEP, PAD, max_length=6)
    out = packer(tf.ragged.constant([[1, 2], [1, 2, 3, 4, 5, 6, 7], []]))
    ids = out["input_word_ids"].numpy().tolist()
    assert ids == [[CLS, 1, 2, SEP, PAD, PAD], [CLS, 1, 2, 3, 4, SEP],
                   [CLS, SEP, PAD, PAD, PAD, PAD]]
    short = packer(tf.ragged.constant([[1], [2, 3]]))["input_word_ids"]
    assert short.shape == (2, 4)  # padded to the longest row only
    assert np.all(out["input_type_ids"].numpy() == 0)


def test_in_tf_data_with_static_shape():
    packer = BertPacker(16, CLS, SEP, PAD)
    ds = tf.data.Dataset.from_tensor_slices(tf.ragged.constant([[1, 2], [3, 4, 5]])).batch(2)
    spec = ds.map(lambda x: packer([x])).element_spec
    assert spec["input_word_ids"].shape.as_list() == [None, 16]
    assert spec["input_word_ids"].dtype == tf.int32


def test_bad_arguments():
    with pytest.raises(ValueError, match="seq_length must be at least 3"):
        BertPacker(2, CLS, SEP)
    packer = BertPacker(8, CLS, SEP)
    x = tf.ragged.constant([[1]])
    with pytest.raises(ValueError, match="one or two segments"):
        packer([x, x, x])
    with pytest.raises(ValueError, match="batch, \\(tokens\\)"):
        packer([tf.ragged.constant([[[1]]])])


def _pack_reference(rows_a, rows_b, seq_length):
    """Plain-Python packing of pairs: the original loop, then [CLS] A [SEP] B [SEP] + pad."""
    ids, types, mask = [], [], []
    for a, b in zip(rows_a, rows_b, strict=True):
        a, b = truncate_pair_loop(a, b, seq_length - 3)
        row = [CLS, *a, SEP, *b, SEP]
        pad = seq_length - len(row)
        ids.append(row + [PAD] * pad)
        types.append([0] * (len(a) + 2) + [1] * (len(b) + 1) + [0] * pad)
        mask.append([1] * len(row) + [0] * pad)
    return ids, types, mask


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(st.lists(st.integers(1000, 1999), max_size=20),
                          st.lists(st.integers(2000, 2999), max_size=20)),
                min_size=1, max_size=6),
       st.integers(3, 24))
def test_pairs_equal_a_plain_python_packing(pairs, seq_length):
    rows_a, rows_b = [list(p[0]) for p in pairs], [list(p[1]) for p in pairs]
    a = tf.RaggedTensor.from_row_lengths(
        tf.constant(sum(rows_a, []), tf.int32), [len(r) for r in rows_a])
    b = tf.RaggedTensor.from_row_lengths(
        tf.constant(sum(rows_b, []), tf.int32), [len(r) for r in rows_b])
    out = BertPacker(seq_length, CLS, SEP, PAD)([a, b])
    ids, types, mask = _pack_reference(rows_a, rows_b, seq_length)
    assert out["input_word_ids"].numpy().tolist() == ids
    assert out["input_type_ids"].numpy().tolist() == types
    assert out["input_mask"].numpy().tolist() == mask
