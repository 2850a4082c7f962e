"""CoNLL reading, and the Python reference of first-wordpiece label alignment
(`tests/tasks/token_classification/reference_alignment.py`; real uncased BERT vocabulary).

Wordpieces used below (Google's uncased vocab): "Ishmael" -> is ##hma ##el (2003, 22444,
2884); "Queequeg" -> que ##e ##que ##g; "harpooneer" -> harp ##oon ##eer; "Call" -> call
(2655); "me" -> me (2033); "." -> . (1012). [CLS] = 101, [SEP] = 102, [PAD] = 0.
"""

from __future__ import annotations

import os

import numpy as np
import pytest

from keras_bert.tasks.labels import LabelVocab
from keras_bert.tasks.token_classification.conll import read_conll, read_conll_words, tag_vocab
from keras_bert.tasks.token_classification.word_windows import IGNORE_LABEL
from keras_bert.text import BertTokenizer
from tests.support.reference import minilm_dir
from tests.tasks.token_classification.reference_alignment import (
    align_sentences,
    encode_tagged,
    predictions_to_tags,
    tagging_dataset,
    tokenize_words,
    words_that_fit,
)

CONLL = """-DOCSTART- -X- -X- O

Call VB B-VP O
me PRP B-NP O
Ishmael NNP I-NP B-PER
. . O O

Queequeg NNP B-NP B-PER
harpooneer NN I-NP O
"""
X = IGNORE_LABEL


@pytest.fixture(scope="module")
def tokenizer():
    return BertTokenizer(os.path.join(minilm_dir(), "vocab.txt"))


@pytest.fixture
def sentences(tmp_path):
    path = tmp_path / "train.txt"
    path.write_text(CONLL, encoding="utf-8")
    return read_conll(path)


def test_read_conll(sentences):
    assert [(s.words, s.tags, s.line) for s in sentences] == [
        (["Call", "me", "Ishmael", "."], ["O", "O", "B-PER", "O"], 3),
        (["Queequeg", "harpooneer"], ["B-PER", "O"], 8)]


def test_read_conll_words_ignores_tags(tmp_path):
    path = tmp_path / "predict.conll"
    path.write_text("-DOCSTART- O\n\nCall O\nme\n\n\nIshmael B-PER\n", encoding="utf-8")
    assert read_conll_words(path) == [["Call", "me"], ["Ishmael"]]


@pytest.mark.parametrize("text, message", [
    ("EU B-ORG\nrejects\n", r"line 2: expected a word and a tag"),
    ("EU NNP B-ORG\nrejects VBZ O\nGerman JJ B-MISC extra\n", r"line 3: 4 columns where"),
    ("EU B-ORG\n\nrejects X-VERB\n", r"line 3: 'X-VERB' is not a tag"),
    ("-DOCSTART- O\n\n", r"holds no sentence"),
])
def test_bad_conll_rows_name_the_line(tmp_path, text, message):
    path = tmp_path / "bad.txt"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(ValueError, match=message):
        read_conll(path)


def test_first_wordpiece_alignment(tokenizer, sentences):
    vocab = tag_vocab(sentences)  # sorted: B-PER = 0, O = 1
    assert vocab.names == ["B-PER", "O"]
    f = encode_tagged(tokenizer, sentences[:1], vocab, seq_length=12)
    # [CLS] call me is ##hma ##el . [SEP] [PAD] x4
    assert f.input_word_ids[0].tolist() == [101, 2655, 2033, 2003, 22444, 2884, 1012, 102,
                                            0, 0, 0, 0]
    assert f.input_mask[0].tolist() == [1] * 8 + [0] * 4
    # words: call=0, me=1, Ishmael=2 (3 pieces), .=3 ; specials and padding -1
    assert f.word_ids[0].tolist() == [-1, 0, 1, 2, 2, 2, 3, -1, -1, -1, -1, -1]
    # only first pieces carry labels: O, O, B-PER (on "is"), O
    assert f.labels[0].tolist() == [X, 1, 1, 0, X, X, 1, X, X, X, X, X]
    assert f.input_type_ids.sum() == 0


def test_truncation_keeps_whole_words(tokenizer):
    # Queequeg (4 pieces) + harpooneer (3): with seq_length 6 the budget is 4 pieces, so
    # only Queequeg fits; with seq_length 4 (budget 2) Queequeg itself is cut to que ##e
    f = align_sentences(tokenizer, [["Queequeg", "harpooneer"], ["Call", "me", "Ishmael"]],
                        seq_length=6, tag_ids=[[0, 1], [1, 1, 0]])
    assert f.words_kept.tolist() == [1, 2] and f.num_words.tolist() == [2, 3]
    assert f.word_ids.tolist() == [[-1, 0, 0, 0, 0, -1], [-1, 0, 1, -1, -1, -1]]
    assert f.labels.tolist() == [[X, 0, X, X, X, X], [X, 1, 1, X, X, X]]
    cut = align_sentences(tokenizer, [["Queequeg"]], seq_length=4)
    assert cut.word_ids.tolist() == [[-1, 0, 0, -1]] and cut.labels is None
    assert words_that_fit([4, 3], 4) == 1 and words_that_fit([1, 1, 3], 5) == 3


def test_words_are_tokenized_in_one_batch(tokenizer):
    calls = []

    class Counting:
        special_token_ids = tokenizer.special_token_ids

        def tokenize(self, strings):
            calls.append(int(strings.shape[0]))
            return tokenizer.tokenize(strings)

    pieces = tokenize_words(Counting(), [["Call", "me"], ["Ishmael", "\u200b"]])
    assert calls == [4]  # all four words, one call
    assert [p.tolist() for p in pieces[1]] == [[2003, 22444, 2884], [100]]  # empty -> [UNK]


def test_predictions_back_to_words(tokenizer, sentences):
    vocab = tag_vocab(sentences)
    f = encode_tagged(tokenizer, sentences, vocab, seq_length=7)
    # budget 7 - 2 = 5 pieces: sentence 0 keeps call me Ishmael (1 + 1 + 3 = 5), not "."
    # (would make 6); sentence 1 keeps Queequeg (4), not harpooneer (4 + 3 = 7).
    assert f.words_kept.tolist() == [3, 1]
    predicted = np.zeros_like(f.input_word_ids)  # B-PER everywhere ...
    predicted[0, 1:3] = 1  # ... but O on call, me
    predicted[0, 4:6] = 1  # continuation pieces of Ishmael: ignored
    tags = predictions_to_tags(predicted, f, vocab)
    # dropped words (".", "harpooneer") get the fill tag "O"
    assert tags == [["O", "O", "B-PER", "O"], ["B-PER", "O"]]
    ds = tagging_dataset(f, batch_size=2)
    features, labels = next(iter(ds))
    assert labels.shape == (2, 7) and features["input_word_ids"].shape == (2, 7)
    np.testing.assert_array_equal(labels, f.labels)


def test_unknown_tag_names_the_sentence(tokenizer, sentences):
    with pytest.raises(ValueError, match="sentence at line 3: tag 'B-PER' is not in"):
        encode_tagged(tokenizer, sentences, LabelVocab(["O"]), seq_length=8)
