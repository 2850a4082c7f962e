"""A TF Hub-style pair of SavedModels for the encoder alone: preprocess + encoder.

    preprocess/   serving_default: text [batch] -> input_word_ids, input_mask,
                  input_type_ids [batch, 128]
                  .tokenize(text) -> RaggedTensor of ids [batch, (tokens)]
                  .bert_pack_inputs(segments, seq_length) -> the three id tensors
    encoder/      serving_default: the three id tensors -> pooled_output, sequence_output,
                  default; calling the object also gives encoder_outputs (every layer);
                  .mlm(inputs with masked_lm_positions) -> mlm_logits, when exported from a
                  BertPretrainer

Used like TF Hub's BERT models: `preprocess = tf.saved_model.load(p)`,
`encoder = tf.saved_model.load(e)`, `encoder(preprocess(text))["pooled_output"]`.
Unlike TF Hub's, `.tokenize` returns wordpiece ids per text (not per word).
"""

from __future__ import annotations

import os

import tensorflow as tf

from keras_bert.models.encoder import INPUT_NAMES
from keras_bert.text.packer import BertPacker

_RAGGED_IDS = tf.RaggedTensorSpec([None, None], tf.int32, ragged_rank=1,
                                  row_splits_dtype=tf.int64)


class BertPreprocess(tf.Module):
    """Tokenizer + packer as a TF Hub-style preprocessing module."""

    def __init__(self, tokenizer, default_seq_length: int = 128):
        super().__init__(name="bert_preprocess")
        self.tokenizer = tokenizer
        self.default_seq_length = default_seq_length
        self._special = tokenizer.special_token_ids

    @tf.function(input_signature=[tf.TensorSpec([None], tf.string)])
    def tokenize(self, text):
        """`[batch]` strings -> RaggedTensor of wordpiece ids `[batch, (tokens)]`."""
        return self.tokenizer.tokenize(text).with_row_splits_dtype(tf.int64)

    def _pack(self, segments, seq_length):
        ids = self._special
        return BertPacker(seq_length, ids["cls"], ids["sep"], ids["pad"])(list(segments))

    @tf.function(input_signature=[tf.TensorSpec([None], tf.string)])
    def __call__(self, text):
        """`[batch]` strings -> the three id tensors `[batch, default_seq_length]`."""
        return self._pack([self.tokenize(text)], self.default_seq_length)


def _pack_function(module: BertPreprocess):
    """`bert_pack_inputs(segments, seq_length)`, traced for one and two segments."""
    @tf.function
    def bert_pack_inputs(segments, seq_length):
        return module._pack(segments, seq_length)

    for count in (1, 2):
        bert_pack_inputs.get_concrete_function([_RAGGED_IDS] * count,
                                               tf.TensorSpec([], tf.int32))
    return bert_pack_inputs


class BertEncoderExport(tf.Module):
    """The Keras encoder (and optionally the MLM head) behind TF Hub-style functions."""

    def __init__(self, encoder, pretrainer=None):
        super().__init__(name="bert_encoder")
        self.encoder = encoder
        self.pretrainer = pretrainer

    @tf.function(input_signature=[{n: tf.TensorSpec([None, None], tf.int32, name=n)
                                   for n in INPUT_NAMES}])
    def __call__(self, inputs):
        """The three id tensors -> all encoder outputs (float32)."""
        out = self.encoder(inputs, training=False)
        return {"pooled_output": tf.cast(out["pooled_output"], tf.float32),
                "sequence_output": tf.cast(out["sequence_output"], tf.float32),
                "default": tf.cast(out["pooled_output"], tf.float32),
                "encoder_outputs": [tf.cast(x, tf.float32) for x in out["encoder_outputs"]]}


def _mlm_function(module: BertEncoderExport):
    specs = {n: tf.TensorSpec([None, None], tf.int32, name=n)
             for n in (*INPUT_NAMES, "masked_lm_positions")}

    @tf.function(input_signature=[specs])
    def mlm(inputs):
        return {"mlm_logits": module.pretrainer(inputs, training=False)["mlm_logits"]}
    return mlm


def export_hub_pair(encoder, tokenizer, out_dir: str, pretrainer=None,
                    default_seq_length: int = 128) -> dict[str, str]:
    """Writes `out_dir/preprocess` and `out_dir/encoder`; returns their paths."""
    paths = {"preprocess": os.path.join(out_dir, "preprocess"),
             "encoder": os.path.join(out_dir, "encoder")}
    preprocess = BertPreprocess(tokenizer, default_seq_length)
    preprocess.bert_pack_inputs = _pack_function(preprocess)
    tf.saved_model.save(preprocess, paths["preprocess"], signatures={
        "serving_default": preprocess.__call__.get_concrete_function()})
    encoder_module = BertEncoderExport(encoder, pretrainer)
    if pretrainer is not None:
        encoder_module.mlm = _mlm_function(encoder_module)
    @tf.function(input_signature=[tf.TensorSpec([None, None], tf.int32, name=n)
                                  for n in INPUT_NAMES])
    def serve(input_word_ids, input_mask, input_type_ids):
        out = encoder_module({"input_word_ids": input_word_ids, "input_mask": input_mask,
                              "input_type_ids": input_type_ids})
        return {k: v for k, v in out.items() if k != "encoder_outputs"}

    tf.saved_model.save(encoder_module, paths["encoder"],
                        signatures={"serving_default": serve.get_concrete_function()})
    return paths
