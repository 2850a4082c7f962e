"""`keras_bert.text.wordpiece_learner.learn` gives TF Text's vocabulary, faster.

The reference is TF Text's own learner (`tensorflow_text.tools.wordpiece_vocab`), run on the
same word counts with the same settings: the vocabularies must be equal, token for token
and in order.
"""

from __future__ import annotations

import dataclasses
import time

import pytest

from keras_bert.data.corpus import default_corpus_files
from keras_bert.text.vocab_builder import count_words, special_tokens
from keras_bert.text.wordpiece_learner import LearnerSettings, learn
from tests.support.reference import require


def _tf_text_learn(word_counts, vocab_size, reserved, settings: LearnerSettings):
    require("tensorflow_text")
    from tensorflow_text.tools.wordpiece_vocab import wordpiece_tokenizer_learner_lib as lib

    return lib.learn(list(word_counts), vocab_size, reserved,
                     include_joiner_token=True, **dataclasses.asdict(settings))


@pytest.fixture(scope="module")
def corpus_counts():
    """Word counts of the first 250 lines of each embedded corpus file (both casings)."""
    lines = []
    for path in default_corpus_files():
        with open(path, encoding="utf-8") as f:
            lines += [line for _, line in zip(range(250), f, strict=False)]
    return {case: list(count_words(lines, lower_case=case).items()) for case in (True, False)}


SETTINGS = [  # (vocab size, lower case, settings): TF Text's defaults, each filter, cased
    # ~8 s on a busy 2-core Zen 4 (TF Text's learner: nearly all of it), slow; the README's
    # tier keeps these settings (`keras-bert build-vocab`'s) in `test_build_vocab_reproduces_
    # the_embedded_vocabulary` (the whole embedded corpus, uncased, against the vocabulary TF
    # Text's learner made), each filter against TF Text in the cases below and by hand.
    pytest.param(1000, True, LearnerSettings(lower_thresh=2), marks=pytest.mark.slow),
    (800, True, LearnerSettings(lower_thresh=2, max_input_tokens=2000, max_unique_chars=40,
                                max_token_length=8)),
    (1200, False, LearnerSettings(lower_thresh=1, num_iterations=1, slack_ratio=0.0)),
]


@pytest.mark.parametrize("vocab_size,lower_case,settings", SETTINGS)
def test_same_vocabulary_as_tf_texts_learner(corpus_counts, vocab_size, lower_case,
                                             settings):
    counts = corpus_counts[lower_case]
    reserved = special_tokens(2)
    start = time.perf_counter()
    ours = learn(counts, vocab_size, reserved, settings)
    ours_seconds = time.perf_counter() - start
    start = time.perf_counter()
    want = _tf_text_learn(counts, vocab_size, reserved, settings)
    reference_seconds = time.perf_counter() - start
    assert len(want) > len(reserved) + 100  # a real vocabulary, not only characters
    assert ours == want
    assert ours_seconds < reference_seconds  # ~35x on the embedded corpus (AMD EPYC, 2026-11-26)


def test_hand_made_counts():
    """Small counts where the order, the characters and a word TF Text's split cannot
    finish (its characters are rare, hence not kept) all matter."""
    counts = {"low": 5, "lower": 2, "newest": 6, "widest": 3, "new": 9, "lowest": 1,
              "x": 1, "[CLS]": 99, "aaaaaaaaaaaa": 4}
    for settings in (LearnerSettings(lower_thresh=1), LearnerSettings(lower_thresh=3),
                     LearnerSettings(lower_thresh=1, max_unique_chars=5),
                     LearnerSettings(lower_thresh=1, num_iterations=0)):
        for size in (12, 25, 60):
            assert learn(counts, size, ["[CLS]"], settings) == _tf_text_learn(
                counts.items(), size, ["[CLS]"], settings), (settings, size)


def test_empty_counts_are_refused():
    with pytest.raises(ValueError, match="no words"):
        learn({}, 100, [])


def test_build_vocab_reproduces_the_embedded_vocabulary(tmp_path):
    """`keras-bert build-vocab` with its defaults on the embedded corpus writes the shipped
    `corpus_uncased_8k.txt` byte for byte (learned by TF Text's learner when it was made;
    keras_bert/data/vocab/README.md), in seconds (TF Text's learner: ~50 s)."""
    import os

    from keras_bert.cli import main

    shipped = os.path.join(os.path.dirname(default_corpus_files()[0]), os.pardir, "vocab",
                           "corpus_uncased_8k.txt")
    out = tmp_path / "vocab.txt"
    assert main(["build-vocab", "--output", str(out), "--vocab-size", "8000"]) == 0
    with open(shipped, encoding="utf-8") as f:
        assert out.read_text(encoding="utf-8") == f.read()
