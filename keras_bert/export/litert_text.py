"""Text steps of the LiteRT graphs, from TF Text's TFLite kernels and LiteRT's builtin ops.

The SavedModel's tagger and span QA read their texts with ops LiteRT has no kernel for
(regular expressions, `Substr`, ragged ranges, float64 arithmetic, int64 segment
reductions). These are the same steps rebuilt from what a LiteRT interpreter with TF
Text's kernels runs, in int32:

- `split_words`: Python's `str.split()` with byte offsets, by TF Text's
  `WhitespaceTokenizeWithOffsetsV2` given the code points `str.isspace` names (its default
  table, ICU's White_Space, leaves out U+001C-U+001F);
- `LiteRTTokenizer`: TF Text's `FastBertNormalize` + `FastWordpieceTokenizeWithOffsets`
  (`FastBertTokenizer`'s two ops), with source byte offsets mapped by keras_bert's rule
  (`keras_bert.text.source_offsets`: a piece ends where its last input character ends,
  not where the next kept one starts);
- `cut`: substrings by byte offsets (`ByteSplitByOffsets`);
- `windows` and `max_context_window`: `keras_bert.text.doc_windows`' windows over long
  texts, dense, and the max-context rule's float64 scores compared through a table of
  their ranks (`ContextRanks`), so that ties fall exactly as in the SavedModel.
"""

from __future__ import annotations

import dataclasses
import functools
import sys

import numpy as np
import tensorflow as tf
import tensorflow_text as tf_text
from tensorflow_text.python.ops.byte_splitter import gen_byte_splitter
from tensorflow_text.python.ops.whitespace_tokenizer import gen_whitespace_tokenizer_v2


