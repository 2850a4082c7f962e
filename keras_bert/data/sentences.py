"""A rule-based sentence splitter for prose that has no line structure."""

from __future__ import annotations

import re

# Words that end with a period without ending the sentence.
ABBREVIATIONS = frozenset("""
mr mrs ms dr prof st mt jr sr rev gen col capt lt sgt gov sen rep hon messrs mme mlle
vs etc no nos vol fig figs al inc ltd co corp dept est approx cf viz ie eg jan feb mar apr
jun jul aug sep sept oct nov dec u.s u.k a.m p.m
""".split())

# A candidate boundary: terminal punctuation, optional closing quotes/brackets, whitespace,
# then something that can open a sentence.
_BOUNDARY = re.compile(r"""([.!?]+["'”’)\]]*)\s+(?=["'“‘(\[]?[A-Z0-9])""")


def split_sentences(text: str) -> list[str]:
    """Splits prose into sentences at `.`, `!`, `?` (not after abbreviations or initials)."""
    text = " ".join(text.split())
    if not text:
        return []
    sentences, start = [], 0
    for match in _BOUNDARY.finditer(text):
        end = match.end(1)
        before = text[start:match.start(1)].split()
        last_word = before[-1].strip("\"'“‘(") if before else ""
        if match.group(1).startswith(".") and (
                last_word.lower() in ABBREVIATIONS or re.fullmatch(r"[A-Z]", last_word)):
            continue  # "Mr. Smith", "J. Smith"
        sentences.append(text[start:end])
        start = match.end()
    sentences.append(text[start:])
    return [s for s in sentences if s]
