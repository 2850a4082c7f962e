"""The token classifier's LiteRT graph: `text` in, one label per word out, as the
SavedModel's `serving_default` answers (`serving.py`: the same outputs, pads and dtypes).

The steps are `serving.py`'s and `word_windows.py`'s, rebuilt from the ops a LiteRT
interpreter with TF Text's kernels runs (`keras_bert.export.litert_text`): words as
`str.split()` finds them, with their byte offsets; each word tokenized on its own (a word
without a piece read as `[UNK]`); the text's pieces covered by windows `[CLS] pieces [SEP]`
advancing by `doc_stride`, all the batch's windows through the network as one batch; a
word's label read at its first piece in the window where that piece has the most context.
Every word of a text of any length gets a label. The tokenizer is the file's
(`FastBertTokenizer`'s rules: docs/litert.md).
"""

from __future__ import annotations

import tensorflow as tf

from keras_bert.export.litert_graph import LiteRTGraph
from keras_bert.export.litert_text import (
    ContextRanks,
    cut,
    pack,
    padded,
    padding_index,
    row_ids,
    split_words,
    windows,
)
from keras_bert.tasks.serving import float_logits
from keras_bert.tasks.token_classification.word_windows import PAD_ID, PAD_OFFSET, PAD_SCORE


class TaggerGraph(LiteRTGraph):
    """`serving_default` and `preprocess` of a `TokenClassifierServing` `module` for LiteRT;
    `serve_ids` is `LiteRTGraph`'s (per-position labels)."""

    def __init__(self, module):
        super().__init__(module)
        self.label_names = list(module.label_names)
        self.doc_stride = int(module.doc_stride)
        self.room = self.max_length - 2  # word pieces per window
        self.ranks = ContextRanks(self.room)

    def serving_default(self, text):
        """`[batch]` strings -> `tokens`, `labels`, `label_ids`, `scores`,
        `start_offsets`, `end_offsets` `[batch, words]` and `num_words`."""
        words = self._words(text)
        logits = float_logits(self.network(words["inputs"]))
        first_piece = tf.gather_nd(logits, tf.stack([words["word_window"],
                                                     words["word_column"]], axis=1))
        label_ids = tf.argmax(first_piece, axis=-1, output_type=tf.int32)
        scores = tf.reduce_max(tf.nn.softmax(first_piece), axis=-1)
        splits = words["word_splits"]
        index = padding_index(splits)
        # Pads: the SavedModel's; a label past the names is "" (no select over strings).
        ids = padded(label_ids, index, len(self.label_names))
        names = tf.constant([*self.label_names, ""], tf.string)
        starts, ends = (padded(words[k], index, PAD_OFFSET) for k in ("starts", "ends"))
        return {"tokens": cut(text, tf.maximum(starts, 0), tf.maximum(ends, 0)),
                "labels": tf.gather(names, ids),
                "label_ids": tf.where(ids < len(self.label_names), ids, PAD_ID),
                "scores": padded(scores, index, PAD_SCORE),
                "start_offsets": tf.cast(starts, tf.int64),
                "end_offsets": tf.cast(ends, tf.int64),
                "num_words": splits[1:] - splits[:-1]}

    def preprocess(self, text):
        """`[batch]` strings -> the windows' model inputs, `window_row` and, per word,
        `word_window` and `word_column` (as the SavedModel's `preprocess`)."""
        words = self._words(text)
        return {**words["inputs"], **{k: tf.cast(words[k], tf.int64) for k in
                                      ("window_row", "word_window", "word_column")}}

    def _words(self, text) -> dict:
        """The words of `text`, their pieces' windows packed, and where each word is read."""
        words, word_splits, starts, ends = split_words(text)
        ids, piece_splits = self._pieces(words)
        text_splits = tf.gather(piece_splits, word_splits)  # each text's first piece
        num_pieces = text_splits[1:] - text_splits[:-1]
        room = tf.fill(tf.shape(num_pieces), self.room)
        read = windows(num_pieces, room, self.doc_stride)
        inputs = pack([(ids, tf.gather(text_splits, read.example) + read.start, read.length)],
                      self.cls_id, self.sep_id, self.pad_id)
        # Each word's first piece: its position in its text, its window and column there.
        word_text = row_ids(word_splits[1:] - word_splits[:-1])
        position = piece_splits[:-1] - tf.gather(text_splits, word_text)
        step = min(self.room, self.doc_stride)
        best = self.ranks.best_window(position, step, tf.gather(num_pieces, word_text),
                                      self.room, tf.gather(read.count, word_text))
        return {"inputs": inputs, "window_row": read.example, "word_splits": word_splits,
                "word_window": tf.gather(read.first, word_text) + best,
                "word_column": 1 + position - best * step, "starts": starts, "ends": ends}

    def _pieces(self, words) -> tuple[tf.Tensor, tf.Tensor]:
        """Words `[words]` -> their piece ids flat and int32 splits `[words + 1]`, each word
        at least one piece (`[UNK]` for a word the tokenizer drops entirely)."""
        pieces = self.tokenizer.tokenize(words)
        splits = tf.cast(pieces.row_splits, tf.int32)
        found = splits[1:] - splits[:-1]
        lengths = tf.maximum(found, 1)
        word = row_ids(lengths)
        new_splits = tf.concat([[0], tf.cumsum(lengths)], 0)
        k = tf.range(tf.size(word)) - tf.gather(new_splits, word)
        values = tf.concat([pieces.values, [self.tokenizer.unk_id]], 0)
        source = tf.where(k < tf.gather(found, word), tf.gather(splits, word) + k,
                          tf.size(pieces.values))
        return tf.gather(values, source), new_splits
