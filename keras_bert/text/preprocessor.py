"""`BertPreprocessor`: raw text -> BERT's three input tensors, the one preprocessing object.

A model's preprocessor is built once from its model directory (`ModelDir.preprocessor()`)
and is what every path calls: the fine-tuning `tf.data` pipeline (`dataset.map`),
`keras-bert predict`, the SavedModel export (its `serving_default` and `preprocess`
signatures), the hub pair, the text embedder and the attention pictures. Its settings are
saved in the model directory's manifest (`preprocessor`), its vocabulary beside it.

It is a Keras layer (serializable with `get_config`, tracked by `keras.export.ExportArchive`
with the tokenizer's lookup table inside), working on string tensors in `tf.data`,
`tf.function` and TF Serving: `BertTokenizer` (Google's WordPiece rules) then `BertPacker`
(`[CLS] A [SEP] B [SEP]`, longest-first truncation, padding), on the host CPU.
"""

from __future__ import annotations

import keras
import tensorflow as tf

from keras_bert.config import DEFAULT_SEQ_LENGTH
from keras_bert.text.packer import BertPacker
from keras_bert.text.rules import DEFAULT_RULES
from keras_bert.text.tokenizer import BertTokenizer


@keras.saving.register_keras_serializable(package="keras_bert")
class BertPreprocessor(keras.layers.Layer):
    """Tokenizes and packs one or two segments of text.

    Args:
      tokenizer: the model's `BertTokenizer`.
      seq_length: a fixed output length (training; TPU/XLA serving), or `None` to pad each
        batch to its longest packed row, truncated at `max_length`.
      max_length: the truncation length when `seq_length` is None (default 512).

    Call with `x` = `[batch]` strings, a `(text, text_b)` tuple of them, or a dict with
    `text` (and `text_b`), plus optional `y` / `sample_weight` passed through, so that
    `dataset.map(preprocessor)` turns `(text, label)` batches into `(features, label)`.
    Features: int32 `input_word_ids`, `input_mask`, `input_type_ids` `[batch, length]`.
    """

    def __init__(self, tokenizer: BertTokenizer, seq_length: int | None = DEFAULT_SEQ_LENGTH,
                 max_length: int | None = None, **kwargs):
        super().__init__(**kwargs)
        # Strings and ragged tensors go through as they are.
        self._convert_input_args = False
        self._allow_non_tensor_positional_args = True
        if seq_length is not None and int(seq_length) < 3:
            raise ValueError(f"seq_length must be at least 3 ([CLS] x [SEP]), got {seq_length}")
        self.tokenizer = tokenizer
        self.seq_length = None if seq_length is None else int(seq_length)
        self.max_length = int(max_length or self.seq_length or 512)
        self.packer = BertPacker.for_tokenizer(tokenizer, self.seq_length, self.max_length)
        self.built = True  # no weights: nothing to build (ExportArchive tracks built layers)

    @property
    def special_token_ids(self) -> dict[str, int]:
        """The tokenizer's special token ids (`cls`, `sep`, `pad`, `mask`, `unk`)."""
        return self.tokenizer.special_token_ids

    def with_length(self, seq_length: int | None, max_length: int | None = None
                    ) -> BertPreprocessor:
        """The same preprocessing (the same tokenizer object) at another length."""
        return BertPreprocessor(self.tokenizer, seq_length,
                                max_length or seq_length or self.max_length, name=self.name)

    def tokenize(self, text) -> tf.RaggedTensor:
        """`[batch]` strings -> int32 wordpiece ids `[batch, (pieces)]` (host CPU)."""
        with tf.device("/CPU:0"):
            return self.tokenizer.tokenize(text)

    def pack(self, segments) -> dict[str, tf.Tensor]:
        """One or two ragged id segments -> the three input tensors (see `BertPacker`)."""
        with tf.device("/CPU:0"):
            return self.packer(segments)

    def call(self, x, y=None, sample_weight=None):
        """Strings -> features (`(features, y[, sample_weight])` when `y` is given)."""
        features = self.pack([self.tokenize(text) for text in text_segments(x)])
        return keras.utils.pack_x_y_sample_weight(features, y, sample_weight)

    def get_config(self) -> dict:
        """The vocabulary, casing, tokenizer rules and lengths (the model directory stores
        the vocabulary in `vocab.txt` and the rest in its manifest)."""
        config = super().get_config()
        config.update({"vocabulary": self.tokenizer.vocab, **tokenizer_options(self.tokenizer),
                       "seq_length": self.seq_length, "max_length": self.max_length})
        return config

    @classmethod
    def from_config(cls, config):
        """Rebuilds the preprocessor (and its tokenizer) from `get_config` output."""
        config = dict(config)
        tokenizer = BertTokenizer(config.pop("vocabulary"),
                                  lower_case=config.pop("lower_case", True),
                                  rules=config.pop("rules", DEFAULT_RULES),
                                  preserve_special_tokens=config.pop(
                                      "preserve_special_tokens", False))
        return cls(tokenizer, **config)


def tokenizer_options(tokenizer: BertTokenizer) -> dict:
    """The tokenizer settings a preprocessor's config records beside the vocabulary."""
    return {"lower_case": tokenizer.lower_case, "rules": tokenizer.rules,
            "preserve_special_tokens": tokenizer.preserve_special_tokens}


def text_segments(x) -> list:
    """The text segments of a preprocessor input: a batch of strings (tensor, array or
    list), a `(text, text_b)` tuple of batches, or a dict with `text` (and `text_b`)."""
    if isinstance(x, dict):
        unknown = sorted(set(x) - {"text", "text_b"})
        if "text" not in x or unknown:
            raise ValueError("a preprocessor input dict holds 'text' and optionally 'text_b', "
                             f"got keys {sorted(x)}")
        return [x["text"]] + ([x["text_b"]] if x.get("text_b") is not None else [])
    if isinstance(x, tuple):
        if len(x) not in (1, 2):
            raise ValueError(f"a preprocessor takes one or two text segments, got {len(x)}")
        return list(x)
    return [x]
