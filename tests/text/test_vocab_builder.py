"""Vocabulary learning: layout of special tokens, coverage, and the CLI."""

import numpy as np
import pytest

from keras_bert.cli import main
from keras_bert.data.corpus import default_corpus_files
from keras_bert.text import BertTokenizer
from keras_bert.text.vocab_builder import BertWordSplitter, build_vocab, special_tokens
from tests.text.reference_tokenizer import basic_split


@pytest.fixture(scope="module")
def lines():
    with open(default_corpus_files()[0], encoding="utf-8") as f:
        return [line.strip() for line in f if line.strip()][:120]


def test_word_splitter_is_the_tokenizers_basic_step(lines):
    """Words equal the independent reference's basic split (before WordPiece)."""
    texts = lines[:40] + ["Ångström naïve 東京!", "", "  tabs\tand\u200bzero-width "]
    for lower_case in (True, False):
        words = BertWordSplitter(lower_case=lower_case)(texts).to_list()
        for text, got in zip(texts, words, strict=True):
            assert [w.decode() for w in got] == basic_split(text, lower_case)


def test_build_vocab_layout_and_coverage(lines):
    vocab = build_vocab(lines, vocab_size=600, num_unused=3, min_count=1)
    assert vocab[:8] == special_tokens(3) == [
        "[PAD]", "[unused0]", "[unused1]", "[unused2]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
    assert len(vocab) <= 600 and len(set(vocab)) == len(vocab)
    assert any(t.startswith("##") for t in vocab) and "the" in vocab
    tokenizer = BertTokenizer(vocab)
    ids = tokenizer.tokenize(lines).flat_values.numpy()
    assert np.mean(ids == tokenizer.unk_id) < 0.001  # every corpus character is covered
    whole = tokenizer.tokenize(["the whale"]).to_list()[0]
    assert [vocab[i] for i in whole] == ["the", "whale"] or "whale" not in vocab


def test_cli(tmp_path, capsys, lines):
    corpus = tmp_path / "c.txt"
    corpus.write_text("\n".join(lines) + "\n")
    out = tmp_path / "vocab.txt"
    assert main(["build-vocab", "--input", str(corpus), "--format", "sentences", "--output",
                 str(out), "--vocab-size", "400", "--cased", "--min-count", "1"]) == 0
    vocab = out.read_text().splitlines()
    assert vocab[:5] == ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
    assert any(t[:1].isupper() for t in vocab)  # cased
    assert "wrote" in capsys.readouterr().out
    with pytest.raises(ValueError, match="leaves no room"):
        build_vocab(lines, vocab_size=5)
