"""An independent, pure-Python statement of the BERT tokenization rules, Google's and HF's.

This is the oracle for the parity tests of `keras_bert.text.BertTokenizer`. It is written
from the rules of Google's `tokenization.py` (`FullTokenizer` = `BasicTokenizer` followed by
`WordpieceTokenizer`) and of Hugging Face's `tokenizers` (`BertNormalizer`,
`BertPreTokenizer`, `WordPiece`), as stated below, not copied from either, and deliberately
kept slow and literal so that it is easy to check by eye. `rules` picks the column where
the two differ:

1. Bytes are decoded as UTF-8, silently dropping undecodable bytes.
2. Cleaning: NUL, U+FFFD and every character of the dropped categories (google: Cc, Cf;
   huggingface: Cc, Cf, Co) is dropped, except tab, newline and carriage return; those
   three, the space and every category-Zs character become a plain space.
3. Every CJK ideograph (the eight code point blocks in `_CJK_BLOCKS`) is surrounded by spaces.
4. The text is split on whitespace (Python's `str.split()`).
5. Uncased only. google: each piece is lower-cased with `str.lower()`, NFD-normalised, and
   every category-Mn character (non-spacing mark) is removed. huggingface: NFD, remove Mn,
   then each character is lower-cased on its own (no final-sigma rule).
6. Each piece is split around punctuation: every character of category P*, plus all
   non-alphanumeric printable ASCII (code points 33-47, 58-64, 91-96, 123-126), becomes a
   token of its own.
7. WordPiece: a word longer than 200 (google) / 100 (huggingface) characters becomes `[UNK]`;
   otherwise the longest vocabulary prefix is taken, then repeatedly the longest
   `##`-prefixed continuation; if at some position nothing matches, the whole word becomes
   `[UNK]`.

The vocabulary is read like the original: one token per line, surrounding whitespace
stripped, id = line number (a duplicated token keeps its last line number).

`preserve_special_tokens=True` mimics what Hugging Face's slow tokenizer does with its
`never_split` tokens: the literal strings `[CLS]`, `[SEP]`, `[MASK]`, `[PAD]`, `[UNK]` are
cut out of the raw text first and map straight to their ids; the rest is tokenized as above.
"""

from __future__ import annotations

import re
import unicodedata

_CJK_BLOCKS = (
    (0x4E00, 0x9FFF),
    (0x3400, 0x4DBF),
    (0x20000, 0x2A6DF),
    (0x2A700, 0x2B73F),
    (0x2B740, 0x2B81F),
    (0x2B820, 0x2CEAF),
    (0xF900, 0xFAFF),
    (0x2F800, 0x2FA1F),
)

SPECIAL_TOKENS = ("[CLS]", "[SEP]", "[MASK]", "[PAD]", "[UNK]")
DROPPED = {"google": ("Cc", "Cf"), "huggingface": ("Cc", "Cf", "Co")}
MAX_CHARS = {"google": 200, "huggingface": 100}


def read_vocab(path_or_tokens) -> dict[str, int]:
    """Token -> id, read line by line with stripping, later duplicates winning."""
    if isinstance(path_or_tokens, str):
        with open(path_or_tokens, encoding="utf-8") as f:
            lines = f.read().split("\n")
        if lines and lines[-1] == "":
            lines.pop()
    else:
        lines = list(path_or_tokens)
    return {line.strip(): i for i, line in enumerate(lines)}


def _dropped(ch: str, rules: str) -> bool:
    if ch in "\t\n\r":
        return False
    return ch in "\x00\ufffd" or unicodedata.category(ch) in DROPPED[rules]


def _strip_accents(text: str) -> str:
    return "".join(c for c in unicodedata.normalize("NFD", text)
                   if unicodedata.category(c) != "Mn")


def _lower(text: str, rules: str) -> str:
    if rules == "google":
        return _strip_accents(text.lower())
    return "".join(c.lower() for c in _strip_accents(text))


def _blank(ch: str) -> bool:
    return ch in " \t\n\r" or unicodedata.category(ch) == "Zs"


def _punct(ch: str) -> bool:
    o = ord(ch)
    if 33 <= o <= 47 or 58 <= o <= 64 or 91 <= o <= 96 or 123 <= o <= 126:
        return True
    return unicodedata.category(ch)[0] == "P"


def _cjk(ch: str) -> bool:
    o = ord(ch)
    return any(lo <= o <= hi for lo, hi in _CJK_BLOCKS)


def basic_split(text: str, lower_case: bool, rules: str = "google") -> list[str]:
    """Steps 2-6: cleaned, (optionally) lower-cased, accent-free words and punctuation."""
    cleaned = []
    for ch in text:
        if _dropped(ch, rules):
            continue
        if _blank(ch):
            cleaned.append(" ")
        elif _cjk(ch):
            cleaned.append(f" {ch} ")
        else:
            cleaned.append(ch)
    words = []
    for piece in "".join(cleaned).split():
        if lower_case:
            piece = _lower(piece, rules)
        current = ""
        for ch in piece:
            if _punct(ch):
                if current:
                    words.append(current)
                    current = ""
                words.append(ch)
            else:
                current += ch
        if current:
            words.append(current)
    # The original re-splits on whitespace here; nothing above can create new whitespace,
    # but keep the step so that the rule stays literal.
    return " ".join(words).split()


def wordpiece(word: str, vocab: dict[str, int], max_chars: int, unk: str = "[UNK]"):
    """Step 7 for one word: greedy longest-match-first pieces, or `[unk]`."""
    if len(word) > max_chars:
        return [unk]
    pieces = []
    start = 0
    while start < len(word):
        for end in range(len(word), start, -1):
            candidate = word[start:end] if start == 0 else "##" + word[start:end]
            if candidate in vocab:
                pieces.append(candidate)
                start = end
                break
        else:
            return [unk]
    return pieces


class ReferenceTokenizer:
    """Google's `FullTokenizer` or Hugging Face's BERT tokenizer, in plain Python (slow)."""

    def __init__(self, vocab, lower_case: bool, preserve_special_tokens: bool = False,
                 rules: str = "google"):
        self.vocab = read_vocab(vocab)
        self.lower_case = lower_case
        self.rules = rules
        self.preserve_special_tokens = preserve_special_tokens

    def tokens(self, text) -> list[str]:
        """Wordpiece strings of one text (`str`, or `bytes` decoded dropping bad bytes)."""
        if isinstance(text, bytes):
            text = text.decode("utf-8", "ignore")
        if self.preserve_special_tokens:
            pattern = "(" + "|".join(re.escape(t) for t in SPECIAL_TOKENS) + ")"
            chunks = re.split(pattern, text)
        else:
            chunks = [text]
        out = []
        for i, chunk in enumerate(chunks):
            if self.preserve_special_tokens and i % 2 == 1:
                out.append(chunk)
                continue
            for word in basic_split(chunk, self.lower_case, self.rules):
                out.extend(wordpiece(word, self.vocab, MAX_CHARS[self.rules]))
        return out

    def ids(self, text) -> list[int]:
        """Token ids of one text."""
        return [self.vocab[t] for t in self.tokens(text)]
