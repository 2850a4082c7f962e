"""In-graph text cleaning of the original BERT `BasicTokenizer`, character for character.

The character classes (what is dropped, what is whitespace, punctuation, a CJK ideograph,
a non-spacing mark, an upper-case letter) are not taken from RE2's or ICU's Unicode tables
but generated from Python's `unicodedata` when the tokenizer is built, and embedded in the
graph as RE2 character classes (`[\\x{...}-\\x{...}...]`). The graph therefore behaves like
the original Python tokenizer of the Python that built it, whatever Unicode version the
serving binary's RE2 / ICU carry.

Lower-casing reproduces `str.lower()` without ICU: ASCII through `tf.strings.lower` (byte
wise), and only for rows holding a non-ASCII character that `str.lower()` changes, a
code point table (`tf.lookup.StaticHashTable`) plus Python's final-sigma rule (capital
sigma becomes `ς` after a cased letter unless another cased letter follows, skipping
case-ignorable characters), both also derived from `str.lower()` itself.

The one ICU operation left is canonical decomposition (`NormalizeUTF8`, form NFD), whose
results are fixed by Unicode's stability policy for every character that Python's Unicode
database knows (characters it does not know are unassigned there, hence already dropped).

Ops used: StaticRegexReplace, StaticRegexFullMatch, StringLower, UnicodeTranscode,
UnicodeDecode, UnicodeEncode, LookupTableFindV2 (+ HashTableV2 / LookupTableImportV2),
LowerBound, UpperBound, TensorScatterUpdate, NormalizeUTF8 (TF Text), and core
gather / arithmetic ops.
"""

from __future__ import annotations

import collections
import functools
import sys
import unicodedata

import tensorflow as tf
import tensorflow_text as tf_text
from tensorflow_text.python.ops.regex_split_ops import gen_regex_split_ops

from keras_bert.text.rules import DEFAULT_RULES, tokenizer_rules

# Plain Python with no tensor-dependent control flow: skip AutoGraph (seconds of tracing).
_no_autograph = tf.autograph.experimental.do_not_convert

# CJK Unified Ideographs blocks that the original tokenizer surrounds with spaces.
CJK_BLOCKS = (
    (0x4E00, 0x9FFF),
    (0x3400, 0x4DBF),
    (0x20000, 0x2A6DF),
    (0x2A700, 0x2B73F),
    (0x2B740, 0x2B81F),
    (0x2B820, 0x2CEAF),
    (0xF900, 0xFAFF),
    (0x2F800, 0x2FA1F),
)

# Full match of well-formed UTF-8 (RE2 compiles the class to exact byte sequences).
_VALID_UTF8 = "[\\x{0}-\\x{D7FF}\\x{E000}-\\x{10FFFF}]*"
_CAPITAL_SIGMA = 0x03A3
_FINAL_SIGMA = 0x03C2


def _is_ascii_punct(cp: int) -> bool:
    return 33 <= cp <= 47 or 58 <= cp <= 64 or 91 <= cp <= 96 or 123 <= cp <= 126


def _re2_class(code_points: list[int]) -> str:
    """An RE2 character class matching exactly `code_points` (sorted, no surrogates)."""
    if not code_points:
        return "[^\\x{0}-\\x{10FFFF}]"  # matches nothing
    parts = []
    lo = prev = code_points[0]
    for cp in code_points[1:] + [-1]:
        if cp == prev + 1:
            prev = cp
            continue
        parts.append(f"\\x{{{lo:X}}}" if lo == prev else f"\\x{{{lo:X}}}-\\x{{{prev:X}}}")
        lo = prev = cp
    return "[" + "".join(parts) + "]"


# Unassigned (Cn) and private-use (Co) characters have no case mapping, decomposition or
# combining class and are not space, punctuation, Mn, cased or case-ignorable: the table loop
# asks them only whether they lie in a CJK block (caseless letters, Lo, get a few more).
# `tests/text/test_normalize_tables.py` checks the tables against the loop that asks every
# character every question.
_UNUSED = frozenset({"Cn", "Co"})


