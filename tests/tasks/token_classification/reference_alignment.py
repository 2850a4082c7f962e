"""Readable Python reference of first-wordpiece label alignment (no windows: words that do
not fit are dropped), the rule `keras_bert.tasks.token_classification.word_windows` must
reproduce on every sentence that fits in one window.

Every word is split into wordpieces; the FIRST piece of a word carries the word's label and
the other pieces carry `IGNORE_LABEL`, as do `[CLS]`, `[SEP]` and padding. `word_ids` gives,
for every position, the index of the word it came from (-1 for special tokens and padding).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import tensorflow as tf

from keras_bert.tasks.labels import LabelVocab
from keras_bert.tasks.token_classification.conll import TaggedSentence
from keras_bert.tasks.token_classification.word_windows import IGNORE_LABEL

_WORDS_PER_TOKENIZER_CALL = 65536


@dataclass
class TaggingFeatures:
    """Aligned model inputs for token classification (NumPy, one row per sentence).

    `input_word_ids`, `input_mask`, `input_type_ids`, `labels` (`IGNORE_LABEL` except on
    first wordpieces; `None` when encoded without tags) and `word_ids` (-1 off words) are
    `int32 [n, seq_length]`; `num_words[i]` is the number of words of sentence i, of
    which `words_kept[i]` fit in `seq_length`.
    """

    input_word_ids: np.ndarray
    input_mask: np.ndarray
    input_type_ids: np.ndarray
    labels: np.ndarray | None
    word_ids: np.ndarray
    num_words: np.ndarray
    words_kept: np.ndarray

    def features(self) -> dict[str, np.ndarray]:
        """The three BERT inputs."""
        return {"input_word_ids": self.input_word_ids, "input_mask": self.input_mask,
                "input_type_ids": self.input_type_ids}


def tokenize_words(tokenizer, sentences: Sequence[Sequence[str]]) -> list[list[np.ndarray]]:
    """Wordpiece ids of every word: `result[i][j]` = ids of word j of sentence i.

    All words go through the tokenizer in large batches (one call per 65,536 words). A
    word that yields no piece (e.g. only control or zero-width characters) gets `[UNK]`
    so that every word keeps a prediction.
    """
    flat = [w for s in sentences for w in s]
    pieces: list[np.ndarray] = []
    for begin in range(0, len(flat), _WORDS_PER_TOKENIZER_CALL):
        chunk = tf.constant(flat[begin:begin + _WORDS_PER_TOKENIZER_CALL], tf.string)
        ids = tokenizer.tokenize(chunk)
        values = ids.flat_values.numpy()
        splits = ids.row_splits.numpy()
        pieces.extend(values[splits[k]:splits[k + 1]] for k in range(len(splits) - 1))
    unk = np.asarray([tokenizer.special_token_ids["unk"]], np.int32)
    result, k = [], 0
    for s in sentences:
        result.append([p if len(p) else unk for p in pieces[k:k + len(s)]])
        k += len(s)
    return result


def words_that_fit(piece_counts: Sequence[int], budget: int) -> int:
    """How many leading words fit whole in `budget` wordpieces.

    When not even the first word fits, returns 1: that word is then cut to the budget (the
    only case where a word is split by truncation).
    """
    total = 0
    for n, count in enumerate(piece_counts):
        if total + count > budget:
            return max(n, 1) if budget > 0 else 0
        total += count
    return len(piece_counts)


def align_sentences(tokenizer, sentences: Sequence[Sequence[str]], seq_length: int,
                    tag_ids: Sequence[Sequence[int]] | None = None) -> TaggingFeatures:
    """Tokenizes sentences (lists of words) and aligns word labels to first wordpieces.

    Layout `[CLS] pieces of the words that fit [SEP] [PAD]...`. Truncation keeps whole
    words: words after the last one that fits in `seq_length - 2` pieces are dropped
    (they get no prediction; see `words_kept`).

    Args:
      tokenizer: a `BertTokenizer`.
      sentences: the words of each sentence.
      seq_length: the packed length (at least 3).
      tag_ids: per-word label ids (same shape as `sentences`), or `None`.
    """
    if seq_length < 3:
        raise ValueError(f"seq_length must be at least 3, got {seq_length}")
    if tag_ids is not None:
        for i, (words, tags) in enumerate(zip(sentences, tag_ids, strict=True)):
            if len(words) != len(tags):
                raise ValueError(f"sentence {i}: {len(words)} words but {len(tags)} tags.")
    special = tokenizer.special_token_ids
    n = len(sentences)
    ids = np.full((n, seq_length), special["pad"], np.int32)
    mask = np.zeros((n, seq_length), np.int32)
    labels = np.full((n, seq_length), IGNORE_LABEL, np.int32)
    word_ids = np.full((n, seq_length), -1, np.int32)
    kept = np.zeros(n, np.int32)
    budget = seq_length - 2
    for i, pieces in enumerate(tokenize_words(tokenizer, sentences)):
        keep = words_that_fit([len(p) for p in pieces], budget)
        kept[i] = keep
        row = np.concatenate(pieces[:keep])[:budget] if keep else np.zeros(0, np.int32)
        owner = np.repeat(np.arange(keep, dtype=np.int32),
                          [len(p) for p in pieces[:keep]])[:budget]
        length = len(row) + 2
        ids[i, 0] = special["cls"]
        ids[i, 1:length - 1] = row
        ids[i, length - 1] = special["sep"]
        mask[i, :length] = 1
        word_ids[i, 1:length - 1] = owner
        if tag_ids is not None and keep:
            first = np.concatenate([[True], owner[1:] != owner[:-1]])
            positions = 1 + np.flatnonzero(first)
            labels[i, positions] = np.asarray(tag_ids[i], np.int32)[owner[first]]
    return TaggingFeatures(ids, mask, np.zeros_like(ids), labels if tag_ids is not None else None,
                           word_ids, np.asarray([len(s) for s in sentences], np.int32), kept)


def encode_tagged(tokenizer, sentences: Sequence[TaggedSentence], label_vocab: LabelVocab,
                  seq_length: int) -> TaggingFeatures:
    """`align_sentences` for read CoNLL sentences, tags encoded with `label_vocab`.

    Raises a `ValueError` naming the sentence's line when a tag is not in `label_vocab`.
    """
    tag_ids = []
    for s in sentences:
        unknown = [t for t in s.tags if t not in label_vocab]
        if unknown:
            raise ValueError(f"sentence at line {s.line}: tag {unknown[0]!r} is not in the "
                             f"label set {label_vocab.names}.")
        tag_ids.append(label_vocab.encode(s.tags))
    return align_sentences(tokenizer, [s.words for s in sentences], seq_length, tag_ids)


def tagging_dataset(features: TaggingFeatures, batch_size: int = 32, shuffle_buffer: int = 0,
                    seed: int | None = None, drop_remainder: bool = False) -> tf.data.Dataset:
    """A batched `tf.data.Dataset` of `(features, labels)`, labels `int32 [batch, seq_length]`.

    Yields features alone when `features.labels` is None.
    """
    inputs = features.features()
    ds = tf.data.Dataset.from_tensor_slices(
        inputs if features.labels is None else (inputs, features.labels))
    if shuffle_buffer:
        ds = ds.shuffle(shuffle_buffer, seed=seed, reshuffle_each_iteration=True)
    return ds.batch(batch_size, drop_remainder=drop_remainder)


def predictions_to_tags(predicted_ids, features: TaggingFeatures, label_vocab: LabelVocab,
                        fill: str = "O") -> list[list[str]]:
    """Word-level tags from token-level predicted label ids (first-wordpiece rule).

    Args:
      predicted_ids: `[n, seq_length]` label ids (e.g. `argmax` of the logits).
      features: the `TaggingFeatures` the predictions were made on.
      label_vocab: id -> tag.
      fill: the tag given to words dropped by truncation (they had no prediction).

    Returns:
      For each sentence, one tag per word (all `num_words` of them).
    """
    predicted_ids = np.asarray(predicted_ids)
    if predicted_ids.shape != features.word_ids.shape:
        raise ValueError(f"predictions of shape {predicted_ids.shape} for features of shape "
                         f"{features.word_ids.shape}.")
    result = []
    for i in range(len(predicted_ids)):
        tags = [fill] * int(features.num_words[i])
        owner = features.word_ids[i]
        positions = np.flatnonzero(owner >= 0)
        first = positions[np.concatenate([[True], owner[positions[1:]] != owner[positions[:-1]]])
                          ] if len(positions) else positions
        for p in first:
            tags[owner[p]] = label_vocab.name(predicted_ids[i, p])
        result.append(tags)
    return result
