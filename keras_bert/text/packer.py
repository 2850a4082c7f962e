"""`BertPacker`: token ids of one or two segments -> `[CLS] A [SEP] B [SEP]` model inputs.

Truncation is BERT's longest-first rule (`truncate_seq_pair` of the original code: drop the
last token of the longer segment, of B on a tie, until the pair fits), computed in closed form,
and so is the layout (one gather per segment, no ragged concatenation): core TensorFlow ops
only, so the packer runs in `tf.data`, `tf.function` and any TF Serving model server.
"""

from __future__ import annotations

import tensorflow as tf


def longest_first_lengths(len_a, len_b, budget):
    """Per-row lengths `(a, b)` kept by BERT's longest-first truncation to `budget` tokens."""
    total = len_a + len_b
    ceil_half = (budget + 1) // 2
    a_when_cut = tf.where(
        len_a <= len_b,
        tf.where(2 * len_a <= budget, len_a, ceil_half),
        tf.where(2 * len_b <= budget, budget - len_b, ceil_half))
    fits = total <= budget
    new_a = tf.where(fits, len_a, a_when_cut)
    new_b = tf.where(fits, len_b, budget - a_when_cut)
    return new_a, new_b


def keep_first(rt: tf.RaggedTensor, lengths) -> tf.RaggedTensor:
    """The first `lengths[i]` values of each row of a 2-D ragged tensor."""
    positions = tf.ragged.range(tf.cast(rt.row_lengths(), lengths.dtype))
    return tf.ragged.boolean_mask(rt, positions < tf.expand_dims(lengths, 1))


class BertPacker(tf.Module):
    """Packs ragged token ids into the three BERT input tensors.

    Args:
      seq_length: output length (an int, or a scalar int tensor inside a `tf.function`);
        `None` pads each batch to its longest packed row (capped by `max_length`).
      cls_id: the `[CLS]` id (the special token ids come from the tokenizer's vocab).
      sep_id: the `[SEP]` id.
      pad_id: the `[PAD]` id.
      max_length: the longest packed sequence when `seq_length` is None (the model's
        `max_position_embeddings`).

    Call with a list of one or two `tf.RaggedTensor` of ids `[batch, (tokens)]`; returns a
    dict of int32 `[batch, seq_length]`: `input_word_ids`, `input_mask`, `input_type_ids`.
    """

    def __init__(self, seq_length, cls_id: int, sep_id: int, pad_id: int = 0,
                 max_length: int = 512, name: str | None = None):
        super().__init__(name=name)
        if isinstance(seq_length, int) and seq_length < 3:
            raise ValueError(f"seq_length must be at least 3 ([CLS] x [SEP]), got {seq_length}")
        self.seq_length = seq_length  # an int, None, or a scalar int32 tensor
        self.max_length = seq_length if seq_length is not None else max_length
        self.cls_id, self.sep_id, self.pad_id = int(cls_id), int(sep_id), int(pad_id)

    @classmethod
    def for_tokenizer(cls, tokenizer, seq_length, max_length: int = 512) -> BertPacker:
        """The packer of `tokenizer`'s special tokens (`seq_length`, `max_length` as above)."""
        ids = tokenizer.special_token_ids
        return cls(seq_length, ids["cls"], ids["sep"], ids["pad"], max_length=max_length)

    def _kept_lengths(self, segments: list[tf.RaggedTensor]) -> list[tf.Tensor]:
        """Row lengths (int32) each segment keeps after longest-first truncation."""
        budget = self.max_length - (len(segments) + 1)
        lengths = [tf.cast(s.row_lengths(), tf.int32) for s in segments]
        if len(segments) == 1:
            return [tf.minimum(lengths[0], budget)]
        if len(segments) == 2:
            return list(longest_first_lengths(lengths[0], lengths[1], budget))
        raise ValueError(f"BertPacker takes one or two segments, got {len(segments)}")

    def truncate(self, segments: list[tf.RaggedTensor]) -> list[tf.RaggedTensor]:
        """Longest-first truncation so the packed row fits `seq_length` (or `max_length`)."""
        segments = [_as_ragged(s) for s in segments]
        kept = self._kept_lengths(segments)
        return [keep_first(s, n) for s, n in zip(segments, kept, strict=True)]

    def __call__(self, segments) -> dict[str, tf.Tensor]:
        """Packs one or two segments (see the class docstring)."""
        if isinstance(segments, (tf.RaggedTensor, tf.Tensor)):
            segments = [segments]
        segments = [_as_ragged(s) for s in segments]
        kept = self._kept_lengths(segments)
        # Dense layout in closed form (a few element-wise ops and one gather per segment,
        # no ragged concatenation): position p of a row is [CLS] at 0, then for each
        # segment its kept tokens followed by [SEP]; padding after the last [SEP].
        total = 1 + sum(n + 1 for n in kept)  # [batch]
        if self.seq_length is None:
            width = tf.reduce_max(tf.concat([total, [0]], 0))
        else:
            width = self.seq_length
        positions = tf.range(width, dtype=tf.int32)[None, :]
        ids = tf.fill(tf.shape(positions + total[:, None]), self.pad_id)
        type_ids = tf.zeros_like(ids)
        start = tf.ones_like(total)[:, None]  # first position of the current segment
        for index, (segment, n) in enumerate(zip(segments, kept, strict=True)):
            offset = positions - start
            inside = tf.logical_and(offset >= 0, offset < n[:, None])
            source = segment.row_splits[:-1, None] + tf.cast(offset, tf.int64)
            values = tf.concat([segment.values, tf.zeros([1], tf.int32)], 0)  # never empty
            ids = tf.where(inside, tf.gather(values, tf.where(inside, source, 0)), ids)
            is_sep = tf.equal(offset, n[:, None])
            ids = tf.where(is_sep, self.sep_id, ids)
            if index:
                type_ids = tf.where(tf.logical_or(inside, is_sep), index, type_ids)
            start += n[:, None] + 1
        ids = tf.where(tf.equal(positions, 0), self.cls_id, ids)
        return {
            "input_word_ids": ids,
            "input_mask": tf.cast(positions < total[:, None], tf.int32),
            "input_type_ids": type_ids,
        }


def _as_ragged(segment) -> tf.RaggedTensor:
    if not isinstance(segment, tf.RaggedTensor):
        segment = tf.RaggedTensor.from_tensor(tf.convert_to_tensor(segment))
    if segment.ragged_rank != 1 or segment.shape.rank != 2:
        raise ValueError("BertPacker segments must be [batch, (tokens)] ids, got shape "
                         f"{segment.shape}")
    return tf.cast(segment, tf.int32).with_row_splits_dtype(tf.int64)