@functools.lru_cache(maxsize=2)
def unicode_tables(rules: str = DEFAULT_RULES) -> dict:
    """Character classes and case tables from this Python's `unicodedata` (cached), for the
    tokenizer rules named `rules` (they decide which categories are dropped).

    Returns a dict of RE2 classes (`drop`, `space`, `space_nonascii`, `punct`,
    `punct_nonascii`, `cjk`, `mn`, `upper`, `unassigned` (category Cn, kept), and
    `kept_nonascii` / `inert_nonascii`: the non-ASCII characters that cased / uncased
    normalisation leaves as they are) and of code point lists for lower-casing
    (`lower_keys`, `lower_values`) and the final-sigma rule (`case_ignorable`, `cased`).
    """
    dropped_categories = tokenizer_rules(rules).dropped_categories
    t: dict[str, list[int]] = collections.defaultdict(list)
    cjk_set = set()
    for lo, hi in CJK_BLOCKS:
        cjk_set.update(range(lo, hi + 1))
    for cp in range(sys.maxunicode + 1):
        if 0xD800 <= cp <= 0xDFFF:
            continue
        ch = chr(cp)
        cat = unicodedata.category(ch)
        if ch not in "\t\n\r" and (cat in dropped_categories or cp in (0, 0xFFFD)):
            t["drop"].append(cp)
        elif cat in _UNUSED:  # 0.97 M of 1.11 M scalar values: one question left
            _unused(t, cp, cat, cp in cjk_set)
        elif cat == "Lo":  # 0.13 M: caseless letters, none below 128, space or punctuation
            _caseless_letter(t, cp, ch, cp in cjk_set)
        else:
            _other(t, cp, ch, cat, cp in cjk_set)
    classes = {name: _re2_class(t[name]) for name in (
        "drop", "space", "punct", "cjk", "mn", "upper", "unassigned")}
    return {**classes,
            "space_nonascii": _re2_class([cp for cp in t["space"] if cp >= 128]),
            "punct_nonascii": _re2_class([cp for cp in t["punct"] if cp >= 128]),
            "kept_nonascii": _re2_class(t["kept"]), "inert_nonascii": _re2_class(t["inert"]),
            **{name: t[name] for name in ("lower_keys", "lower_values", "case_ignorable",
                                          "cased")}}


def _unused(t: dict, cp: int, cat: str, cjk: bool) -> None:
    """Unassigned (Cn) and private-use (Co) code points: kept as they are."""
    if cat == "Cn":
        t["unassigned"].append(cp)
    if cjk:
        t["cjk"].append(cp)
    t["kept"].append(cp)  # all >= 128
    t["inert"].append(cp)


def _caseless_letter(t: dict, cp: int, ch: str, cjk: bool) -> None:
    """A caseless letter (Lo): kept; inert unless NFD or combining touches it."""
    if cjk:
        t["cjk"].append(cp)
    t["kept"].append(cp)
    if not unicodedata.combining(ch) and unicodedata.normalize("NFD", ch) == ch:
        t["inert"].append(cp)
    if (ch + "\u03a3").lower()[-1] == "\u03c2":  # U+00AA, U+00BA: Other_Lowercase
        t["cased"].append(cp)


def _other(t: dict, cp: int, ch: str, cat: str, cjk: bool) -> None:
    """Every other code point: the questions the rules ask of it."""
    if cat == "Cn":
        t["unassigned"].append(cp)
    if ch in " \t\n\r" or cat == "Zs" or ch.isspace():
        t["space"].append(cp)
    if cat[0] == "P" or _is_ascii_punct(cp):
        t["punct"].append(cp)
    if cjk:
        t["cjk"].append(cp)
    if cat == "Mn":
        t["mn"].append(cp)
    low = ch.lower()
    if cp >= 128:
        t["kept"].append(cp)
        # Unchanged by lower-casing, NFD and Mn removal, and never reordered by NFD
        # (canonical combining class 0): a row of ASCII and such characters needs only
        # the ASCII lower-casing.
        if (low == ch and cat != "Mn" and not unicodedata.combining(ch)
                and unicodedata.normalize("NFD", ch) == ch):
            t["inert"].append(cp)
    if low != ch and cp >= 128:
        t["upper"].append(cp)
        t["lower_keys"].append(cp)
        # Only U+0130 maps to two code points ("i" + U+0307); lower-casing is only used
        # before accent stripping, which removes the U+0307, so keep the first one.
        t["lower_values"].append(ord(low[0]))
    # Python's own final-sigma decision reveals the two properties it uses:
    # "x" + SIGMA ends in final sigma iff x is cased and not case-ignorable;
    # "A" + x + SIGMA ends in final sigma iff x is cased or case-ignorable.
    if (ch + "\u03a3").lower()[-1] == "\u03c2":
        t["cased"].append(cp)
    elif ("A" + ch + "\u03a3").lower()[-1] == "\u03c2":
        t["case_ignorable"].append(cp)


