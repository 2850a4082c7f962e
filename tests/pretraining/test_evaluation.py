"""The held-out split of `keras-bert pretrain` and the NSP baseline it is judged against."""

import pytest
import tensorflow as tf

from keras_bert.data.corpus import default_corpus_files, guess_format, read_documents
from keras_bert.pretraining.evaluation import nsp_majority_baseline, split_documents


def _sources(*sizes):
    """Documents named (source, index) so that the test can tell where each came from."""
    return [[[f"s{s} d{i}."] for i in range(size)] for s, size in enumerate(sizes)]


def _held_out_per_source(sources, held_out):
    return [sum(doc in docs for doc in held_out) for docs in sources]


def test_every_source_gives_its_share():
    # 112 chapters + 12 speeches (the embedded corpus) at 15%: 19 held out; shares 16.87 and
    # 1.84 -> 16 + 1, the two left go to the largest remainders (.87, .84): 17 + 2.
    sources = _sources(112, 12)
    train, held_out = split_documents(sources, 0.15)
    assert _held_out_per_source(sources, held_out) == [17, 2]
    assert len(train) == 124 - 19
    assert sorted(map(str, train + held_out)) == sorted(str(d) for s in sources for d in s)


def test_a_small_source_is_not_left_out():
    # The regression: 6 documents spread over the concatenated corpus all fell in the first,
    # larger source, so held-out NSP had no random-next segment from the other source.
    # Shares 5.42 and 0.58: 5 + 0, the remaining one goes to the second source (.58 > .42).
    sources = _sources(112, 12)
    _, held_out = split_documents(sources, 0.05)
    assert _held_out_per_source(sources, held_out) == [5, 1]


def test_held_out_documents_are_spread_evenly():
    sources = _sources(20)
    _, held_out = split_documents(sources, 0.2)  # 4 of 20: one in the middle of each fifth
    assert held_out == [sources[0][i] for i in (2, 7, 12, 17)]


@pytest.mark.parametrize("sizes, fraction", [((9,), 0.5), ((5, 4), 0.5), ((30,), 0.0)])
def test_nothing_held_out_from_small_corpora_or_fraction_zero(sizes, fraction):
    sources = _sources(*sizes)
    train, held_out = split_documents(sources, fraction)
    assert held_out == [] and len(train) == sum(sizes)


def test_at_least_two_held_out_and_two_left_for_training():
    assert len(split_documents(_sources(10), 0.01)[1]) == 2
    train, held_out = split_documents(_sources(6, 6), 0.99)
    assert len(train) == 2 and len(held_out) == 10


def test_embedded_corpus_holds_out_speeches_and_chapters():
    sources = [list(read_documents(p, guess_format(p))) for p in default_corpus_files()]
    _, held_out = split_documents(sources, 0.15)
    per_source = _held_out_per_source(sources, held_out)
    assert len(per_source) == 2 and min(per_source) >= 2


def test_nsp_majority_baseline_counts_examples_over_batches():
    batches = [{"next_sentence_labels": tf.constant([1, 1, 0])},
               {"next_sentence_labels": tf.constant([1, 0])}]
    dataset = tf.data.Dataset.from_generator(
        lambda: iter(batches),
        output_signature={"next_sentence_labels": tf.TensorSpec([None], tf.int32)})
    baseline, examples = nsp_majority_baseline(dataset)
    assert examples == 5 and baseline == pytest.approx(3 / 5)
    flipped = dataset.map(lambda b: {"next_sentence_labels": 1 - b["next_sentence_labels"]})
    assert nsp_majority_baseline(flipped) == (pytest.approx(3 / 5), 5)
    assert nsp_majority_baseline(dataset.take(0)) == (0.0, 0)
