"""BertMasker: the original masking rule, statistics over >100k predictions, whole words."""

import numpy as np
import pytest
import tensorflow as tf

from keras_bert.text.masker import BertMasker, continuation_flags

PAD, UNK, CLS, SEP, MASK = 0, 1, 2, 3, 4
VOCAB = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"] + [f"w{i}" for i in range(995)] + \
    [f"##p{i}" for i in range(1000)]
SPECIAL = [PAD, UNK, CLS, SEP, MASK]
FIRST_PIECE = 1000  # ids >= 1000 are `##` continuation pieces


def _batch(rng, n, seq=128, pieces=False):
    """Packed pairs of random lengths: [CLS] a [SEP] b [SEP] then padding."""
    ids = np.zeros((n, seq), np.int32)
    high = 2000 if pieces else FIRST_PIECE
    for row in range(n):
        length = rng.integers(8, seq + 1)  # with the three special tokens
        len_a = rng.integers(1, length - 3)
        a = rng.integers(5, high, len_a)
        b = rng.integers(5, high, length - 3 - len_a)
        tokens = [CLS, *a, SEP, *b, SEP]
        ids[row, :len(tokens)] = tokens
    return ids, (ids != PAD).astype(np.int32)


def _expected_count(num_tokens, max_predictions=20, rate=0.15):
    return min(max_predictions, max(1, int(round(num_tokens * rate))))


def test_statistics_over_100k_predictions():
    rng = np.random.default_rng(0)
    masker = BertMasker(len(VOCAB), MASK, SPECIAL, max_predictions=20)
    totals = {"pred": 0, "tokens": 0, "mask": 0, "same": 0, "random": 0}
    seed = 0
    while totals["pred"] < 100_000:
        ids, mask = _batch(rng, 1024)
        out = masker({"input_word_ids": ids, "input_mask": mask}, tf.constant([seed, 7]))
        seed += 1
        weights = out["masked_lm_weights"].numpy().astype(bool)
        positions = out["masked_lm_positions"].numpy()
        corrupted = out["input_word_ids"].numpy()
        rows = np.nonzero(weights)[0]
        cols = positions[weights]
        original = ids[rows, cols]
        # Never a special or padding position; labels are the original ids.
        assert not np.isin(original, SPECIAL).any()
        np.testing.assert_array_equal(out["masked_lm_ids"].numpy()[weights], original)
        # Exactly the original number of predictions per sequence.
        counts = weights.sum(axis=1)
        expected = [_expected_count(n) for n in mask.sum(axis=1)]
        np.testing.assert_array_equal(counts, expected)
        # Outside the predicted positions nothing changes.
        changed = corrupted != ids
        changed[rows, cols] = False
        assert not changed.any()
        new = corrupted[rows, cols]
        totals["pred"] += len(rows)
        totals["tokens"] += int(mask.sum())
        totals["mask"] += int((new == MASK).sum())
        totals["same"] += int((new == original).sum())
        totals["random"] += int(((new != MASK) & (new != original)).sum())
    rate = totals["pred"] / totals["tokens"]
    assert abs(rate - 0.15) <= 0.003, rate
    # A random replacement equals the original with probability 1/|V| (0.05%): negligible.
    assert abs(totals["mask"] / totals["pred"] - 0.8) <= 0.01
    assert abs(totals["same"] / totals["pred"] - 0.1) <= 0.01
    assert abs(totals["random"] / totals["pred"] - 0.1) <= 0.01


def test_outputs_are_sorted_padded_and_static():
    masker = BertMasker(len(VOCAB), MASK, SPECIAL, max_predictions=6)
    ids = np.array([[CLS, 10, 11, 12, SEP, 13, SEP, PAD], [CLS, SEP, PAD, PAD, PAD, PAD, PAD, PAD]],
                   np.int32)
    out = masker({"input_word_ids": ids, "input_mask": (ids != PAD).astype(np.int32)},
                 tf.constant([3, 4]))
    positions = out["masked_lm_positions"].numpy()
    weights = out["masked_lm_weights"].numpy()
    assert positions.shape == weights.shape == (2, 6)
    assert weights[0].sum() == 1 and weights[1].sum() == 0  # round(7*.15)=1; no candidates
    assert np.all(positions[weights == 0] == 0)
    real = positions[0][weights[0] > 0]
    assert np.all(np.diff(real) > 0)
    assert out["input_word_ids"].numpy()[1].tolist() == ids[1].tolist()


def test_seeded_deterministic_and_dynamic_in_tf_data():
    masker = BertMasker(len(VOCAB), MASK, SPECIAL)
    ids, mask = _batch(np.random.default_rng(1), 64)

    def pipeline(seed):
        data = tf.data.Dataset.from_tensor_slices({"input_word_ids": ids, "input_mask": mask})
        seeds = tf.data.Dataset.random(seed=seed, rerandomize_each_iteration=True).batch(2)
        return tf.data.Dataset.zip(data.batch(16), seeds).map(masker)

    ds = pipeline(42)
    epoch1 = [b["masked_lm_positions"].numpy() for b in ds]
    epoch2 = [b["masked_lm_positions"].numpy() for b in ds]
    again = [b["masked_lm_positions"].numpy() for b in pipeline(42)]
    assert any((a != b).any() for a, b in zip(epoch1, epoch2, strict=True))  # new masks
    for a, b in zip(epoch1, again, strict=True):  # reproducible from the seed
        np.testing.assert_array_equal(a, b)


