"""A seeded generator of hostile text for the fuzz tests: `fuzz_strings(count, seed)`.

Each string is 1-4 pieces, each piece drawn from one family:

* random code points of every plane and category (surrogates included: their UTF-8 form
  is ill-formed, so those strings are invalid UTF-8);
* raw byte runs (mostly invalid UTF-8: stray continuation bytes, truncated sequences,
  overlong forms, 0xFE/0xFF);
* controls and invisible characters (C0/C1 controls, NUL, zero-width spaces and joiners,
  BOM, line/paragraph separators, bidi controls);
* towers of combining marks (a base letter with up to 2,000 marks);
* emoji: ZWJ families, skin tones, flags (regional indicators), keycaps;
* CJK (the main block and the supplementary plane), Hangul, Japanese kana;
* right-to-left text (Hebrew, Arabic) with bidi overrides;
* empty and whitespace-only strings (every Unicode space);
* BERT's own markers and look-alikes (`[MASK]`, `[CLS] [SEP]`, `##`, `[mask]`, `[UNK]` runs);
* ordinary English words, long words (over 200 characters) and long texts;

and one string in `huge_every` (default 5,000) is a 1 MiB text.
"""

from __future__ import annotations

import random
from collections.abc import Iterator

WORDS = ("the", "whale", "ship", "sea", "Ishmael", "captain", "harpoon", "white", "deep",
         "naïve", "café", "résumé", "don't", "U.S.A.", "e-mail", "3.14", "$100", "#1")
SPACES = "\t\n\x0b\x0c\r \x85\xa0\u1680\u2000\u2001\u2002\u2003\u2004\u2005\u2006\u2007" \
         "\u2008\u2009\u200a\u2028\u2029\u202f\u205f\u3000"
INVISIBLE = "\x00\x01\x07\x1b\x7f\x80\x9f\u00ad\u034f\u061c\u200b\u200c\u200d\u200e\u200f" \
            "\u202a\u202b\u202c\u202d\u202e\u2060\u2061\u2066\u2067\u2068\u2069\ufeff\ufff9" \
            "\ufffc\ufffd\U000e0001\U000e0020"
EMOJI = ["\U0001f469\u200d\U0001f469\u200d\U0001f467\u200d\U0001f466",
         "\U0001f44d\U0001f3fd", "\U0001f1ef\U0001f1f5", "1\ufe0f\u20e3",
         "\U0001f3f3\ufe0f\u200d\U0001f308", "\U0001f9d1\u200d\U0001f4bb", "\u2764\ufe0f"]
MARKERS = ["[MASK]", "[CLS] [SEP]", "[PAD]", "[UNK]", "##", "[mask]", "[ MASK ]", "[MASK]" * 50,
           "[SEP]" * 300, "##ing ##s", "[unused0]", "<s></s>", "[CLS]x[SEP]y"]
BAD_BYTES = [b"\x80", b"\xbf", b"\xc0\xaf", b"\xe0\x80\xaf", b"\xed\xa0\x80", b"\xf4\x90\x80\x80",
             b"\xfe", b"\xff", b"\xc3", b"\xe2\x82", b"\xf0\x9f\x98"]


def _code_point(rng: random.Random) -> int:
    plane = rng.choice([0, 0, 0, 1, 2, 3, 14, 15, 16, rng.randrange(17)])
    return plane << 16 | rng.randrange(1 << 16)


def _piece(rng: random.Random) -> bytes:
    family = rng.randrange(11)
    if family == 0:  # any code point, surrogates (ill-formed in UTF-8) included
        text = "".join(chr(_code_point(rng)) for _ in range(rng.randrange(1, 40)))
        return text.encode("utf-8", "surrogatepass")
    if family == 1:  # raw bytes, mostly not UTF-8
        parts = [rng.choice(BAD_BYTES) if rng.random() < 0.6 else bytes([rng.randrange(256)])
                 for _ in range(rng.randrange(1, 30))]
        return b"".join(parts)
    if family == 2:
        text = "".join(rng.choice(INVISIBLE + SPACES) for _ in range(rng.randrange(1, 30)))
    elif family == 3:
        marks = "".join(chr(rng.randrange(0x300, 0x370)) for _ in range(rng.choice(
            [5, 50, 500, 2000])))
        text = rng.choice("aeoxZ\u0628\u05d0\u4e00 ") + marks
    elif family == 4:
        text = "".join(rng.choice(EMOJI) for _ in range(rng.randrange(1, 12)))
    elif family == 5:
        blocks = [(0x4E00, 0x9FFF), (0x20000, 0x2A6DF), (0xAC00, 0xD7A3), (0x3040, 0x30FF)]
        low, high = rng.choice(blocks)
        text = "".join(chr(rng.randrange(low, high)) for _ in range(rng.randrange(1, 60)))
    elif family == 6:
        rtl = "".join(chr(rng.randrange(*rng.choice([(0x5D0, 0x5EA), (0x627, 0x64A)])))
                      for _ in range(rng.randrange(1, 40)))
        text = rng.choice(["\u202e", "\u200f", "\u2067", ""]) + rtl + rng.choice(["\u202c", ""])
    elif family == 7:
        text = "" if rng.random() < 0.5 else "".join(
            rng.choice(SPACES) for _ in range(rng.randrange(1, 20)))
    elif family == 8:
        text = " ".join(rng.choice(MARKERS) for _ in range(rng.randrange(1, 6)))
    elif family == 9:  # words longer than both tokenizers' limits (100 and 200 characters)
        text = rng.choice("abxé") * rng.choice([99, 100, 101, 199, 200, 201, 5000])
    else:
        text = " ".join(rng.choice(WORDS) for _ in range(rng.choice([1, 10, 100, 2000])))
    return text.encode("utf-8")


def fuzz_strings(count: int, seed: int = 0, huge_every: int = 5_000) -> Iterator[bytes]:
    """`count` hostile strings as bytes (some not valid UTF-8), the same for the same seed."""
    rng = random.Random(seed)
    for i in range(count):
        if huge_every and i % huge_every == huge_every // 2:  # a 1 MiB text
            yield (" ".join(rng.choice(WORDS) for _ in range(1 << 18)).encode("utf-8")
                   [:1 << 20])
            continue
        yield b"".join(_piece(rng) for _ in range(rng.randrange(1, 5)))


def is_utf8(data: bytes) -> bool:
    """Whether `data` is well-formed UTF-8."""
    try:
        data.decode("utf-8")
    except UnicodeDecodeError:
        return False
    return True
