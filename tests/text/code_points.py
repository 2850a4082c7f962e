"""The Unicode scalar values the tokenizer sweeps run over: all of them, or a sample that
keeps every change of the character properties the tokenization rules read.

The rules (`reference_tokenizer.py`) read a character's general category (whitespace,
controls, punctuation, marks), whether it decomposes (NFD, accent stripping), whether it
changes under lower-casing, and whether it lies in a CJK block. `property_runs()` cuts the
scalar values into maximal runs of consecutive characters equal in all of these;
`sampled_scalars()` keeps the first and the last character of every run, one seeded random
character inside it, and all of ASCII and Latin-1, so every boundary where a rule could
change its answer is tested on both sides. The full sweeps (`ALL_SCALARS`: in process against
the reference, and `keras-bert tokenize` against the upstream tokenizers in
`test_tokenizer_upstream.py`) run in the exhaustive tier.
"""

from __future__ import annotations

import functools
import random
import unicodedata

from .reference_tokenizer import _CJK_BLOCKS

ALL_SCALARS = tuple(c for c in range(0x110000) if not 0xD800 <= c <= 0xDFFF)
_BLOCK_EDGES = frozenset(edge for low, high in _CJK_BLOCKS for edge in (low, high + 1))


def _properties(c: int) -> tuple:
    ch = chr(c)
    return (unicodedata.category(ch), unicodedata.decomposition(ch) != "", ch.lower() != ch)


@functools.cache
def property_runs() -> tuple[tuple[int, int], ...]:
    """Maximal runs `(first, last)` of consecutive scalar values with equal properties (a
    CJK block edge, or the surrogate gap, always starts a new run)."""
    runs, first, last = [], ALL_SCALARS[0], ALL_SCALARS[0]
    properties = _properties(first)
    for c in ALL_SCALARS[1:]:
        now = _properties(c)
        if now != properties or c != last + 1 or c in _BLOCK_EDGES:
            runs.append((first, last))
            first, properties = c, now
        last = c
    runs.append((first, last))
    return tuple(runs)


@functools.cache
def sampled_scalars(seed: int = 0) -> tuple[int, ...]:
    """ASCII, Latin-1, and the first, the last and a random character of every run."""
    rng = random.Random(seed)
    chosen = set(range(0x100))
    for first, last in property_runs():
        chosen.update((first, last, rng.randint(first, last)))
    return tuple(sorted(chosen))


def groups_of_16(scalars) -> list[str]:
    """Texts of 16 consecutive scalar values: every full group that holds one of `scalars`."""
    # a scalar's index in ALL_SCALARS: itself below the surrogates, 0x800 less above them
    starts = sorted({(c if c < 0xD800 else c - 0x800) // 16 * 16 for c in scalars})
    return ["".join(chr(c) for c in ALL_SCALARS[s:s + 16]) for s in starts]
