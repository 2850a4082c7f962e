"""`unicode_tables` (the character classes the graph normaliser is built from) equals the
same tables computed by asking every scalar value every question, for both rule sets.

`unicode_tables` answers 1.09 M of the 1.11 M scalar values (categories Cn, Co, Lo) by a
short path that assumes what Unicode guarantees for them (no case mapping, not space,
punctuation or Mn, combining class 0); this test checks the assumption on this Python's
Unicode tables, character by character.
"""

from __future__ import annotations

import sys
import unicodedata

import pytest

from keras_bert.text.normalize import CJK_BLOCKS, _re2_class, unicode_tables
from keras_bert.text.rules import tokenizer_rules


def _every_question(rules: str) -> dict:
    """The tables, each scalar value asked every question (the specification)."""
    dropped = tokenizer_rules(rules).dropped_categories
    lists = {name: [] for name in ("drop", "space", "punct", "cjk", "mn", "upper",
                                   "unassigned", "kept", "inert", "lower_keys",
                                   "lower_values", "case_ignorable", "cased")}
    for cp in range(sys.maxunicode + 1):
        if 0xD800 <= cp <= 0xDFFF:
            continue
        ch, cat = chr(cp), unicodedata.category(chr(cp))
        if ch not in "\t\n\r" and (cat in dropped or cp in (0, 0xFFFD)):
            lists["drop"].append(cp)
            continue
        checks = {
            "unassigned": cat == "Cn",
            "space": ch in " \t\n\r" or cat == "Zs" or ch.isspace(),
            "punct": cat[0] == "P" or (cp < 128 and not ch.isalnum() and 33 <= cp <= 126),
            "cjk": any(lo <= cp <= hi for lo, hi in CJK_BLOCKS),
            "mn": cat == "Mn",
            "kept": cp >= 128,
            "inert": cp >= 128 and ch.lower() == ch and cat != "Mn"
            and not unicodedata.combining(ch) and unicodedata.normalize("NFD", ch) == ch,
            "upper": cp >= 128 and ch.lower() != ch,
            "cased": (ch + "\u03a3").lower()[-1] == "\u03c2",
        }
        checks["case_ignorable"] = (not checks["cased"]
                                    and ("A" + ch + "\u03a3").lower()[-1] == "\u03c2")
        for name, holds in checks.items():
            if holds:
                lists[name].append(cp)
        if checks["upper"]:
            lists["lower_keys"].append(cp)
            lists["lower_values"].append(ord(ch.lower()[0]))
    classes = {name: _re2_class(lists[name]) for name in
               ("drop", "space", "punct", "cjk", "mn", "upper", "unassigned")}
    return {**classes,
            "space_nonascii": _re2_class([c for c in lists["space"] if c >= 128]),
            "punct_nonascii": _re2_class([c for c in lists["punct"] if c >= 128]),
            "kept_nonascii": _re2_class(lists["kept"]),
            "inert_nonascii": _re2_class(lists["inert"]),
            **{name: lists[name] for name in
               ("lower_keys", "lower_values", "case_ignorable", "cased")}}


@pytest.mark.parametrize("rules", ["google", "huggingface"])
def test_tables_equal_every_question_asked_of_every_character(rules):
    got, want = unicode_tables(rules), _every_question(rules)
    assert sorted(got) == sorted(want)
    for name in want:
        assert got[name] == want[name], name
