"""Where word pieces lie in the ORIGINAL input strings: byte offsets for `tokenize_with_offsets`.

They are obtained by decoding the input (`UnicodeDecodeWithOffsets`), normalising every
non-ASCII character on its own to learn how many bytes it becomes, and mapping each
wordpiece's normalised byte range back with a binary search. A wordpiece that starts or ends
inside the expansion of one input character (e.g. a Hangul syllable decomposed into jamo) is
given that whole character.
"""

from __future__ import annotations

import tensorflow as tf

from keras_bert.text.normalize import encode_utf8, searchsorted


def value_rowids(row_splits, n_values):
    """Row index of each of the `n_values` flat values of `row_splits` (int64)."""
    return searchsorted(row_splits, tf.range(n_values), "right") - 1


def source_offsets(normalizer, strings, row_of_piece, norm_starts, norm_ends):
    """Byte offsets in the input `strings` of word pieces found in `normalizer(strings)`:
    `(starts, ends)` for pieces at normalised byte ranges `[norm_starts, norm_ends)` of rows
    `row_of_piece` (int64, flat)."""
    decoded = tf.raw_ops.UnicodeDecodeWithOffsets(
        input=strings, input_encoding="UTF-8", errors="replace",
        replacement_char=0xFFFD, Tsplits=tf.int64)
    char_splits, flat_cp, char_starts = (
        decoded.row_splits, decoded.char_values, decoded.char_to_byte_starts)
    n_chars = tf.size(flat_cp, out_type=tf.int64)
    row_ids = value_rowids(char_splits, n_chars)
    # Byte length of every input character in the normalised text: ASCII directly,
    # other characters by normalising each one on its own.
    ascii_len = tf.where(
        ((flat_cp < 32) & (flat_cp != 9) & (flat_cp != 10) & (flat_cp != 13))
        | (flat_cp == 127), 0, 1)
    wide = tf.where(flat_cp >= 128)[:, 0]
    wide_chars = encode_utf8(
        tf.gather(flat_cp, wide), tf.range(tf.size(wide, out_type=tf.int64) + 1))
    wide_len = tf.strings.length(normalizer(wide_chars))
    norm_len = tf.cast(
        tf.tensor_scatter_nd_update(ascii_len, wide[:, None], wide_len), tf.int64)
    # Input byte length of every character (up to the next one or the end of string).
    row_len = tf.cast(tf.strings.length(strings), tf.int64)
    next_start = tf.concat([char_starts[1:], tf.zeros([1], tf.int64)], 0)[:n_chars]
    # The last character of each non-empty row (an empty first row would index -1).
    last = tf.boolean_mask(char_splits[1:] - 1, char_splits[1:] > char_splits[:-1])
    is_last = tf.scatter_nd(last[:, None], tf.ones_like(last, tf.bool), [n_chars])
    char_ends = tf.where(is_last, tf.gather(row_len, row_ids), next_start)
    # Global cumulative positions in the normalised text, per row then across rows.
    cum = tf.cumsum(norm_len)
    row_base = tf.gather(tf.concat([tf.zeros([1], tf.int64), cum], 0), char_splits[:-1])

    def char_at(norm_pos):
        global_pos = tf.gather(row_base, row_of_piece) + norm_pos
        i = searchsorted(cum, global_pos, "right")
        return tf.clip_by_value(i, 0, tf.maximum(n_chars - 1, 0))

    starts = tf.gather(char_starts, char_at(norm_starts))
    ends = tf.gather(char_ends, char_at(norm_ends - 1))
    return starts, ends
