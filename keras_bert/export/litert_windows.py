"""`WindowedGraph`: the LiteRT graph of a sentence-level model that reads long texts in
windows (`LongTextReading(mode="windows")`), as its SavedModel reads them
(`keras_bert.text.sentence_windows`): `text` cut into windows of what the length leaves
beside `[CLS]`, the `[SEP]`s and `text_b` (which every window holds whole, unless it
fills a row alone: then BERT's longest-first share of it), starts `min(room, doc_stride)`
apart, at most `max_windows` per text; every window of the batch through the network as
one batch; the windows' outputs aggregated per text (`mean`, `max`, `first`, or the
embedder's mean weighted by the pieces of `text` each window read) before the kind's
outputs. With `num_tokens`, `num_windows` and `truncated`, as the SavedModel says them.

The SavedModel refuses a request needing more than `MAX_REQUEST_WINDOWS` windows (a
server's memory); LiteRT has no assertion op, and the file reads them all.
"""

from __future__ import annotations

import tensorflow as tf

from keras_bert.export.litert_graph import LiteRTGraph
from keras_bert.export.litert_text import pack, windows
from keras_bert.text.packer import longest_first_lengths
from keras_bert.text.sentence_windows import TOKEN_MEAN


class WindowedGraph(LiteRTGraph):
    """`serving_default` and `preprocess` of a windowed `SentenceServing`
    `module` (single texts, or with `pair` sentence pairs); `serve_ids` is `LiteRTGraph`'s
    (one row each, no aggregation)."""

    def __init__(self, module, pair: bool = False):
        super().__init__(module, pair=pair)
        self.aggregate = module.aggregate
        self.doc_stride = module.reading.stride(self.max_length)
        self.max_windows = int(module.reading.max_windows)

    def serving_default(self, *texts):
        """`[batch]` strings -> the kind's outputs, its windows' aggregated, and
        `num_tokens`, `num_windows`, `truncated`."""
        read = self._windows(*texts)
        outputs = tf.nest.map_structure(lambda v: self._aggregate(v, read),
                                        self.network(read["inputs"]))
        return {**self.outputs_fn(outputs, None), "num_tokens": read["num_tokens"],
                "num_windows": read["count"], "truncated": read["truncated"]}

    def preprocess(self, *texts):
        """`[batch]` strings -> the windows' model inputs and `text_index` (the text each
        window belongs to), as the SavedModel's `preprocess`."""
        read = self._windows(*texts)
        return {**read["inputs"], "text_index": read["example"]}

    def _windows(self, text, text_b=None) -> dict:
        """The windows of each text (see the module docstring), packed."""
        pieces = [self.tokenizer.tokenize(t) for t in ([text] if text_b is None
                                                       else [text, text_b])]
        splits = [tf.cast(p.row_splits, tf.int32) for p in pieces]
        lengths = [s[1:] - s[:-1] for s in splits]
        n = lengths[0]
        budget = self.max_length - (len(pieces) + 1)
        if text_b is None:
            keep_b, room = None, tf.fill(tf.shape(n), budget)
        else:
            cut_b = longest_first_lengths(n, lengths[1], budget)[1]
            keep_b = tf.where(lengths[1] < budget, lengths[1], cut_b)
            room = tf.maximum(budget - keep_b, 1)
        read = windows(n, room, self.doc_stride)
        count = tf.minimum(read.count, self.max_windows)
        kept = tf.where(read.index < tf.gather(count, read.example))[:, 0]
        example, start, length = (tf.gather(t, kept) for t in (read.example, read.start,
                                                               read.length))
        segments = [(pieces[0].values, tf.gather(splits[0], example) + start, length)]
        b_cut = tf.zeros_like(n, tf.bool)
        if keep_b is not None:
            segments.append((pieces[1].values, tf.gather(splits[1], example),
                             tf.gather(keep_b, example)))
            b_cut = keep_b < lengths[1]
        last = tf.gather(read.start, read.first + count - 1)
        read_to = last + tf.minimum(n - last, room)
        return {"inputs": pack(segments, self.cls_id, self.sep_id, self.pad_id),
                "example": example, "length": length, "count": count,
                "num_tokens": tf.add_n(lengths), "truncated": (read_to < n) | b_cut}

    def _aggregate(self, values, read: dict):
        """Per-text values of the windows' `values` (`aggregate_windows`' rules)."""
        example, texts = read["example"], tf.size(read["count"])
        if self.aggregate == "first":
            return tf.gather(values, tf.cumsum(read["count"], exclusive=True))
        if self.aggregate == "max":
            return tf.math.unsorted_segment_max(values, example, texts)
        weights = (tf.maximum(read["length"], 1) if self.aggregate == TOKEN_MEAN
                   else tf.ones_like(example))
        weights = tf.reshape(tf.cast(weights, values.dtype), [-1] + [1] * (values.shape.rank - 1))
        total = tf.math.unsorted_segment_sum(values * weights, example, texts)
        return total / tf.maximum(tf.math.unsorted_segment_sum(weights, example, texts),
                                  1e-12)
