"""`BertPacker`: token ids of one or two segments -> `[CLS] A [SEP] B [SEP]` model inputs.

Truncation is BERT's longest-first rule (`truncate_seq_pair` of the original code: drop the
last token of the longer segment, of B on a tie, until the pair fits), computed in closed form
with core TensorFlow ops only, so the packer runs in `tf.data`, `tf.function` and any TF
Serving model server.
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


def _keep_first(rt: tf.RaggedTensor, lengths) -> tf.RaggedTensor:
    positions = tf.ragged.range(tf.cast(rt.row_lengths(), lengths.dtype))
    return tf.ragged.boolean_mask(rt, positions < tf.expand_dims(lengths, 1))


class BertPacker(tf.Module):
    """Packs ragged token ids into the three BERT input tensors.

    Args:
      seq_length: output length (an int, or a scalar int tensor inside a `tf.function`);
        `None` pads each batch to its longest packed row (capped by `max_length`).
      cls_id, sep_id, pad_id: the special token ids (from the tokenizer's vocab).
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

    def truncate(self, segments: list[tf.RaggedTensor]) -> list[tf.RaggedTensor]:
        """Longest-first truncation so the packed row fits `seq_length` (or `max_length`)."""
        budget = self.max_length - (len(segments) + 1)
        lengths = [tf.cast(s.row_lengths(), tf.int32) for s in segments]
        if len(segments) == 1:
            return [_keep_first(segments[0], tf.minimum(lengths[0], budget))]
        if len(segments) == 2:
            new_a, new_b = longest_first_lengths(lengths[0], lengths[1], budget)
            return [_keep_first(segments[0], new_a), _keep_first(segments[1], new_b)]
        raise ValueError(f"BertPacker takes one or two segments, got {len(segments)}")

    def __call__(self, segments) -> dict[str, tf.Tensor]:
        """Packs one or two segments (see the class docstring)."""
        if isinstance(segments, (tf.RaggedTensor, tf.Tensor)):
            segments = [segments]
        segments = [_as_ragged(s) for s in segments]
        segments = self.truncate(segments)
        batch = segments[0].nrows(out_type=tf.int32)
        one = tf.RaggedTensor.from_tensor(tf.ones([batch, 1], tf.int32))
        ids, type_ids = [one * self.cls_id], [one * 0]
        for index, segment in enumerate(segments):
            ids += [segment, one * self.sep_id]
            type_ids += [tf.ones_like(segment) * index, one * index]
        ids = tf.concat(ids, axis=1)
        type_ids = tf.concat(type_ids, axis=1)
        shape = [None, self.seq_length]
        if isinstance(self.seq_length, tf.Tensor):  # a length given at run time
            shape = tf.stack([ids.nrows(), tf.cast(self.seq_length, tf.int64)])
        return {
            "input_word_ids": ids.to_tensor(self.pad_id, shape=shape),
            "input_mask": tf.ones_like(ids).to_tensor(0, shape=shape),
            "input_type_ids": type_ids.to_tensor(0, shape=shape),
        }


def _as_ragged(segment) -> tf.RaggedTensor:
    if not isinstance(segment, tf.RaggedTensor):
        segment = tf.RaggedTensor.from_tensor(tf.convert_to_tensor(segment))
    if segment.ragged_rank != 1 or segment.shape.rank != 2:
        raise ValueError("BertPacker segments must be [batch, (tokens)] ids, got shape "
                         f"{segment.shape}")
    return tf.cast(segment, tf.int32).with_row_splits_dtype(tf.int64)
