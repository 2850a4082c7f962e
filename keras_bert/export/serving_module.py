"""`ServingModule`: raw strings in, the task's named outputs out, as one SavedModel.

The module holds the very `BertTokenizer` the training pipeline used (its vocabulary is a
graph constant, never a file path), a `BertPacker` and the Keras model, and exposes:

- `serving_default`: `text` (and `text_b` for pair tasks), `[batch]` strings -> outputs;
- `serve_ids`: `input_word_ids`, `input_mask`, `input_type_ids` -> the same outputs, for
  clients that tokenize themselves.

String processing is pinned to the host CPU so a GPU model server runs only the network on
the GPU. Outputs depend on the task (`keras_bert.export.task_outputs`); the tagger and span-QA
exports subclass this module (`tagging.py`, `span_qa.py`) because their text signature
needs more than the packed ids (word and context offsets).

The module itself is never saved: `endpoints()` gives the functions and input signatures
that `keras_bert.export.exporter` hands to `keras.export.ExportArchive`, which stores each
variable the functions read exactly once, where TF Serving's SaverDef restores it.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import tensorflow as tf

from keras_bert.models.encoder import INPUT_NAMES
from keras_bert.text.packer import BertPacker

Endpoint = tuple[Callable, list[tf.TensorSpec]]


class ServingModule:
    """Preprocessing + model + postprocessing: the functions of one export.

    Args:
      model: a Keras model taking the three id tensors (a dict).
      tokenizer: the `BertTokenizer` of the model.
      outputs_fn: `(model_outputs, packed_inputs) -> dict of named tensors` (the task's
        postprocessing; see `keras_bert.export.task_outputs`).
      seq_length: a static sequence length (TPU/XLA serving), or None to pad each batch to
        its longest text, truncated at `max_length`.
      max_length: truncation length when `seq_length` is None.
      pair: whether `serving_default` takes `text_b` too.
    """

    def __init__(self, model, tokenizer, outputs_fn: Callable, seq_length: int | None = None,
                 max_length: int = 128, pair: bool = False):
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

    def text_endpoint(self) -> Endpoint:
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
        return serving_default, specs

    def warmup_inputs(self, texts):
        """A `serving_default` request (input name -> `[batch]` strings) made of `texts`, for
        the export's warmup file; subclasses with other text inputs override it."""
        texts = np.asarray(texts, dtype=object)
        inputs = {"text": texts}
        if self.pair:
            inputs["text_b"] = texts[::-1]
        return inputs

    def ids_endpoint(self) -> Endpoint:
        """`serve_ids`: the three id tensors -> `run` outputs."""
        length = self.seq_length or None
        specs = [tf.TensorSpec([None, length], tf.int32, name=name) for name in INPUT_NAMES]

        def serve_ids(input_word_ids, input_mask, input_type_ids):
            return self.run({"input_word_ids": input_word_ids, "input_mask": input_mask,
                             "input_type_ids": input_type_ids})
        return serve_ids, specs

    def endpoints(self) -> dict[str, Endpoint]:
        """`{signature name: (function, input signature)}` of the export."""
        return {"serving_default": self.text_endpoint(), "serve_ids": self.ids_endpoint()}

    def text_function(self) -> tf.types.experimental.ConcreteFunction:
        """`serving_default` traced in this process (what the export holds)."""
        return _concrete(*self.text_endpoint())

    def ids_function(self) -> tf.types.experimental.ConcreteFunction:
        """`serve_ids` traced in this process (what the export holds)."""
        return _concrete(*self.ids_endpoint())


def _concrete(fn, specs):
    # autograph=False, as keras.export.ExportArchive traces endpoints.
    return tf.function(fn, input_signature=specs, autograph=False).get_concrete_function()
