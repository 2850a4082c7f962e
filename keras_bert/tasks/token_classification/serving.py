"""Token classifier (NER) export: raw text in, one label per WORD out, with its byte offsets.

Words are the whitespace-separated parts of the text (Python's `str.split()`), as in
CoNLL data and `keras-bert predict` for token classifiers. The featurisation is
fine-tuning's (`word_windows.py`): each word is tokenized on its own (a word that yields no
wordpiece is read as `[UNK]`), the text's wordpieces are covered by windows
`[CLS] pieces [SEP]` advancing by `doc_stride`, and a word's label is the prediction at its
FIRST wordpiece (the BERT paper's rule) in the window where that piece has the most
context. Every word of a text of any length gets a label.

`serving_default` (`text`: `[batch]` strings) returns, padded to the most words of the
batch (`num_words` tells each row's count):

| output | dtype, shape | pad |
| --- | --- | --- |
| `tokens` | string `[batch, words]`, the word as written | `""` |
| `labels` | string `[batch, words]`, the label's name | `""` |
| `label_ids` | int32 `[batch, words]` | -1 |
| `scores` | float32 `[batch, words]`, the label's probability | 0.0 |
| `start_offsets`, `end_offsets` | int64 `[batch, words]`, UTF-8 BYTE offsets of the word | -1 |
| `num_words` | int32 `[batch]` | |

`text[start_offsets[i, j]:end_offsets[i, j]]` (on the UTF-8 bytes) is `tokens[i, j]`.
`preprocess` returns the windows' model inputs (one row per window), `window_row` (the
text of each window), and per word (flat over the batch) `word_window` and `word_column`
(where its label is read). `serve_ids` returns per-position `logits`, `label_ids`, `labels`
and `scores` (`token_label_outputs`).
"""

from __future__ import annotations

import numpy as np
import tensorflow as tf

from keras_bert.tasks.serving import ServingModule, float_logits
from keras_bert.tasks.token_classification.word_windows import (
    PAD_ID,
    PAD_LABEL,
    PAD_OFFSET,
    PAD_SCORE,
    split_words,
    tokenize_words,
    word_windows,
)

_INPUTS = ("input_word_ids", "input_mask", "input_type_ids")


def token_label_outputs(label_names: list[str]):
    """Per-position outputs (`serve_ids`): `logits` `[batch, seq, tags]`, `label_ids`,
    `labels` (names) and `scores` (the chosen label's probability), `[batch, seq]`."""
    names = tf.constant(label_names, tf.string)

    def outputs(model_outputs, inputs):
        logits = float_logits(model_outputs)
        label_ids = tf.argmax(logits, axis=-1, output_type=tf.int32)
        return {"logits": logits, "label_ids": label_ids, "labels": tf.gather(names, label_ids),
                "scores": tf.reduce_max(tf.nn.softmax(logits), axis=-1)}
    return outputs


class TokenClassifierServing(ServingModule):
    """`ServingModule` for a `BertTokenClassifier`: word-level labels from raw text (see the
    module docstring for the outputs); `serve_ids` gives per-position labels.

    Args:
      model: the `BertTokenClassifier` (logits `[batch, seq, tags]`).
      preprocessor: its `BertPreprocessor` at the serving length (as for `ServingModule`).
      label_names: the tag names, by label id (the model's `labels.txt`).
      doc_stride: how far the windows over a long text advance (the training setting).
    """

    per_token_outputs = True

    def __init__(self, model, preprocessor, label_names: list[str], doc_stride: int):
        super().__init__(model, preprocessor, token_label_outputs(list(label_names)))
        if doc_stride < 1:
            raise ValueError(f"doc_stride must be positive, got {doc_stride}")
        self.label_names = list(label_names)
        self.doc_stride = int(doc_stride)

    def words(self, text) -> dict:
        """Splits `[batch]` strings into words and packs their windows (host CPU): the
        `word_windows` outputs plus the words' `tokens`, `starts` and `ends` (ragged)."""
        with tf.device("/CPU:0"):
            tokens, starts, ends = split_words(text)
            ids = self.preprocessor.special_token_ids
            windows = word_windows(tokenize_words(self.tokenizer, tokens),
                                   self.preprocessor.seq_length, self.doc_stride, ids["cls"],
                                   ids["sep"], ids["pad"],
                                   max_length=self.preprocessor.max_length)
        return {**windows, "tokens": tokens, "starts": starts, "ends": ends}

    def tag(self, text) -> dict:
        """`serving_default`: word-level labels (see the module docstring)."""
        words = self.words(text)
        inputs = {name: words[name] for name in _INPUTS}
        logits = tf.cast(self.network(inputs), tf.float32)
        with tf.device("/CPU:0"):  # labels and offsets are strings / host data
            first_piece = tf.gather_nd(logits, tf.stack(
                [words["word_window"], words["word_column"]], axis=1))
            label_ids = tf.argmax(first_piece, axis=-1, output_type=tf.int32)
            scores = tf.reduce_max(tf.nn.softmax(first_piece), axis=-1)
            labels = tf.gather(tf.constant(self.label_names, tf.string), label_ids)
            splits = words["word_row_splits"]

            def padded(values, pad):
                return tf.RaggedTensor.from_row_splits(values, splits,
                                                       validate=False).to_tensor(pad)

            offset_pad = tf.constant(PAD_OFFSET, tf.int64)
            return {"tokens": words["tokens"].to_tensor(PAD_LABEL),
                    "labels": padded(labels, PAD_LABEL),
                    "label_ids": padded(label_ids, PAD_ID),
                    "scores": padded(scores, PAD_SCORE),
                    "start_offsets": words["starts"].to_tensor(offset_pad),
                    "end_offsets": words["ends"].to_tensor(offset_pad),
                    "num_words": tf.cast(splits[1:] - splits[:-1], tf.int32)}

    def litert_graph(self):
        """The LiteRT export's graph: words, windows and labels from TFLite ops
        (`litert_tagger.py`)."""
        from keras_bert.tasks.token_classification.litert_tagger import TaggerGraph

        return TaggerGraph(self)

    def text_endpoint(self):
        """`serving_default`: `text` -> word-level labels."""
        return self.tag, [tf.TensorSpec([None], tf.string, name="text")]

    def warmup_inputs(self, texts) -> dict:
        """A warmup request: `texts` as they are."""
        return {"text": np.asarray(texts, dtype=object)}

    def preprocess_endpoint(self):
        """`preprocess`: `text` -> the windows' model inputs and where each word is read."""

        def preprocess(text):
            words = self.words(text)
            return {name: words[name] for name in
                    (*_INPUTS, "window_row", "word_window", "word_column")}
        return preprocess, [tf.TensorSpec([None], tf.string, name="text")]