def _words(ids_row, mask_row):
    """Candidate words of one row as lists of positions (start + following ## pieces)."""
    words = []
    for i, (token, real) in enumerate(zip(ids_row, mask_row, strict=True)):
        if not real or token in SPECIAL:
            continue
        if token >= FIRST_PIECE and words and words[-1][-1] == i - 1:
            words[-1].append(i)
        else:
            words.append([i])
    return words


def test_whole_word_masking_takes_whole_words_greedily():
    rng = np.random.default_rng(5)
    masker = BertMasker(len(VOCAB), MASK, SPECIAL, max_predictions=20, whole_word=True,
                        continuation=continuation_flags(VOCAB))
    ids, mask = _batch(rng, 512, pieces=True)
    out = masker({"input_word_ids": ids, "input_mask": mask}, tf.constant([9, 9]))
    weights = out["masked_lm_weights"].numpy().astype(bool)
    positions = out["masked_lm_positions"].numpy()
    multi_piece_taken = 0
    for row in range(len(ids)):
        chosen = set(positions[row][weights[row]].tolist())
        budget = _expected_count(int(mask[row].sum()))
        assert len(chosen) <= budget
        for word in _words(ids[row], mask[row]):
            taken = [p in chosen for p in word]
            assert all(taken) or not any(taken), (row, word)  # a word is never split
            if all(taken):
                multi_piece_taken += len(word) > 1
            else:  # skipped only because it did not fit what was left of the budget
                assert len(word) > budget - len(chosen)
    assert multi_piece_taken > 50


def test_bad_arguments():
    with pytest.raises(ValueError, match="continuation"):
        BertMasker(10, 4, SPECIAL, whole_word=True)
    with pytest.raises(ValueError, match="mask_rate"):
        BertMasker(10, 4, SPECIAL, mask_rate=0)
    with pytest.raises(ValueError, match="3 flags for a vocab of 10"):
        BertMasker(10, 4, SPECIAL, continuation=np.zeros(3, bool))


def _greedy_reference(word_len, is_word, budget):
    """The original's loop: visit words in order, take one if it still fits the budget."""
    taken = np.zeros(word_len.shape, bool)
    for row in range(len(word_len)):
        count = 0
        for j in range(word_len.shape[1]):
            if is_word[row, j] and count + word_len[row, j] <= budget[row]:
                taken[row, j] = True
                count += word_len[row, j]
    return taken


@pytest.mark.parametrize("seq", [1, 7, 128])
def test_greedy_fit_matches_the_loop_and_stops_early_safely(seq):
    rng = np.random.default_rng(seq)
    fit = tf.function(BertMasker._greedy_fit)
    for trial in range(20):
        batch = [1, 5, 64][trial % 3]
        word_len = rng.integers(1, 6, (batch, seq)).astype(np.int32)
        # Words anywhere (not only first in the order), some rows with none at all.
        is_word = rng.random((batch, seq)) < rng.choice([0.0, 0.2, 0.9])
        budget = rng.integers(1, 21, batch).astype(np.int32)
        got = fit(tf.constant(word_len), tf.constant(is_word), tf.constant(budget)).numpy()
        np.testing.assert_array_equal(got, _greedy_reference(word_len, is_word, budget))


def test_random_replacements_are_uniform_over_the_vocabulary():
    # Every prediction replaced by a random id (rates 0 / 1), so that each replacement is
    # one draw of the "uniformly random vocabulary id" of the rule, over a 64-id vocab.
    vocab_size, words = 64, np.arange(5, 64)
    masker = BertMasker(vocab_size, MASK, SPECIAL, max_predictions=20, mask_token_rate=0.0,
                        random_token_rate=1.0)
    rng = np.random.default_rng(11)
    draws = []
    for seed in range(8):
        ids = np.full((512, 64), PAD, np.int32)
        ids[:, 0], ids[:, 1:63], ids[:, 63] = CLS, rng.choice(words, (512, 62)), SEP
        out = masker({"input_word_ids": ids, "input_mask": np.ones_like(ids)},
                     tf.constant([seed, 13]))
        weights = out["masked_lm_weights"].numpy().astype(bool)
        rows = np.nonzero(weights)[0]
        draws.append(out["input_word_ids"].numpy()[rows, out["masked_lm_positions"].numpy()
                                                   [weights]])
    draws = np.concatenate(draws)
    counts = np.bincount(draws, minlength=vocab_size)
    assert len(draws) == 8 * 512 * 10 and len(counts) == vocab_size  # round(64 * .15) each
    expected = len(draws) / vocab_size  # 640 per id, specials and [MASK] included
    chi_square = float(((counts - expected) ** 2 / expected).sum())
    # 63 degrees of freedom: mean 63, standard deviation sqrt(126) = 11.2; the bound is
    # six of them above the mean (the seeded draws give a fixed value under it).
    assert chi_square < 63 + 6 * np.sqrt(126), (chi_square, counts)
    assert counts.min() > 0.8 * expected and counts.max() < 1.2 * expected, counts
