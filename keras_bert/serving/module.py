"""`ServingModule`: raw strings in, the task's named outputs out, as one SavedModel.

The module holds the very `BertTokenizer` the training pipeline used (its vocabulary is a
graph constant, never a file path), a `BertPacker` and the Keras model, and exposes:

- `serving_default`: `text` (and `text_b` for pair tasks), `[batch]` strings -> outputs;
- `serve_ids`: `input_word_ids`, `input_mask`, `input_type_ids` -> the same outputs, for
  clients that tokenize themselves.

String processing is pinned to the host CPU so a GPU model server runs only the network on
the GPU. Outputs depend on the task (`keras_bert.serving.outputs`); the tagger and span-QA
exports subclass this module (`tagging.py`, `span_qa.py`) because their text signature
needs more than the packed ids (word and context offsets).
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import tensorflow as tf

from keras_bert.text.packer import BertPacker

IDS_SIGNATURE = {
    "input_word_ids": tf.TensorSpec([None, None], tf.int32, name="input_word_ids"),
    "input_mask": tf.TensorSpec([None, None], tf.int32, name="input_mask"),
    "input_type_ids": tf.TensorSpec([None, None], tf.int32, name="input_type_ids"),
}


class ServingModule(tf.Module):
    """Preprocessing + model + postprocessing, ready for `tf.saved_model.save`.

    Args:
      model: a Keras model taking the three id tensors (a dict).
      tokenizer: the `BertTokenizer` of the model.
      outputs_fn: `(model_outputs, packed_inputs) -> dict of named tensors` (the task's
        postprocessing; see `keras_bert.serving.outputs`).
      seq_length: a static sequence length (TPU/XLA serving), or None to pad each batch to
        its longest text, truncated at `max_length`.
      max_length: truncation length when `seq_length` is None.
      pair: whether `serving_default` takes `text_b` too.
    """

    def __init__(self, model, tokenizer, outputs_fn: Callable, seq_length: int | None = None,
                 max_length: int = 128, pair: bool = False, name: str | None = None):
        super().__init__(name=name)
        self.model = model
        self.tokenizer = tokenizer
        self.outputs_fn = outputs_fn
        ids = tokenizer.special_token_ids
        self.packer = BertPacker(seq_length, ids["cls"], ids["sep"], ids["pad"],
                                 max_length=seq_length or max_length)
        self.seq_length = seq_length
        self.pair = pair

    def preprocess(self, text, text_b=None) -> dict:
        """Strings -> packed int32 inputs, computed on the host CPU."""
        with tf.device("/CPU:0"):
            segments = [self.tokenizer.tokenize(text)]
            if text_b is not None:
                segments.append(self.tokenizer.tokenize(text_b))
            return self.packer(segments)

    def run(self, inputs: dict) -> dict:
        """Packed inputs -> the task's named outputs."""
        outputs = self.model(inputs, training=False)
        return self.outputs_fn(outputs, inputs)

    def text_function(self) -> tf.types.experimental.ConcreteFunction:
        """`serving_default`: `text` (and `text_b`) strings -> the task's outputs.

        Subclasses whose text signature differs (tagging, question answering) override it.
        """
        specs = [tf.TensorSpec([None], tf.string, name="text")]
        if self.pair:
            specs.append(tf.TensorSpec([None], tf.string, name="text_b"))

            def serving_default(text, text_b):
                return self.run(self.preprocess(text, text_b))
        else:
            def serving_default(text):
                return self.run(self.preprocess(text))
        return tf.function(serving_default, input_signature=specs).get_concrete_function()

    def warmup_inputs(self, texts):
        """A `serving_default` request (input name -> `[batch]` strings) made of `texts`, for
        the export's warmup file; subclasses with other text inputs override it."""
        texts = np.asarray(texts, dtype=object)
        inputs = {"text": texts}
        if self.pair:
            inputs["text_b"] = texts[::-1]
        return inputs

    def ids_function(self) -> tf.types.experimental.ConcreteFunction:
        """`serve_ids`: the three id tensors -> `run` outputs."""
        ids = dict(IDS_SIGNATURE)
        if self.seq_length:
            ids = {k: tf.TensorSpec([None, self.seq_length], tf.int32, name=k)
                   for k in IDS_SIGNATURE}

        def serve_ids(input_word_ids, input_mask, input_type_ids):
            return self.run({"input_word_ids": input_word_ids, "input_mask": input_mask,
                             "input_type_ids": input_type_ids})

        serve_ids = tf.function(serve_ids, input_signature=[
            ids["input_word_ids"], ids["input_mask"], ids["input_type_ids"]])
        return serve_ids.get_concrete_function()

    def signatures(self) -> dict:
        """The concrete functions to export, by signature name."""
        return {"serving_default": self.text_function(), "serve_ids": self.ids_function()}
