"""NSP example creation: the original rules checked as properties on traceable tokens."""

import random

import numpy as np
import pytest

from keras_bert.pretraining.nsp import create_nsp_examples, truncate_pair_randomly


def _corpus(num_docs=60, seed=0, sentence_lengths=(3, 30)):
    """Documents whose token ids encode (document, position): id = doc * 100000 + position."""
    rng = random.Random(seed)
    docs = []
    for d in range(num_docs):
        position, doc = 0, []
        for _ in range(rng.randint(5, 40)):
            length = rng.randint(*sentence_lengths)
            doc.append([d * 100000 + position + k for k in range(length)])
            position += length
        docs.append(doc)
    return docs


def _doc(token):
    return token // 100000


def _contiguous(tokens):
    return all(b == a + 1 for a, b in zip(tokens, tokens[1:], strict=False))


@pytest.mark.parametrize("seq_length", [16, 64, 128])
def test_examples_follow_the_rules(seq_length):
    examples = create_nsp_examples(_corpus(), seq_length=seq_length, short_seq_prob=0.1,
                                   dupe_factor=2, seed=3)
    assert len(examples) > 200
    for ex in examples:
        a, b = ex.tokens_a, ex.tokens_b
        assert a and b and len(a) + len(b) <= seq_length - 3
        # A segment never mixes documents, and is a contiguous run of its document.
        assert len({_doc(t) for t in a}) == 1 and len({_doc(t) for t in b}) == 1
        assert _contiguous(a) and _contiguous(b)
        if ex.is_random_next:
            assert _doc(a[0]) != _doc(b[0])
        else:  # the actual next text: B comes after A in the same document
            assert _doc(a[0]) == _doc(b[0]) and b[0] > a[-1]


def test_half_random_next_when_chunks_have_several_sentences():
    """B is random with probability 1/2, and always when a chunk is a single sentence (short
    sentences make those rare here)."""
    examples = create_nsp_examples(_corpus(300, sentence_lengths=(2, 6)), seq_length=64,
                                   short_seq_prob=0.0, seed=4)
    random_share = np.mean([ex.is_random_next for ex in examples])
    assert 0.47 <= random_share <= 0.56, random_share


def test_short_sequences_and_full_targets():
    examples = create_nsp_examples(_corpus(200), seq_length=128, short_seq_prob=0.0, seed=1)
    lengths = np.array([len(e.tokens_a) + len(e.tokens_b) for e in examples])
    with_short = create_nsp_examples(_corpus(200), seq_length=128, short_seq_prob=0.5, seed=1)
    short_lengths = np.array([len(e.tokens_a) + len(e.tokens_b) for e in with_short])
    assert np.median(lengths) > 100  # chunks fill the 125-token target
    assert np.mean(short_lengths < 60) > np.mean(lengths < 60) + 0.15


def test_seeded_and_dupe_factor():
    docs = _corpus()
    first = create_nsp_examples(docs, seq_length=64, seed=7)
    assert first == create_nsp_examples(docs, seq_length=64, seed=7)
    assert first != create_nsp_examples(docs, seq_length=64, seed=8)
    tripled = create_nsp_examples(docs, seq_length=64, seed=7, dupe_factor=3)
    assert 2.7 <= len(tripled) / len(first) <= 3.3


def test_truncation_cuts_the_longer_segment_at_both_ends():
    rng = random.Random(0)
    fronts = backs = 0
    for _ in range(200):
        a, b = list(range(50)), list(range(100, 120))
        truncate_pair_randomly(a, b, 40, rng)
        assert (len(a), len(b)) == (20, 20)  # longer first, then alternating
        fronts += a[0] > 0
        backs += a[-1] < 49
        assert _contiguous(a) and _contiguous(b)
    assert fronts > 150 and backs > 150


def test_bad_corpora():
    with pytest.raises(ValueError, match="at least 2 non-empty documents"):
        create_nsp_examples([[[1, 2, 3]], [[]], []])
    with pytest.raises(ValueError, match="seq_length"):
        create_nsp_examples(_corpus(), seq_length=4)


def _truncate_token_by_token(tokens_a, tokens_b, max_tokens, rng):
    """The original `truncate_seq_pair` loop of create_pretraining_data.py."""
    while len(tokens_a) + len(tokens_b) > max_tokens:
        longer = tokens_a if len(tokens_a) > len(tokens_b) else tokens_b
        if rng.random() < 0.5:
            del longer[0]
        else:
            longer.pop()


def test_closed_form_truncation_equals_the_original_loop():
    """Same kept tokens and the same draws from the generator, for every length pattern."""
    cases = random.Random(1)
    for trial in range(3000):
        len_a, len_b = cases.randint(0, 60), cases.randint(0, 60)
        max_tokens = cases.randint(0, 80)
        a, b = list(range(len_a)), list(range(1000, 1000 + len_b))
        ref_a, ref_b = list(a), list(b)
        rng, ref_rng = random.Random(trial), random.Random(trial)
        truncate_pair_randomly(a, b, max_tokens, rng)
        _truncate_token_by_token(ref_a, ref_b, max_tokens, ref_rng)
        assert (a, b) == (ref_a, ref_b), (len_a, len_b, max_tokens)
        assert rng.random() == ref_rng.random()


def test_numpy_sentences_give_the_same_examples_as_lists():
    docs = _corpus(40)
    as_arrays = [[np.array(s, np.int32) for s in doc] for doc in docs]
    expected = create_nsp_examples(docs, seq_length=64, seed=11)
    got = create_nsp_examples(as_arrays, seq_length=64, seed=11)
    assert got == expected
    assert all(type(t) is int for ex in got[:20] for t in ex.tokens_a + ex.tokens_b)
