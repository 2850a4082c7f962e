"""Words -> packed windows `[CLS] pieces [SEP]`, in TensorFlow: token classification's
featurisation, written once for fine-tuning, the export and `keras-bert predict`.

Words are what Python's `str.split()` gives (`split_words`; CoNLL data is split the same
way). Each word is tokenized on its own; a word that yields no wordpiece (only control or
zero-width characters) is read as one `[UNK]`, so every word keeps a prediction
(`tokenize_words`). A text's wordpieces are covered by windows of at most `length - 2`
pieces whose starts advance by `doc_stride` (`keras_bert.text.doc_windows`, the rule span
QA uses); a text that fits is one window. The FIRST wordpiece of a word carries its label
(the BERT paper's NER rule), every other column `IGNORE_LABEL`; a word's prediction is read
at its first wordpiece in the window where that piece has the most context.
"""

from __future__ import annotations

import tensorflow as tf
from tensorflow_text.python.ops.regex_split_ops import gen_regex_split_ops

from keras_bert.text.doc_windows import doc_windows, max_context_window
from keras_bert.text.packer import BertPacker

# Label of positions that must not count in the loss: wordpieces after a word's first,
# [CLS], [SEP], padding. Train with
# `keras.losses.SparseCategoricalCrossentropy(from_logits=True, ignore_class=IGNORE_LABEL)`
# (the value PyTorch/Hugging Face use as well).
IGNORE_LABEL = -100
# The pads of the word-level outputs past a text's words (`serving.py`, `litert_tagger.py`).
PAD_LABEL, PAD_ID, PAD_SCORE, PAD_OFFSET = "", -1, 0.0, -1
# What Python's str.split() splits on (str.isspace), in RE2 syntax.
WORD_SEPARATORS = r"[\t\n\x{0b}\f\r\x{1c}-\x{1f} \x{85}\p{Z}]+"


def split_words(text) -> tuple[tf.RaggedTensor, tf.RaggedTensor, tf.RaggedTensor]:
    """`[batch]` strings -> `(words, starts, ends)`, RaggedTensors `[batch, (words)]`: the
    words as `str.split()` finds them and their int64 UTF-8 byte offsets in the text."""
    # RegexSplitWithOffsets stops reading at a NUL byte: split a copy whose NULs are
    # another one-byte non-space character, then cut the words from the text itself.
    text = tf.convert_to_tensor(text, tf.string)
    safe = tf.strings.regex_replace(text, r"\x00", "\x01")
    _, starts, ends, splits = gen_regex_split_ops.regex_split_with_offsets(
        safe, f"({WORD_SEPARATORS})", "")
    row = tf.RaggedTensor.from_row_splits(starts, splits, validate=False).value_rowids()
    words = tf.strings.substr(tf.gather(text, row), starts, ends - starts, unit="BYTE")
    return tuple(tf.RaggedTensor.from_row_splits(v, splits, validate=False)
                 for v in (words, starts, ends))


def tokenize_words(tokenizer, words: tf.RaggedTensor) -> tf.RaggedTensor:
    """Words `[batch, (words)]` -> int32 wordpiece ids `[batch, (words), (pieces)]`, each
    word at least one piece (`[UNK]` for a word the tokenizer drops entirely)."""
    words = words.with_row_splits_dtype(tf.int64)
    pieces = tokenizer.tokenize(words.flat_values)
    lengths = tf.maximum(pieces.row_lengths(), 1)
    unk = tokenizer.unk_id
    dense = tf.pad(pieces.to_tensor(unk), [[0, 0], [0, 1]], constant_values=unk)
    pieces = tf.RaggedTensor.from_tensor(dense, lengths=lengths).with_row_splits_dtype(tf.int64)
    return tf.RaggedTensor.from_row_splits(pieces, words.row_splits, validate=False)


