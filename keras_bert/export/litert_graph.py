"""`LiteRTGraph`: a task model's serving functions rebuilt from ops a LiteRT interpreter runs.

A SavedModel's `serving_default` reads text with `BertTokenizer`, whose regular
expressions, lookup tables and Unicode ops are core TensorFlow ops LiteRT has no kernels
for. This module keeps what LiteRT can run:

- tokenizing: TF Text's `FastBertNormalize` and `FastWordpieceTokenizeWithOffsets`
  (`litert_text.LiteRTTokenizer`; their TFLite kernels are registered from
  `tensorflow_text.tflite_registrar`); docs/litert.md measures where its rules and ours
  part;
- packing: `[CLS] ids [SEP]` into a fixed `[batch, max_length]` buffer with builtin ops
  (`RaggedTensorToTensor`, TF Text's, truncates to the buffer's width); sentence pairs by
  the SavedModel's own `BertPacker` (longest-first truncation, builtin ops);
- the network, once, traced for any length and run on `[:, :n]` of that buffer, `n` the
  longest packed row: the network computes at the text's own length, never at
  `max_length`. The interpreter sizes the network's tensors when `n` changes and keeps them
  while it stays the same: XNNPACK reshapes its plan, the interpreter is not rebuilt
  (bench/RESULTS.md, "LiteRT export", has what a change of length costs). One network,
  so the converter holds the weights once; padding every text to a few length buckets
  (one `IF` branch each) computed a 34-token text at 64 tokens;
- the task's outputs, as the kind's `serving.py` makes them (label names included).

Signatures, as the SavedModel's: `serving_default` (`text`, pairs also `text_b`),
`serve_ids` (the three id tensors, any length; longer than `max_length` is cut there) and
`preprocess` (the strings -> the three id tensors, cut to the longest packed row).

Graphs that read more than one row per text subclass it: texts read in windows
(`litert_windows.py`), and the kinds whose answers are spans of the text, in their
folders (`litert_tagger.py`, `litert_answerer.py`), over `litert_text.py`'s steps;
`serve_ids` is this one. A kind's `ServingModule.litert_graph` says which graph it
takes.
"""

from __future__ import annotations

import tensorflow as tf
from tensorflow.python.framework.convert_to_constants import convert_variables_to_constants_v2

from keras_bert.export.litert_text import LiteRTTokenizer
from keras_bert.models.encoder import INPUT_NAMES
from keras_bert.text.packer import BertPacker