class BertNormalizer(tf.Module):
    """Graph-safe `BasicTokenizer` cleaning: drop, lower-case, strip accents (no splitting).

    Args:
      lower_case: `True` for uncased models (lower-case, NFD, drop category Mn, in the
        order of `rules`); `False` only drops the characters the rules drop.
      rules: `google` or `huggingface` (see `keras_bert.text.rules`).
    """

    def __init__(self, lower_case: bool, rules: str = DEFAULT_RULES, name: str | None = None):
        super().__init__(name=name)
        self.lower_case = lower_case
        self.rules = tokenizer_rules(rules)
        t = unicode_tables(self.rules.name)
        # Rows of printable ASCII (plus \t \n \r) and characters that normalisation keeps
        # as they are take the fast path: nothing to drop, lower-casing is ASCII only.
        unchanged = t["inert_nonascii"] if lower_case else t["kept_nonascii"]
        self._fast_row = "[\\t\\n\\r\\x{20}-\\x{7E}" + unchanged[1:] + "*"
        self._drop = t["drop"]
        self._mn = t["mn"]
        self._unassigned = t["unassigned"]
        self._any_unassigned = f"(?s).*{t['unassigned']}.*"
        self._needs_lower = "(?s).*" + t["upper"] + ".*"
        if lower_case:
            self._lower_table = _int_table(t["lower_keys"], t["lower_values"])
            self._ci_table = _int_table(t["case_ignorable"], [1] * len(t["case_ignorable"]))
            self._cased_table = _int_table(t["cased"], [1] * len(t["cased"]))

    @_no_autograph
    def clean(self, strings: tf.Tensor) -> tf.Tensor:
        """Drops invalid UTF-8, NUL, U+FFFD and the rules' categories (1-D strings).

        Bytes that are not valid UTF-8 (including encoded surrogates, overlong forms and
        code points above U+10FFFF) are dropped like Python's `decode("utf-8", "ignore")`;
        only the rows that hold some are transcoded.
        """
        valid = tf.strings.regex_full_match(strings, _VALID_UTF8)
        rows = tf.where(tf.logical_not(valid))[:, 0]
        fixed = tf.strings.unicode_transcode(
            tf.gather(strings, rows), "UTF-8", "UTF-8", errors="ignore",
            replace_control_characters=False)
        strings = tf.tensor_scatter_nd_update(strings, rows[:, None], fixed)
        return tf.strings.regex_replace(strings, self._drop, "")

    @_no_autograph
    def __call__(self, strings: tf.Tensor) -> tf.Tensor:
        """Cleans, and for uncased also lower-cases and strips accents, a 1-D string tensor.

        Rows that hold only printable ASCII and characters that normalisation leaves
        unchanged (most text: letters without case or accents, dashes, quotes) are only
        ASCII-lower-cased; the others go through every step (`normalize_all`).
        """
        fast = tf.strings.regex_full_match(strings, self._fast_row)
        rows = tf.where(tf.logical_not(fast))[:, 0]
        slow = self.normalize_all(tf.gather(strings, rows))
        if self.lower_case:
            strings = tf.strings.lower(strings)  # ASCII only (no encoding given)
        return tf.tensor_scatter_nd_update(strings, rows[:, None], slow)

    @_no_autograph
    def normalize_all(self, strings: tf.Tensor) -> tf.Tensor:
        """Every step on every row: `clean`, then for uncased `lower`, NFD and drop Mn
        (Hugging Face's rules: NFD and drop Mn before `lower`)."""
        strings = self.clean(strings)
        if not self.lower_case:
            return strings
        if self.rules.accents_before_lower:
            return self.lower(self._strip_accents(strings))
        return self._strip_accents(self.lower(strings))

    def _strip_accents(self, strings: tf.Tensor) -> tf.Tensor:
        return tf.strings.regex_replace(self._nfd(strings), self._mn, "")

    def _nfd(self, strings: tf.Tensor) -> tf.Tensor:
        """NFD (ICU's), except on the code points this Python's Unicode database calls
        unassigned: a newer ICU may decompose or reorder them, while Python's NFD (the
        rule) keeps them as starters. Rows holding any are normalised between them."""
        out = tf_text.normalize_utf8(strings, "NFD")
        rows = tf.where(tf.strings.regex_full_match(strings, self._any_unassigned))[:, 0]
        pieces, _, _, splits = regex_split(
            tf.gather(strings, rows), self._unassigned, self._unassigned)
        pieces = tf.where(tf.strings.regex_full_match(pieces, self._unassigned), pieces,
                          tf_text.normalize_utf8(pieces, "NFD"))
        joined = tf.strings.reduce_join(
            tf.RaggedTensor.from_row_splits(pieces, splits, validate=False), axis=1)
        return tf.tensor_scatter_nd_update(out, rows[:, None], joined)

    @_no_autograph
    def lower(self, strings: tf.Tensor) -> tf.Tensor:
        """`str.lower()` of cleaned (valid UTF-8) 1-D strings; without its final-sigma rule
        (each character lower-cased on its own) where the rules say so."""
        strings = tf.strings.lower(strings)  # ASCII only (no encoding given)
        needs = tf.strings.regex_full_match(strings, self._needs_lower)
        rows = tf.where(needs)[:, 0]
        subset = tf.gather(strings, rows)
        lowered = self._lower_code_points(subset)
        return tf.tensor_scatter_nd_update(strings, rows[:, None], lowered)

    def _lower_code_points(self, strings: tf.Tensor) -> tf.Tensor:
        decoded = tf.raw_ops.UnicodeDecode(
            input=strings, input_encoding="UTF-8", errors="replace", replacement_char=0xFFFD,
            Tsplits=tf.int64)
        splits, flat = decoded.row_splits, decoded.char_values
        mapped = self._lower_table.lookup(flat)
        flat_low = tf.where(mapped >= 0, mapped, flat)
        if not self.rules.final_sigma:
            return encode_utf8(flat_low, splits)
        # Final sigma: the nearest non-case-ignorable neighbours, within the same row.
        pos = tf.range(tf.size(flat, out_type=tf.int64))
        row_ids = searchsorted(splits, pos, "right") - 1
        anchor = tf.where(self._ci_table.lookup(flat) <= 0)[:, 0]
        n_anchor = tf.size(anchor, out_type=tf.int64)
        # A sentinel at index n_anchor stands for "no neighbour" (never cased, row -1).
        anchor_cased = tf.concat(
            [tf.gather(self._cased_table.lookup(flat) > 0, anchor), [False]], 0)
        anchor_row = tf.concat([tf.gather(row_ids, anchor), [-1]], 0)

        def neighbour_cased(k):
            k = tf.where((k < 0) | (k >= n_anchor), n_anchor, k)
            return (tf.gather(anchor_row, k) == row_ids) & tf.gather(anchor_cased, k)

        prev_cased = neighbour_cased(
            searchsorted(anchor, pos, "left") - 1)
        next_cased = neighbour_cased(searchsorted(anchor, pos, "right"))
        final = (flat == _CAPITAL_SIGMA) & prev_cased & ~next_cased
        flat_low = tf.where(final, tf.constant(_FINAL_SIGMA, flat.dtype), flat_low)
        return encode_utf8(flat_low, splits)