def word_windows(word_pieces: tf.RaggedTensor, seq_length, doc_stride: int, cls_id: int,
                 sep_id: int, pad_id: int, word_labels=None, max_length: int | None = None
                 ) -> dict[str, tf.Tensor]:
    """The packed windows over each row's words.

    Args:
      word_pieces: int32 `[batch, (words), (pieces)]` (from `tokenize_words`).
      seq_length: the packed length, or None to pad to the batch's longest window of at
        most `max_length`.
      doc_stride: how far window starts advance, in wordpieces.
      cls_id, sep_id, pad_id: the special token ids.
      word_labels: optional int32 `[batch, (words)]` label ids.

    Returns int32 `input_word_ids`, `input_mask`, `input_type_ids` `[windows, width]` (and
    `labels`, the word labels at first wordpieces, `IGNORE_LABEL` elsewhere, with
    `word_labels`); int64 `window_row` `[windows]` (each window's row); per word, flat over
    the batch in row order, int64 `word_window` (its max-context window) and `word_column`
    (its first wordpiece's column there); int64 `word_row_splits` `[batch + 1]`.
    """
    length = seq_length or max_length
    if length is None or int(length) < 3:
        raise ValueError(f"windows need a length of at least 3 ([CLS] x [SEP]), got {length}")
    if doc_stride < 1:
        raise ValueError(f"doc_stride must be positive, got {doc_stride}")
    word_pieces = word_pieces.with_row_splits_dtype(tf.int64)
    rows = word_pieces.merge_dims(1, 2)  # [batch, (pieces)]
    num_pieces = rows.row_lengths()
    room = tf.fill(tf.shape(num_pieces), tf.cast(int(length) - 2, tf.int64))
    windows = doc_windows(num_pieces, room, doc_stride)
    first = tf.gather(rows.row_splits[:-1], windows.example) + windows.start  # in rows.values
    window_pieces = tf.ragged.range(first, first + windows.length)
    packed = BertPacker(seq_length, cls_id, sep_id, pad_id, max_length=int(length))(
        [tf.gather(rows.values, window_pieces)])

    # Each word's first piece: its position in its row, its max-context window and column.
    word_row = word_pieces.value_rowids()
    position = word_pieces.values.row_splits[:-1] - tf.gather(rows.row_splits, word_row)
    row_step = tf.minimum(room, doc_stride)  # as `doc_windows` steps
    best = max_context_window(position, tf.gather(row_step, word_row),
                              tf.gather(num_pieces, word_row), tf.gather(room, word_row),
                              tf.gather(windows.count, word_row))
    row_first_window = tf.cumsum(windows.count, exclusive=True)
    result = {**packed, "window_row": windows.example,
              "word_window": tf.gather(row_first_window, word_row) + best,
              "word_column": 1 + position - best * tf.gather(row_step, word_row),
              "word_row_splits": word_pieces.row_splits}
    if word_labels is not None:
        result["labels"] = _window_labels(word_pieces, word_labels, window_pieces,
                                          tf.shape(packed["input_word_ids"])[1])
    return result


def _window_labels(word_pieces, word_labels, window_pieces, width) -> tf.Tensor:
    """int32 `[windows, width]`: each word's label at its first wordpiece's column."""
    word_labels = tf.cast(word_labels.with_row_splits_dtype(tf.int64).flat_values, tf.int32)
    first_piece = word_pieces.values.row_splits[:-1]
    total = tf.size(word_pieces.flat_values, out_type=tf.int64)
    piece_labels = tf.tensor_scatter_nd_update(
        tf.fill([total], tf.constant(IGNORE_LABEL, tf.int32)), first_piece[:, None],
        word_labels)
    labels = tf.gather(piece_labels, window_pieces)  # [windows, (pieces)]
    windows = tf.shape(labels.row_splits, out_type=tf.int64)[0] - 1
    body = labels.to_tensor(IGNORE_LABEL, shape=[windows, tf.cast(width, tf.int64) - 1])
    cls = tf.fill([windows, 1], tf.constant(IGNORE_LABEL, tf.int32))
    return tf.concat([cls, body], axis=1)
