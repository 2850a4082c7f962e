"""Tagger (NER) export: raw text in, one label per WORD out, with the word's byte offsets.

Words are the whitespace-separated parts of the text (Python's `str.split()`), as in
CoNLL data and `keras-bert predict` for taggers. Each word is tokenized on its own; its
FIRST wordpiece's prediction is the word's label (the BERT paper's rule, the one the tagger
was trained with: `keras_bert.tasks.align_sentences`). A word that yields no wordpiece
(only control or zero-width characters) is read as `[UNK]`. Words that do not fit in the
sequence length (whole words are dropped from the end) get no label.

`serving_default` (`text`: `[batch]` strings) returns, padded to the most words of the
batch (`num_words` tells each row's count):

| output | dtype, shape | pad / no label |
| --- | --- | --- |
| `tokens` | string `[batch, words]`, the word as written | `""` |
| `labels` | string `[batch, words]`, the label's name | `""` |
| `label_ids` | int32 `[batch, words]` | -1 |
| `scores` | float32 `[batch, words]`, the label's probability | 0.0 |
| `start_offsets`, `end_offsets` | int64 `[batch, words]`, UTF-8 BYTE offsets of the word in the text | -1 |
| `num_words` | int32 `[batch]` | |

`text[start_offsets[i, j]:end_offsets[i, j]]` (on the UTF-8 bytes) is `tokens[i, j]`.
`serve_ids` returns per-position `logits`, `label_ids`, `labels` and `scores`
(`keras_bert.export.task_outputs.token_label_outputs`).
"""

from __future__ import annotations

import tensorflow as tf
from tensorflow_text.python.ops.regex_split_ops import gen_regex_split_ops

from keras_bert.export.serving_module import ServingModule
from keras_bert.export.task_outputs import token_label_outputs

# What Python's str.split() splits on (str.isspace), in RE2 syntax.
WORD_SEPARATORS = r"[\t\n\x{0b}\f\r\x{1c}-\x{1f} \x{85}\p{Z}]+"
PAD_LABEL, PAD_ID, PAD_SCORE, PAD_OFFSET = "", -1, 0.0, -1


class TaggerServingModule(ServingModule):
    """`ServingModule` for a `BertTagger`: word-level labels from raw text (see the module
    docstring for the outputs).

    Args:
      model: the `BertTagger` (logits `[batch, seq, tags]`).
      preprocessor: its `BertPreprocessor` at the serving length (as for `ServingModule`).
      label_names: the tag names, by label id (the tagger's `labels.txt`).
    """

    def __init__(self, model, preprocessor, label_names: list[str]):
        super().__init__(model, preprocessor, token_label_outputs(list(label_names)))
        self.label_names = list(label_names)

    def words(self, text) -> dict:
        """Splits `[batch]` strings into words and packs their wordpieces (host CPU).

        Returns the packed model inputs plus, per word (flat over the batch): `tokens`,
        `starts`, `ends`, `row` (its text), `kept` and `position` (of its first wordpiece),
        and `row_splits` (words of text i are `row_splits[i]:row_splits[i + 1]`).
        """
        with tf.device("/CPU:0"):
            tokens, starts, ends, row_splits = gen_regex_split_ops.regex_split_with_offsets(
                text, f"({WORD_SEPARATORS})", "")
            pieces = self.tokenizer.tokenize(tokens)
            lengths = tf.maximum(pieces.row_lengths(), 1)  # an empty word becomes [UNK]
            dense = tf.pad(pieces.to_tensor(self.tokenizer.unk_id), [[0, 0], [0, 1]],
                           constant_values=self.tokenizer.unk_id)
            pieces = tf.RaggedTensor.from_tensor(dense, lengths=lengths)
            num_words = tf.size(tokens, out_type=tf.int64)
            word_index = tf.range(num_words)
            row = tf.searchsorted(row_splits, word_index, side="right", out_type=tf.int64) - 1
            # Wordpieces before and up to each word, counted within its text.
            total = tf.cumsum(lengths)
            before_row = tf.gather(tf.concat([[0], total], 0), row_splits[:-1])
            through = total - tf.gather(before_row, row)
            budget = self.packer.max_length - 2
            # Whole words while they fit; a first word too long for the budget is cut.
            kept = (through <= budget) | tf.equal(word_index, tf.gather(row_splits, row))
            piece_kept = tf.gather(kept, pieces.value_rowids())
            per_text = tf.math.unsorted_segment_sum(
                tf.where(kept, lengths, 0), row, tf.size(row_splits, out_type=tf.int64) - 1)
            segment = tf.RaggedTensor.from_row_lengths(
                tf.boolean_mask(pieces.values, piece_kept), per_text)
            packed = self.packer([segment])
        return {"inputs": packed, "tokens": tokens, "starts": starts, "ends": ends,
                "row": row, "kept": kept, "position": 1 + through - lengths,
                "row_splits": row_splits}

    def tag(self, text) -> dict:
        """`serving_default`: word-level labels (see the module docstring)."""
        words = self.words(text)
        logits = tf.cast(self.model(words["inputs"], training=False), tf.float32)
        with tf.device("/CPU:0"):  # labels and offsets are strings / host data
            kept = words["kept"]
            first_piece = tf.gather_nd(logits, tf.stack(
                [words["row"], tf.where(kept, words["position"], 0)], axis=1))
            label_ids = tf.where(kept, tf.argmax(first_piece, axis=-1, output_type=tf.int32),
                                 PAD_ID)
            scores = tf.where(kept, tf.reduce_max(tf.nn.softmax(first_piece), axis=-1),
                              PAD_SCORE)
            labels = tf.where(kept, tf.gather(tf.constant(self.label_names, tf.string),
                                              tf.maximum(label_ids, 0)), PAD_LABEL)

            offset_pad = tf.constant(PAD_OFFSET, tf.int64)

            def padded(values, pad):
                return tf.RaggedTensor.from_row_splits(values, words["row_splits"],
                                                       validate=False).to_tensor(pad)

            return {"tokens": padded(words["tokens"], PAD_LABEL),
                    "labels": padded(labels, PAD_LABEL),
                    "label_ids": padded(label_ids, PAD_ID),
                    "scores": padded(scores, PAD_SCORE),
                    "start_offsets": padded(words["starts"], offset_pad),
                    "end_offsets": padded(words["ends"], offset_pad),
                    "num_words": tf.cast(words["row_splits"][1:] - words["row_splits"][:-1],
                                         tf.int32)}

    def text_endpoint(self):
        """`serving_default`: `text` -> word-level labels."""
        return self.tag, [tf.TensorSpec([None], tf.string, name="text")]

    def preprocess_endpoint(self):
        """`preprocess`: `text` -> the model inputs of its words."""

        def preprocess(text):
            return self.words(text)["inputs"]
        return preprocess, [tf.TensorSpec([None], tf.string, name="text")]
