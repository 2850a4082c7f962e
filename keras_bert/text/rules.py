"""The two rule sets a BERT WordPiece tokenizer follows: Google's and Hugging Face's.

Every Google checkpoint was pretrained with Google's `tokenization.py`; Hugging Face models
are used with the `tokenizers` library (`transformers`' `BertTokenizer` and every
`AutoTokenizer` of a BERT model). They differ in four rules:

* characters dropped (besides NUL and U+FFFD; tab, newline and CR are whitespace):
  - `google`: categories `Cc`, `Cf`
  - `huggingface`: `Cc`, `Cf`, `Co` (private use); unassigned code points (`Cn`) are kept
* a longer word becomes `[UNK]`:
  - `google`: 200 characters
  - `huggingface`: 100 characters
* uncased, order:
  - `google`: `str.lower()`, then NFD, then drop category `Mn`
  - `huggingface`: NFD, drop `Mn`, then lower-case
* uncased, capital sigma at the end of a word:
  - `google`: `ς` (`str.lower()`'s final-sigma rule)
  - `huggingface`: `σ` (each character lower-cased on its own)

Everything else (whitespace, punctuation, CJK ideographs, greedy longest-match-first
WordPiece with `##`) is the same. `transformers`' older pure-Python tokenizer
(`BertTokenizerLegacy`) follows neither exactly (it also drops `Cn` and applies NFC); it is
not offered.
"""

from __future__ import annotations

import dataclasses

DEFAULT_RULES = "google"


@dataclasses.dataclass(frozen=True)
class TokenizerRules:
    """One rule set (see the module docstring)."""

    name: str
    dropped_categories: frozenset[str]
    max_chars_per_word: int
    accents_before_lower: bool
    final_sigma: bool


RULES = {
    "google": TokenizerRules("google", frozenset({"Cc", "Cf"}), 200,
                             accents_before_lower=False, final_sigma=True),
    "huggingface": TokenizerRules("huggingface", frozenset({"Cc", "Cf", "Co"}), 100,
                                  accents_before_lower=True, final_sigma=False),
}


def tokenizer_rules(name: str | TokenizerRules) -> TokenizerRules:
    """The rule set called `name` (`google` or `huggingface`)."""
    if isinstance(name, TokenizerRules):
        return name
    if name not in RULES:
        raise ValueError(f"unknown tokenizer rules {name!r}; choose one of {sorted(RULES)}")
    return RULES[name]
