"""`BertTokenizer`'s interface on Google's uncased vocabulary: empty rows and known ids, the
byte offsets of `tokenize_with_offsets`, special tokens and vocabularies, shapes and dtypes,
`tf.data`, `tf.function` and SavedModels without the vocabulary file, and the errors that
name a bad vocabulary. Where ids are compared, the oracle is `reference_tokenizer.py`, as in
`test_tokenizer.py` (the ids' parity on the corpus, hard cases, code points and random
text)."""

from __future__ import annotations

import os
import re
import unicodedata

import pytest
import tensorflow as tf

from keras_bert.text import BertTokenizer
from tests.support.tokenizer_parity import _assert_same, _ids, corpus_lines

from .reference_tokenizer import ReferenceTokenizer


# ---------------------------------------------------------------------------------- values
def test_empty_and_whitespace_give_empty_rows(uncased):
    tokenizer, _ = uncased
    ids = tokenizer.tokenize(["", "   ", "\t\n", "\u200b\u00ad", "\x00"])
    assert ids.to_list() == [[], [], [], [], []]


def test_known_values(uncased):
    tokenizer, _ = uncased
    vocab = tokenizer.vocab
    ids = tokenizer.tokenize(["Hello, World! naïve Ångström unaffable 中文"]).to_list()[0]
    assert [vocab[i] for i in ids] == [
        "hello", ",", "world", "!", "naive", "ang", "##strom", "una", "##ffa", "##ble",
        "中", "文"]
    assert ids.count(tokenizer.unk_id) == 0


# --------------------------------------------------------------------------------- offsets
def _spans(tokenizer, text):
    ids, starts, ends = tokenizer.tokenize_with_offsets(tf.constant([text]))
    raw = text.encode("utf-8")
    return [(tokenizer.vocab[i], raw[s:e].decode("utf-8"))
            for i, s, e in zip(ids.to_list()[0], starts.to_list()[0], ends.to_list()[0],
                               strict=True)]


def test_corpus_offsets_point_at_the_pieces(uncased):
    """Every non-[UNK] piece, re-normalised from its input span, is the piece itself."""
    tokenizer, _ = uncased
    lines = corpus_lines()[:400]
    ids, starts, ends = tokenizer.tokenize_with_offsets(tf.constant(lines))
    vocab = tokenizer.vocab
    for line, row, s_row, e_row in zip(lines, ids.to_list(), starts.to_list(),
                                       ends.to_list(), strict=True):
        raw = line.encode("utf-8")
        for i, s, e in zip(row, s_row, e_row, strict=True):
            if i == tokenizer.unk_id:
                continue
            span = unicodedata.normalize("NFD", raw[s:e].decode("utf-8").lower())
            span = "".join(c for c in span if unicodedata.category(c) != "Mn")
            assert span == vocab[i].removeprefix("##"), (line[:60], vocab[i], raw[s:e])


def test_offsets_accents_and_cjk(uncased):
    tokenizer, _ = uncased
    assert _spans(tokenizer, "Café Ångström!") == [
        ("cafe", "Café"), ("ang", "Ång"), ("##strom", "ström"), ("!", "!")]
    assert _spans(tokenizer, "  中文 x") == [("中", "中"), ("文", "文"), ("x", "x")]
    # Decomposed input, dropped characters inside a word, a Hangul syllable split in jamo.
    assert _spans(tokenizer, "e\u0301t\u00e9\u200b!") == [
        ("et", "e\u0301t"), ("##e", "\u00e9"), ("!", "!")]
    assert _spans(tokenizer, "a\u200b\u200bb") == [("ab", "a\u200b\u200bb")]
    assert _spans(tokenizer, "한") == [("ᄒ", "한"), ("##ᅡ", "한"), ("##ᆫ", "한")]
    # A word over 200 characters (google; 100 huggingface) is one [UNK] covering the word.
    word = "é" * 201
    assert _spans(tokenizer, f"a {word} b") == [("a", "a"), ("[UNK]", word), ("b", "b")]
    hf = BertTokenizer(tokenizer.vocab, rules="huggingface")
    assert _spans(hf, f"{word[:101]} b") == [("[UNK]", word[:101]), ("b", "b")]