class LiteRTGraph(tf.Module):
    """The LiteRT export's functions for a `SentenceServing` `module` (single
    texts, or with `pair` sentence pairs; truncated reading); texts longer than its
    `max_length` are truncated, as the SavedModel truncates them."""

    # The string inputs of `serving_default` and `preprocess`, in the SavedModel's order.
    text_inputs: tuple[str, ...] = ("text",)

    def __init__(self, module, pair: bool = False):
        super().__init__(name="litert")
        tokenizer = module.tokenizer
        self.outputs_fn = module.outputs_fn
        self.max_length = int(module.preprocessor.max_length)
        self.cls_id, self.sep_id, self.pad_id = tokenizer.cls_id, tokenizer.sep_id, tokenizer.pad_id
        self.tokenizer = LiteRTTokenizer(tokenizer)
        if pair:
            self.text_inputs = ("text", "text_b")
        self.network = frozen_network(module.model)  # eagerly, before any signature traces

    # ------------------------------------------------------------------ signatures
    def serving_default(self, *texts):
        """`[batch]` strings (`text`, and `text_b` for pairs) -> the task's outputs and
        `num_tokens`, `num_windows`, `truncated`, as the SavedModel's `serving_default`."""
        packed, num_tokens = self._pack(*texts)
        outputs = self.outputs_fn(self.network(_cut(packed, _longest(packed))), packed)
        ones = tf.ones_like(num_tokens)
        return {**outputs, "num_tokens": num_tokens, "num_windows": ones,
                "truncated": num_tokens > self.max_length - 1 - len(texts)}

    def serve_ids(self, input_word_ids, input_mask, input_type_ids):
        """The three id tensors `[batch, length]` -> the task's outputs, the network run at
        that length (cut to `max_length`, as the SavedModel reads at most that)."""
        given = _cut({"input_word_ids": input_word_ids, "input_mask": input_mask,
                      "input_type_ids": input_type_ids}, self.max_length)
        return self.outputs_fn(self.network(given), given)

    def preprocess(self, *texts):
        """`[batch]` strings -> the three id tensors, as wide as the longest packed row."""
        packed, _ = self._pack(*texts)
        return _cut(packed, _longest(packed))

    def functions(self, text: bool = True) -> dict[str, tf.types.experimental.ConcreteFunction]:
        """`{signature name: concrete function}`: `serve_ids`, and with `text` the two
        signatures that take strings."""
        ids = [tf.TensorSpec([None, None], tf.int32, name=n) for n in INPUT_NAMES]
        strings = [tf.TensorSpec([None], tf.string, name=n) for n in self.text_inputs]
        made = {"serve_ids": (self.serve_ids, ids)}
        if text:
            made.update({"serving_default": (self.serving_default, strings),
                         "preprocess": (self.preprocess, strings)})
        return {name: tf.function(fn, input_signature=specs, autograph=False)
                .get_concrete_function() for name, (fn, specs) in made.items()}

    # ------------------------------------------------------------------ internals
    def _pack(self, text, text_b=None):
        """Strings -> (`[batch, max_length]` packed ids, word pieces per text)."""
        if text_b is not None:
            return self._pack_pairs(text, text_b)
        pieces = self.tokenizer.tokenize(text)
        num_tokens = tf.cast(pieces.row_lengths(), tf.int32)
        kept = tf.minimum(num_tokens, self.max_length - 2)
        body = pieces.to_tensor(default_value=self.pad_id, shape=[None, self.max_length - 2])
        batch = tf.shape(body)[0]
        cls = tf.fill([batch, 1], self.cls_id)
        pad = tf.fill([batch, 1], self.pad_id)
        words = tf.concat([cls, body, pad], axis=1)
        position = tf.range(self.max_length)[None, :]
        words = tf.where(position == kept[:, None] + 1, self.sep_id, words)
        mask = tf.cast(position < kept[:, None] + 2, tf.int32)
        return {"input_word_ids": words, "input_mask": mask,
                "input_type_ids": tf.zeros_like(words)}, num_tokens


    def _pack_pairs(self, text, text_b):
        """Pairs -> (`[batch, longest]` packed ids, word pieces of both texts): BERT's
        longest-first truncation and layout, by the SavedModel's own packer."""
        segments = [self.tokenizer.tokenize(t) for t in (text, text_b)]
        packer = BertPacker(None, self.cls_id, self.sep_id, self.pad_id,
                            max_length=self.max_length)
        num_tokens = tf.add_n([tf.cast(s.row_lengths(), tf.int32) for s in segments])
        return packer(segments), num_tokens


def _longest(packed: dict):
    """The longest packed row of `packed` (its real tokens, `[CLS]` and `[SEP]` included)."""
    return tf.reduce_max(tf.reduce_sum(packed["input_mask"], axis=1))


def _cut(inputs: dict, width) -> dict:
    """Each `[batch, length]` tensor of `inputs` cut to its first `width` columns."""
    return {name: value[:, :width] for name, value in inputs.items()}


def frozen_network(model):
    """`model` (the task's network) as a function of `{input name: [batch, length]}` with
    its weights as constants of its own graph, traced for any batch and length. Frozen,
    the weights are what LiteRT's int8 quantizer and XNNPACK need: constant
    `FULLY_CONNECTED` weights (a variable read would be an input of the graph)."""
    specs = {n: tf.TensorSpec([None, None], tf.int32, name=n) for n in INPUT_NAMES}
    traced = tf.function(lambda inputs: model(inputs, training=False),
                         autograph=False).get_concrete_function(specs)
    frozen = convert_variables_to_constants_v2(traced)

    def network(inputs):
        flat = frozen(*[inputs[name] for name in sorted(inputs)])
        return tf.nest.pack_sequence_as(traced.structured_outputs, flat)
    return network