def searchsorted(sorted_values, values, side: str) -> tf.Tensor:
    """1-D `tf.searchsorted` as one core op (`LowerBound` / `UpperBound`), int64 result."""
    op = tf.raw_ops.LowerBound if side == "left" else tf.raw_ops.UpperBound
    return op(sorted_inputs=sorted_values[None, :], values=values[None, :], out_type=tf.int64)[0]


def encode_utf8(code_points, row_splits) -> tf.Tensor:
    """UTF-8 strings from flat code points and int64 row splits (core `UnicodeEncode`)."""
    return tf.raw_ops.UnicodeEncode(
        input_values=code_points, input_splits=row_splits, output_encoding="UTF-8",
        errors="replace", replacement_char=0xFFFD)


def _int_table(keys: list[int], values: list[int]) -> tf.lookup.StaticHashTable:
    init = tf.lookup.KeyValueTensorInitializer(
        tf.constant(keys, tf.int32), tf.constant(values, tf.int32))
    return tf.lookup.StaticHashTable(init, default_value=-1)


def word_split_patterns(rules: str = DEFAULT_RULES) -> dict[str, str]:
    """RE2 patterns of BERT's word splitting (after normalisation): `split` (whitespace runs
    and single punctuation / CJK characters), `keep` (the pieces of `split` that are words),
    `pad` (punctuation / CJK to surround with spaces, non-ASCII whitespace to replace),
    `pad_nonascii` (the same for non-ASCII characters only), `word_char_padded` (a
    character of a word in text padded by `pad_nonascii`) and `unassigned` (code points
    this Python's Unicode database does not assign and the rules keep)."""
    tables = unicode_tables(rules)
    punct_or_cjk = tables["punct"][:-1] + tables["cjk"][1:]
    nonascii = tables["punct_nonascii"][:-1] + tables["cjk"][1:]
    # Once non-ASCII punctuation / CJK / whitespace are padded or replaced, words are the
    # runs of characters that are neither ASCII whitespace nor ASCII punctuation.
    ascii_breaks = [9, 10, 13, 32] + [cp for cp in range(128) if _is_ascii_punct(cp)]
    word_char = "[^" + _re2_class(ascii_breaks)[1:]
    return {"split": f"{tables['space']}+|{punct_or_cjk}", "keep": punct_or_cjk,
            "pad": f"({punct_or_cjk})|{tables['space_nonascii']}",
            "pad_nonascii": f"({nonascii})|{tables['space_nonascii']}",
            "word_char_padded": word_char, "unassigned": tables["unassigned"]}


def regex_split(strings, delimiters: str, keep: str):
    """TF Text `RegexSplitWithOffsets` on 1-D strings: flat pieces, starts, ends, splits.

    (The raw op: the public wrapper adds ~200 graph ops of ragged bookkeeping.)
    """
    return gen_regex_split_ops.regex_split_with_offsets(
        strings, "(" + delimiters + ")", keep)