def test_offsets_with_invalid_bytes(uncased):
    tokenizer, _ = uncased
    raw = b"\xffcaf\xc3\xa9 x\x80y"
    ids, starts, ends = tokenizer.tokenize_with_offsets(tf.constant([raw]))
    spans = [raw[s:e] for s, e in zip(starts.to_list()[0], ends.to_list()[0], strict=True)]
    assert [tokenizer.vocab[i] for i in ids.to_list()[0]] == ["cafe", "x", "##y"]
    assert spans == [b"caf\xc3\xa9", b"x", b"y"]


def test_offsets_with_empty_rows_first(uncased):
    # Regression: an empty FIRST row made the last-character scatter index -1 and failed.
    tokenizer, _ = uncased
    texts = ["", "   ", "Café x", ""]
    ids, starts, ends = tokenizer.tokenize_with_offsets(tf.constant(texts))
    assert ids.to_list() == [[], [], tokenizer.tokenize(["Café x"]).to_list()[0], []]
    assert starts.to_list()[2] == [0, 6] and ends.to_list()[2] == [5, 7]


# ------------------------------------------------------------------------- special tokens
def test_preserve_special_tokens(uncased_vocab):
    tokenizer = BertTokenizer(uncased_vocab, lower_case=True, preserve_special_tokens=True)
    reference = ReferenceTokenizer(uncased_vocab, True, preserve_special_tokens=True)
    texts = ["The [MASK] sat on the [MASK].", "[CLS] a [SEP] b [SEP]", "[mask] [MASK]s x[PAD]y",
             "", "[UNK]", "naïve [MASK]\u0301 中[SEP]文",
             "nul\x00inside [MASK] and after\x00 [SEP]"]  # NUL once cut the text short
    _assert_same(tokenizer, reference, texts)
    assert _spans(tokenizer, "a\x00b [MASK]") == [("ab", "a\x00b"), ("[MASK]", "[MASK]")]
    ids = tokenizer.tokenize(["[CLS] hi [MASK] [SEP]"]).to_list()[0]
    assert ids[0] == tokenizer.cls_id and ids[-1] == tokenizer.sep_id
    assert tokenizer.mask_id in ids
    assert _spans(tokenizer, "Hi [MASK]!") == [("hi", "Hi"), ("[MASK]", "[MASK]"), ("!", "!")]
    plain = BertTokenizer(uncased_vocab, lower_case=True)
    assert tokenizer.mask_id not in plain.tokenize(["[MASK]"]).to_list()[0]


def test_special_token_ids_and_vocab(uncased):
    tokenizer, _ = uncased
    assert tokenizer.vocab_size == 30522
    assert tokenizer.special_token_ids == {
        "cls": 101, "sep": 102, "pad": 0, "mask": 103, "unk": 100}
    assert tokenizer.id_to_token(tf.constant([101, 7592])).numpy().tolist() == [
        b"[CLS]", b"hello"]
    assert tokenizer.token_to_id(tf.constant(["hello", "no-such-token"])).numpy().tolist() == [
        7592, 100]
    ids = tokenizer.tokenize(["Unaffable people.", "hi"])
    assert tokenizer.detokenize(ids).numpy().tolist() == [b"unaffable people .", b"hi"]


def test_duplicate_tokens_keep_the_last_id():
    vocab = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "a", "b", "a", "##b", ""]
    tokenizer = BertTokenizer(vocab, lower_case=True)
    reference = ReferenceTokenizer(vocab, True)
    _assert_same(tokenizer, reference, ["a ab ba", "c"])
    assert tokenizer.tokenize(["a"]).to_list() == [[7]]


def test_shapes_and_dtypes(uncased):
    tokenizer, _ = uncased
    scalar = tokenizer.tokenize("hello world")
    assert isinstance(scalar, tf.Tensor) and scalar.dtype == tf.int32
    assert scalar.numpy().tolist() == [7592, 2088]
    batch = tokenizer.tokenize(tf.constant([["hello", "world"], ["a b", ""]]))
    assert batch.shape.rank == 3 and batch.dtype == tf.int32
    assert batch.to_list() == [[[7592], [2088]], [[1037, 1038], []]]
    ids, starts, ends = tokenizer.tokenize_with_offsets(["hello"])
    assert starts.dtype == tf.int64 and ends.dtype == tf.int64


