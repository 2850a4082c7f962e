"""Learning a WordPiece vocabulary from a corpus (`keras-bert build-vocab`).

Words are split exactly as `BertTokenizer` splits them (same cleaning, casing and
punctuation / CJK rules), counted, and handed to the WordPiece learner
(`keras_bert.text.wordpiece_learner`: TF Text's algorithm and vocabulary, ~35x faster).
The special tokens come first, in the layout of Google's vocabularies: `[PAD]`, the
`[unusedN]` reserve, `[UNK]`, `[CLS]`, `[SEP]`, `[MASK]`.
"""

from __future__ import annotations

import collections
from collections.abc import Iterable

import tensorflow as tf

from keras_bert.text.normalize import BertNormalizer, word_split_patterns
from keras_bert.text.rules import DEFAULT_RULES
from keras_bert.text.wordpiece_learner import LearnerSettings, learn


class BertWordSplitter(tf.Module):
    """BERT's basic tokenization without WordPiece: strings -> RaggedTensor of words."""

    def __init__(self, lower_case: bool = True, rules: str = DEFAULT_RULES,
                 name: str | None = None):
        super().__init__(name=name)
        self.normalizer = BertNormalizer(lower_case, rules)
        self._pad_pattern = word_split_patterns(rules)["pad"]

    def __call__(self, strings) -> tf.RaggedTensor:
        padded = tf.strings.regex_replace(self.normalizer(strings), self._pad_pattern, r" \1 ")
        return tf.strings.split(padded)


def count_words(lines: Iterable[str], lower_case: bool = True, batch_size: int = 4096,
                rules: str = DEFAULT_RULES) -> collections.Counter:
    """Word counts of `lines` under BERT's splitting (tokenizer rules `rules`)."""
    splitter = BertWordSplitter(lower_case, rules)
    split = tf.function(splitter.__call__, input_signature=[tf.TensorSpec([None], tf.string)])
    counts: collections.Counter = collections.Counter()
    batch: list[str] = []

    def flush():
        words = split(tf.constant(batch)).flat_values.numpy()
        counts.update(w.decode("utf-8") for w in words)
        batch.clear()

    for line in lines:
        batch.append(line)
        if len(batch) == batch_size:
            flush()
    if batch:
        flush()
    return counts


def special_tokens(num_unused: int = 0) -> list[str]:
    """`[PAD]`, `[unused0]`.. `[unusedN-1]`, `[UNK]`, `[CLS]`, `[SEP]`, `[MASK]`."""
    return ["[PAD]", *[f"[unused{i}]" for i in range(num_unused)],
            "[UNK]", "[CLS]", "[SEP]", "[MASK]"]


def build_vocab(lines: Iterable[str], vocab_size: int, lower_case: bool = True,
                num_unused: int = 0, min_count: int = 2,
                rules: str = DEFAULT_RULES) -> list[str]:
    """A WordPiece vocabulary of at most `vocab_size` tokens learned from `lines`.

    Special tokens come first (see `special_tokens`); every character of the corpus that
    survives normalisation gets a token (and a `##` form), so no word becomes `[UNK]`
    unless its characters are rarer than `min_count`.
    """
    reserved = special_tokens(num_unused)
    if vocab_size <= len(reserved):
        raise ValueError(f"vocab_size {vocab_size} leaves no room after the "
                         f"{len(reserved)} special tokens")
    counts = count_words(lines, lower_case, rules=rules)
    if not counts:
        raise ValueError("The corpus has no words to learn a vocabulary from")
    vocab = learn(counts, vocab_size, reserved, LearnerSettings(lower_thresh=min_count))
    return vocab[:vocab_size]


def save_vocab(vocab: list[str], path: str) -> None:
    """Writes one token per line (`vocab.txt`)."""
    with open(path, "w", encoding="utf-8") as f:
        f.write("\n".join(vocab) + "\n")