@functools.cache
def python_whitespace() -> bytes:
    """`WhitespaceTokenizeWithOffsetsV2`'s config: a bitmap (bit `c % 8` of byte `c // 8`)
    of the code points `c` that Python's `str.isspace` names."""
    spaces = [c for c in range(sys.maxunicode + 1) if chr(c).isspace()]
    bits = bytearray(max(spaces) // 8 + 1)
    for c in spaces:
        bits[c >> 3] |= 1 << (c & 7)
    return bytes(bits)


def split_words(text) -> tuple[tf.Tensor, ...]:
    """`[batch]` strings -> the words `str.split()` finds: `(words, splits, starts, ends)`,
    the words flat `[words]`, int32 row splits `[batch + 1]` and UTF-8 byte offsets."""
    _, splits, starts, ends = (
        gen_whitespace_tokenizer_v2.tf_text_whitespace_tokenize_with_offsets_v2(
            input_values=text, input_config=python_whitespace()))
    splits, starts, ends = (tf.cast(t, tf.int32) for t in (splits, starts, ends))
    # A word followed by a whitespace character of two or three bytes is given that
    # character's bytes but its last as its end (TF Text 2.21's kernel): the true end is
    # where the character starts, the continuation bytes (0x80-0xBF) up to `ends` ahead.
    data = tf_text.ByteSplitter().split(text)
    rows = row_ids(splits[1:] - splits[:-1])
    base = tf.gather(tf.cast(data.row_splits, tf.int32), rows)
    size = tf.gather(tf.cast(data.row_splits[1:] - data.row_splits[:-1], tf.int32), rows)
    values = tf.concat([tf.cast(data.values, tf.int32), [0]], 0)

    def continues(at):  # whether byte `at` of its row continues a character
        byte = tf.gather(values, tf.where((at >= 0) & (at < size), base + at,
                                          tf.size(data.values)))
        return tf.cast((byte >= 0x80) & (byte < 0xC0), tf.int32)

    back = continues(ends)
    ends -= back + back * continues(ends - 1)
    words, _ = gen_byte_splitter.tf_text_byte_split_by_offsets(
        text, starts, ends, tf.cast(splits, tf.int64))
    return words, splits, starts, ends


def cut(text, starts, ends) -> tf.Tensor:
    """`[batch]` strings and int `[batch, k]` offsets -> `[batch, k]` substrings
    `text[i][starts[i, j]:ends[i, j]]` (of the UTF-8 bytes)."""
    shape = tf.shape(starts)
    splits = tf.range(shape[0] + 1) * shape[1]
    values, _ = gen_byte_splitter.tf_text_byte_split_by_offsets(
        text, tf.reshape(tf.cast(starts, tf.int32), [-1]),
        tf.reshape(tf.cast(ends, tf.int32), [-1]), tf.cast(splits, tf.int64))
    return tf.reshape(values, shape)


class LiteRTTokenizer(tf.Module):
    """The TFLite-capable tokenizer closest to a `BertTokenizer` (`tokenizer`): its
    vocabulary and casing, and its rules' word limit counted in bytes (after
    normalisation) where the rules count characters (docs/litert.md measures the rest)."""

    def __init__(self, tokenizer):
        from keras_bert.text.rules import tokenizer_rules

        super().__init__(name="litert_tokenizer")
        self.unk_id = tokenizer.unk_id
        self.normalizer = tf_text.FastBertNormalizer(
            lower_case_nfd_strip_accents=tokenizer.lower_case)
        self.wordpiece = tf_text.FastWordpieceTokenizer(
            tokenizer.vocab, token_out_type=tf.int32, unknown_token="[UNK]",
            max_bytes_per_word=tokenizer_rules(tokenizer.rules).max_chars_per_word)

    def tokenize(self, strings) -> tf.RaggedTensor:
        """`[n]` strings -> int32 word piece ids `[n, (pieces)]`."""
        return self.wordpiece.tokenize(self.normalizer.normalize(strings))

    def tokenize_with_offsets(self, text) -> tuple[tf.Tensor, ...]:
        """`[batch]` strings -> `(ids, splits, starts, ends)`: the pieces flat, int32 row
        splits and each piece's UTF-8 byte offsets in `text`: it starts where its first
        input character starts and ends where its last one ends (a piece inside one
        character's expansion, such as a Hangul syllable's jamo, gets the character)."""
        normalized, offsets = self.normalizer.normalize_with_offsets(text)
        pieces, starts, ends = self.wordpiece.tokenize_with_offsets(normalized)
        splits = tf.cast(pieces.row_splits, tf.int32)
        rows = row_ids(splits[1:] - splits[:-1])
        # `offsets[k]`: where the input character of normalised byte `k` starts (one more
        # entry per row: its end).
        base = tf.gather(tf.cast(offsets.row_splits, tf.int32), rows)
        source = tf.cast(offsets.values, tf.int32)
        begin = tf.gather(source, base + tf.cast(starts.values, tf.int32))
        last = tf.gather(source, base + tf.cast(ends.values, tf.int32) - 1)
        return pieces.values, splits, begin, last + char_length(text, rows, last)


def char_length(text, rows, at) -> tf.Tensor:
    """The UTF-8 byte length of the character starting at byte `at` of `text[rows]`, read
    from its lead byte (a byte that cannot lead counts 1)."""
    data = tf_text.ByteSplitter().split(text)
    lead = tf.gather(tf.cast(data.values, tf.int32),
                     tf.gather(tf.cast(data.row_splits, tf.int32), rows) + at)
    return (1 + tf.cast(lead >= 0xC0, tf.int32) + tf.cast(lead >= 0xE0, tf.int32)
            + tf.cast(lead >= 0xF0, tf.int32))


def row_ids(lengths) -> tf.Tensor:
    """int32 `[sum(lengths)]`: the row of each value of rows `lengths` `[rows]` long (a
    ragged tensor's `value_rowids`, from builtin ops: a row ending at `p` moves every value
    from `p` on one row further)."""
    lengths = tf.cast(lengths, tf.int32)
    ends = tf.cumsum(lengths)
    total = tf.reduce_sum(lengths)
    room = tf.maximum(total, 1)
    marks = tf.math.unsorted_segment_sum(tf.cast(ends < total, tf.int32),
                                         tf.minimum(ends, room - 1), room)
    return tf.cumsum(marks)[:total]


def padding_index(splits) -> tf.Tensor:
    """`[rows, longest]` positions in the `splits[-1]` values of rows `splits`: row `r`'s
    values, then `splits[-1]`, where `padded` puts the pad. Computed once for all the
    arrays split alike (a tagger's labels, scores and offsets per word): each op of a
    LiteRT graph costs its call, whatever its size."""
    lengths = splits[1:] - splits[:-1]
    width = tf.reduce_max(tf.concat([lengths, [0]], 0))
    column = tf.range(width)[None, :]
    return tf.where(column < lengths[:, None], splits[:-1, None] + column, splits[-1])


def padded(values, index, pad) -> tf.Tensor:
    """`[rows, longest]`: each row of `values` (`[splits[-1]]`) at `padding_index(splits)`,
    padded with `pad`."""
    return tf.gather(tf.concat([values, tf.reshape(tf.cast(pad, values.dtype), [1])], 0),
                     index)


def pack(segments: list[tuple], cls_id: int, sep_id: int, pad_id: int) -> dict:
    """The three id tensors of rows `[CLS] a [SEP]` or `[CLS] a [SEP] b [SEP]` (type ids 1
    from `b` on), padded to the longest row; each segment `(values, first, length)`: row
    `r` reads `values[first[r]:first[r] + length[r]]`."""
    total = 1 + tf.add_n([length + 1 for _, _, length in segments])
    column = tf.range(tf.reduce_max(tf.concat([total, [0]], 0)))[None, :]
    words = tf.fill(tf.shape(column + total[:, None]), pad_id)
    types = tf.zeros_like(words)
    start = tf.ones_like(total)
    for index, (values, first, length) in enumerate(segments):
        offset = column - start[:, None]
        inside = (offset >= 0) & (offset < length[:, None])
        known = tf.concat([values, [pad_id]], 0)
        words = tf.where(inside, tf.gather(known, tf.where(inside, first[:, None] + offset,
                                                           tf.size(values))), words)
        is_sep = tf.equal(offset, length[:, None])
        words = tf.where(is_sep, sep_id, words)
        if index:
            types = tf.where(inside | is_sep, index, types)
        start += length + 1
    # Masks by a where, not a cast of the bools: the converter folds the encoder's check of
    # the type ids into a zeros_like of bools, which LiteRT lacks.
    return {"input_word_ids": tf.where(column == 0, cls_id, words),
            "input_mask": tf.where(column < total[:, None], 1, 0), "input_type_ids": types}


@dataclasses.dataclass(frozen=True)
class DenseWindows:
    """`keras_bert.text.doc_windows.Windows` in int32, from builtin ops: per window its
    row (`example`), number in its row (`index`), first token (`start`) and token count
    (`length`); per row `count` and `first` (its first window)."""

    example: tf.Tensor
    index: tf.Tensor
    start: tf.Tensor
    length: tf.Tensor
    count: tf.Tensor
    first: tf.Tensor


def windows(num_tokens, room, doc_stride: int) -> DenseWindows:
    """The windows `doc_windows` makes over rows of `num_tokens` tokens, at most `room`
    each (both int `[rows]`), starts `min(room, doc_stride)` apart."""
    n, m = tf.cast(num_tokens, tf.int32), tf.cast(room, tf.int32)
    step = tf.minimum(m, doc_stride)
    count = 1 + tf.maximum(-((m - n) // step), 0)
    example = row_ids(count)
    first = tf.cumsum(count, exclusive=True)
    index = tf.range(tf.size(example)) - tf.gather(first, example)
    start = index * tf.gather(step, example)
    length = tf.minimum(tf.gather(n, example) - start, tf.gather(m, example))
    return DenseWindows(example, index, start, length, count, first)


class ContextRanks:
    """The max-context rule's scores (`keras_bert.text.doc_windows`: `min(left, right) +
    0.01 * window length` in float64) as int32 ranks, for windows of up to `longest`
    tokens: a table of every score's rank among all, so that comparing ranks is comparing
    the float64 scores, ties (which float64 rounding breaks for some lengths) included."""

    def __init__(self, longest: int):
        self.width = int(longest) + 1
        near = np.arange(self.width, dtype=np.float64)[:, None]
        length = np.arange(self.width, dtype=np.float64)[None, :]
        _, rank = np.unique((near + 0.01 * length).ravel(), return_inverse=True)
        self.table = tf.constant(rank.astype(np.int32))

    def rank(self, position, window, step, num_tokens, room, count) -> tf.Tensor:
        """The score's rank of each token `position` in `window` (-1 outside it)."""
        start = window * step
        length = tf.minimum(num_tokens - start, room)
        left, right = position - start, start + length - 1 - position
        inside = (left >= 0) & (right >= 0) & (window < count)
        near = tf.clip_by_value(tf.minimum(left, right), 0, self.width - 1)
        score = tf.gather(self.table, near * self.width + tf.clip_by_value(length, 0,
                                                                            self.width - 1))
        return tf.where(inside, score, -1)

    def best_window(self, position, step, num_tokens, room, count) -> tf.Tensor:
        """`max_context_window` (its three candidates, the first winning ties) in int32."""
        last = count - 1
        full_last = tf.maximum(last - 1, 0)
        peak = (2 * position - room + 1) // (2 * step)
        candidates = [tf.clip_by_value(peak, 0, full_last),
                      tf.clip_by_value(peak + 1, 0, full_last), last + tf.zeros_like(peak)]
        args = (step, num_tokens, room, count)
        best, best_rank = candidates[0], self.rank(position, candidates[0], *args)
        for window in candidates[1:]:
            rank = self.rank(position, window, *args)
            best = tf.where(rank > best_rank, window, best)
            best_rank = tf.maximum(rank, best_rank)
        return best