# --------------------------------------------------------------------------- graph safety
def test_tf_data_and_tf_function(uncased):
    tokenizer, reference = uncased
    lines = corpus_lines()[:64]
    ds = tf.data.Dataset.from_tensor_slices(lines).batch(16).map(
        tokenizer.tokenize, num_parallel_calls=tf.data.AUTOTUNE)
    got = [row for batch in ds for row in batch.to_list()]
    assert got == [reference.ids(line) for line in lines]

    @tf.function(input_signature=[tf.TensorSpec([None], tf.string)])
    def with_offsets(s):
        ids, starts, ends = tokenizer.tokenize_with_offsets(s)
        return ids.flat_values, starts.flat_values, ends.flat_values, ids.row_splits

    flat, _, _, splits = with_offsets(tf.constant(lines[:8]))
    want = [i for line in lines[:8] for i in reference.ids(line)]
    assert flat.numpy().tolist() == want
    assert splits.numpy()[-1] == len(want)


class _Holder(tf.Module):
    def __init__(self, tokenizer):
        super().__init__()
        self.tokenizer = tokenizer

    @tf.function(input_signature=[tf.TensorSpec([None], tf.string)])
    def tokenize(self, strings):
        ids = self.tokenizer.tokenize(strings)
        return {"ids": ids.flat_values, "row_splits": ids.row_splits}


def test_saved_model_without_vocab_file(tmp_path, uncased_vocab):
    vocab_file = tmp_path / "vocab.txt"
    vocab_file.write_text("\n".join(uncased_vocab) + "\n", encoding="utf-8")
    tokenizer = BertTokenizer(str(vocab_file), lower_case=True, preserve_special_tokens=True)
    holder = _Holder(tokenizer)
    texts = tf.constant(["The [MASK] ran to café Ångström 中文!", "", "naïve ΣΑΣ"])
    before = holder.tokenize(texts)
    export = tmp_path / "saved"
    tf.saved_model.save(holder, str(export))
    os.remove(vocab_file)
    assert not any(p.name == "vocab.txt" for p in export.rglob("*"))
    loaded = tf.saved_model.load(str(export))
    after = loaded.tokenize(texts)
    assert after["ids"].numpy().tolist() == before["ids"].numpy().tolist()
    assert after["row_splits"].numpy().tolist() == before["row_splits"].numpy().tolist()


# ---------------------------------------------------------------------------------- errors
@pytest.mark.parametrize("missing", ["[CLS]", "[SEP]", "[MASK]", "[UNK]", "[PAD]"])
def test_missing_special_token_is_named(missing):
    vocab = [t for t in ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "a"] if t != missing]
    with pytest.raises(ValueError, match=re.escape(missing)):
        BertTokenizer(vocab)


def test_empty_vocab(tmp_path):
    with pytest.raises(ValueError, match="empty"):
        BertTokenizer([])
    empty = tmp_path / "vocab.txt"
    empty.write_text("", encoding="utf-8")
    with pytest.raises(ValueError, match="empty"):
        BertTokenizer(str(empty))


@pytest.mark.parametrize("rules,limit", [("google", 200), ("huggingface", 100)])
def test_long_words_are_unk_whatever_control_tokens_the_vocab_holds(rules, limit):
    """A word over the limit stands in as a control character no token equals."""
    base = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "a", "##a", "b"]
    tokenizer = BertTokenizer(base + ["\x01", "\x02"], rules=rules)
    reference = ReferenceTokenizer(base + ["\x01", "\x02"], True, rules=rules)
    texts = ["a" * (limit + 1) + " b", "b " + "a" * limit, "a" * (limit + 50) + "." + "b"]
    assert _ids(tokenizer, texts) == [reference.ids(t) for t in texts]
    assert _ids(tokenizer, texts)[0] == [1, 7]
    assert _ids(tokenizer, texts)[1] == [7, 5] + [6] * (limit - 1)
    with pytest.raises(ValueError, match="U\\+0001 to U\\+0008"):
        BertTokenizer(base + [chr(c) for c in range(1, 9)])
