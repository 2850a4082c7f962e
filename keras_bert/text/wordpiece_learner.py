"""Learning a WordPiece vocabulary from word counts: TF Text's algorithm, on arrays.

The algorithm is the one of TF Text's `wordpiece_vocab` learner (what
`tensorflow_text.tools.wordpiece_vocab.wordpiece_tokenizer_learner_lib.learn` computes),
and `learn` gives the same vocabulary (tests/text/test_wordpiece_learner.py compares them):

- A binary search over a count threshold for the largest vocabulary within `slack_ratio`
  under `vocab_size`.
- For one threshold, `num_iterations` rounds. Each counts, weighted by word counts, every
  substring of a word that starts where one of the word's pieces starts (`##` before it
  unless it starts the word): in the first round every position; in later rounds the
  pieces of the word's greedy longest-match split by the previous round's tokens (a word
  that cannot be split is left out). A substring is kept when its count, less the counts
  of its one-character-longer extensions, reaches the threshold (TF Text subtracts each
  longer token's remaining count from all its prefixes, longest first; the sum telescopes
  to this). Every character of the corpus stays a token, alone and with `##`.

TF Text recomputes every round in Python for each threshold of the search (48-53 s for
the 18,664 distinct words of the embedded corpus on 2 cores, against 1.4-1.5 s here). Here
every substring of every word gets an integer id once; a round is then a weighted `bincount`
over the chosen (word, start) blocks, and the first round, which does not depend on the
threshold, is computed once. The memory is one int32 per substring occurrence of the
distinct words.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class LearnerSettings:
    """The learner's settings (TF Text's defaults)."""

    upper_thresh: int | None = 10_000_000
    lower_thresh: int | None = 10
    num_iterations: int = 4
    max_input_tokens: int | None = 5_000_000
    max_token_length: int = 50
    max_unique_chars: int = 1000
    slack_ratio: float = 0.05
    joiner: str = "##"


class _Substrings:
    """Every substring of `words` as ids, in blocks: one block per (word, start), holding
    the ids of `word[start:end]` for end = start+1 .. len(word), `joiner` before it when
    start > 0."""

    def __init__(self, words: list[str], counts: np.ndarray, joiner: str):
        index: dict[str, int] = {}
        tokens: list[str] = []
        parents: list[int] = []
        ids: list[int] = []
        block_start: list[int] = []
        word_first_block = np.zeros(len(words), np.int64)
        block_word: list[int] = []
        for w, word in enumerate(words):
            word_first_block[w] = len(block_start)
            for start in range(len(word)):
                block_start.append(len(ids))
                block_word.append(w)
                prefix = joiner if start else ""
                parent = -1
                for end in range(start + 1, len(word) + 1):
                    token = prefix + word[start:end]
                    i = index.get(token)
                    if i is None:
                        i = index[token] = len(tokens)
                        tokens.append(token)
                        parents.append(parent)
                    ids.append(i)
                    parent = i
        self.tokens = tokens
        self.index = index
        self.parent = np.asarray(parents, np.int64)
        self.ids = np.asarray(ids, np.int32)
        self.block_start = np.asarray(block_start, np.int64)
        self.block_word = np.asarray(block_word, np.int64)
        self.block_len = np.diff(np.append(self.block_start, len(ids)))
        self.word_first_block = word_first_block
        self.word_len = np.asarray([len(w) for w in words], np.int64)
        self.counts = counts

    def kept_counts(self, chosen: np.ndarray) -> np.ndarray:
        """Per token id: its count over the `chosen` blocks less its extensions' (-1 where
        the token does not occur in them)."""
        weights = np.where(chosen, self.counts[self.block_word], 0)
        totals = np.bincount(self.ids, weights=np.repeat(weights, self.block_len),
                             minlength=len(self.tokens)).round().astype(np.int64)
        child = self.parent >= 0
        extensions = np.bincount(self.parent[child], weights=totals[child],
                                 minlength=len(self.tokens)).round().astype(np.int64)
        return np.where(totals > 0, totals - extensions, -1)

    def greedy_blocks(self, vocab: np.ndarray) -> np.ndarray:
        """The blocks where the pieces of each word's greedy longest-match split by the
        tokens in `vocab` (a mask over ids) start; none for a word that cannot be split."""
        valid = vocab[self.ids]
        offset = np.arange(len(self.ids)) - np.repeat(self.block_start, self.block_len)
        longest = np.maximum.reduceat(np.where(valid, offset + 1, 0), self.block_start)
        chosen = np.zeros(len(self.block_start), bool)
        position = np.zeros(len(self.word_len), np.int64)
        failed = np.zeros(len(self.word_len), bool)
        active = np.flatnonzero(position < self.word_len)
        while active.size:
            block = self.word_first_block[active] + position[active]
            piece = longest[block]
            failed[active[piece == 0]] = True
            chosen[block] = True
            position[active] += np.where(piece == 0, self.word_len[active], piece)
            active = active[position[active] < self.word_len[active]]
        return chosen & ~failed[self.block_word]


def _with_characters(kept: dict[str, int], chars: set[str], joiner: str) -> dict[str, int]:
    for char in chars:
        kept.setdefault(char, 1)
        kept.setdefault(joiner + char, 1)
    return kept


def _input_words(word_counts, reserved: list[str], settings: LearnerSettings):
    """TF Text's input filtering: words over `max_token_length` or reserved dropped, words
    with characters outside the `max_unique_chars` most frequent dropped, at most
    `max_input_tokens` words, most frequent first (a stable sort, as TF Text's)."""
    reserved_set = set(reserved)
    kept = [(w, c) for w, c in word_counts
            if len(w) <= settings.max_token_length and w not in reserved_set]
    char_counts: dict[str, int] = defaultdict(int)
    for word, count in kept:
        for char in word:
            char_counts[char] += count
    ranked = sorted(char_counts.items(), key=lambda kv: (-kv[1], kv[0]))
    allowed = {char for char, _ in ranked[:settings.max_unique_chars]}
    limit = settings.max_input_tokens
    limit = None if limit is None or limit == -1 else limit
    out = []
    for word, count in sorted(kept, key=lambda wc: wc[1], reverse=True):
        if limit is not None and len(out) >= limit:
            break
        if all(char in allowed for char in word):
            out.append((word, count))
    return out


def learn(word_counts, vocab_size: int, reserved_tokens: list[str],
          settings: LearnerSettings = LearnerSettings()) -> list[str]:
    """The WordPiece vocabulary TF Text's `learn` gives for `word_counts` (a dict or
    `(word, count)` pairs): `reserved_tokens`, the corpus' characters (sorted), then the
    learned tokens by count (ties alphabetically); at most `vocab_size` is the target, as
    in TF Text, not a cut."""
    word_counts = list(word_counts.items() if isinstance(word_counts, dict) else word_counts)
    if not word_counts:
        raise ValueError("no words to learn a vocabulary from")
    counts = [c for _, c in word_counts]
    upper = max(counts) if settings.upper_thresh is None else min(max(counts),
                                                                   settings.upper_thresh)
    lower = min(counts) if settings.lower_thresh is None else max(min(counts),
                                                                   settings.lower_thresh)
    words = _input_words(word_counts, reserved_tokens, settings)
    chars = {char for word, _ in words for char in word}
    table = _Substrings([w for w, _ in words], np.asarray([c for _, c in words], np.int64),
                        settings.joiner)
    first_round = table.kept_counts(np.ones(len(table.block_start), bool))
    slack = max(settings.slack_ratio * vocab_size, 0)
    while True:
        thresh = (upper + lower) // 2
        vocab = _learn_with_threshold(table, first_round, thresh, chars, reserved_tokens,
                                      settings)
        fits = len(vocab) <= vocab_size and vocab_size - len(vocab) <= slack
        if fits or lower >= upper or thresh <= 1:
            return vocab
        if len(vocab) > vocab_size:
            lower = thresh + 1
        else:
            upper = thresh - 1


def _learn_with_threshold(table: _Substrings, first_round: np.ndarray, thresh: int,
                          chars: set[str], reserved: list[str],
                          settings: LearnerSettings) -> list[str]:
    kept = first_round
    current = _with_characters({}, chars, settings.joiner)  # what 0 rounds leave
    for iteration in range(settings.num_iterations):
        if iteration:
            in_vocab = np.zeros(len(table.tokens), bool)
            in_vocab[[table.index[t] for t in current if t in table.index]] = True
            kept = table.kept_counts(table.greedy_blocks(in_vocab))
        current = _with_characters(
            {table.tokens[i]: int(kept[i]) for i in np.flatnonzero(kept >= max(thresh, 0))},
            chars, settings.joiner)
    ordered = [*reserved, *sorted(chars),
               *(t for t, _ in sorted(current.items(), key=lambda kv: (-kv[1], kv[0])))]
    return list(dict.fromkeys(ordered))
