"""`LiteRTGraph`: a task model's serving functions rebuilt from ops a LiteRT interpreter runs.

A SavedModel's `serving_default` reads text with `BertTokenizer`, whose regular
expressions, lookup tables and Unicode ops are core TensorFlow ops LiteRT has no kernels
for. This module keeps what LiteRT can run:

- tokenizing: TF Text's `FastBertTokenizer` (its `FastBertNormalize` and
  `FastWordpieceTokenizeWithOffsets` ops have TFLite kernels, registered from
  `tensorflow_text.tflite_registrar`); see `litert_rules.py` for where its rules and ours
  part;
- packing: `[CLS] ids [SEP]` into a fixed `[batch, max_length]` buffer with builtin ops
  (`RaggedTensorToTensor`, TF Text's, truncates to the buffer's width);
- the network: one branch per length bucket (`tf.cond`, LiteRT's `IF`), each a static
  slice `[:, :bucket]` of that buffer. Every subgraph sees the same shapes on every call,
  so the interpreter allocates each bucket's tensors once (the first time it is taken) and
  never again, whatever the text's length; the delegate (XNNPACK) plans static shapes;
- the task's outputs, as the kind's `serving.py` makes them (label names included).

Signatures, as the SavedModel's: `serving_default` (`text`), `serve_ids` (the three id
tensors, any length up to `max_length`; the bucket is chosen from `input_mask`) and
`preprocess` (`text` -> the three id tensors, cut to the longest packed row).
"""

from __future__ import annotations

import tensorflow as tf
import tensorflow_text as tf_text
from tensorflow.python.framework.convert_to_constants import convert_variables_to_constants_v2

from keras_bert.models.encoder import INPUT_NAMES


def fast_bert_tokenizer(tokenizer) -> tf_text.FastBertTokenizer:
    """The TFLite-capable tokenizer closest to `tokenizer` (a `BertTokenizer`): its
    vocabulary and casing, and its rules' word limit, counted in bytes (after
    normalisation) where the rules count characters."""
    from keras_bert.text.rules import tokenizer_rules

    return tf_text.FastBertTokenizer(
        tokenizer.vocab, token_out_type=tf.int32, unknown_token="[UNK]",
        max_bytes_per_word=tokenizer_rules(tokenizer.rules).max_chars_per_word,
        lower_case_nfd_strip_accents=tokenizer.lower_case)


class LiteRTGraph(tf.Module):
    """The LiteRT export's functions for a sentence-level `ServingModule` `module`.

    Args:
      module: the model's `ServingModule` (single texts, truncated reading).
      buckets: the sequence lengths the network is traced for, ascending; the last one is
        the longest text read (longer ones are truncated, as the SavedModel truncates).
    """

    def __init__(self, module, buckets: list[int]):
        super().__init__(name="litert")
        tokenizer = module.tokenizer
        self.model = module.model
        self.outputs_fn = module.outputs_fn
        self.buckets = [int(b) for b in buckets]
        self.max_length = self.buckets[-1]
        self.cls_id, self.sep_id, self.pad_id = tokenizer.cls_id, tokenizer.sep_id, tokenizer.pad_id
        self.fast_tokenizer = fast_bert_tokenizer(tokenizer)
        for length in self.buckets:
            self._frozen(length)

    # ------------------------------------------------------------------ signatures
    def serving_default(self, text):
        """`[batch]` strings -> the task's outputs and `num_tokens`, `num_windows`,
        `truncated`, as the SavedModel's `serving_default`."""
        packed, num_tokens = self._pack(text)
        outputs = self.outputs_fn(self._network(packed), packed)
        ones = tf.ones_like(num_tokens)
        return {**outputs, "num_tokens": num_tokens, "num_windows": ones,
                "truncated": num_tokens > self.max_length - 2}

    def serve_ids(self, input_word_ids, input_mask, input_type_ids):
        """The three id tensors `[batch, length <= max_length]` -> the task's outputs, the
        network run at max_length."""
        given = {"input_word_ids": input_word_ids, "input_mask": input_mask,
                 "input_type_ids": input_type_ids}
        # One network, at max_length (no bucket tree: each bucket in a signature is one
        # more copy of the weights while the converter works; it stores them once).
        # Padded to max_length, then cut there: every branch sees [batch, max_length].
        packed = {name: tf.reshape(
                      tf.slice(tf.pad(value, [[0, 0], [0, self.max_length]]), [0, 0],
                               [-1, self.max_length]), [-1, self.max_length])
                  for name, value in given.items()}
        return self.outputs_fn(self._frozen(self.max_length)(packed), packed)

    def preprocess(self, text):
        """`[batch]` strings -> the three id tensors, as wide as the longest packed row."""
        packed, _ = self._pack(text)
        used = tf.reduce_max(tf.reduce_sum(packed["input_mask"], axis=1))
        return {name: value[:, :used] for name, value in packed.items()}

    def functions(self, text: bool = True) -> dict[str, tf.types.experimental.ConcreteFunction]:
        """`{signature name: concrete function}`: `serve_ids`, and with `text` the two
        signatures that take strings."""
        ids = [tf.TensorSpec([None, None], tf.int32, name=n) for n in INPUT_NAMES]
        strings = [tf.TensorSpec([None], tf.string, name="text")]
        made = {"serve_ids": (self.serve_ids, ids)}
        if text:
            made.update({"serving_default": (self.serving_default, strings),
                         "preprocess": (self.preprocess, strings)})
        return {name: tf.function(fn, input_signature=specs, autograph=False)
                .get_concrete_function() for name, (fn, specs) in made.items()}

    # ------------------------------------------------------------------ internals
    def _pack(self, text):
        """Strings -> (`[batch, max_length]` packed ids, word pieces per text)."""
        pieces = self.fast_tokenizer.tokenize(text)
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

    def _frozen(self, length: int):
        """The network at `[batch, length]` with its weights as constants of its own graph:
        each branch then holds them (as LiteRT `FULLY_CONNECTED` weights the int8
        quantizer and XNNPACK see as constant), instead of taking them as inputs of the
        `IF`, which is what variables captured by the branches become once frozen. The
        converter stores identical weights once."""
        cache = self.__dict__.setdefault("_frozen_networks", {})
        if length not in cache:  # built eagerly, before the signatures are traced
            specs = {n: tf.TensorSpec([None, length], tf.int32, name=n) for n in INPUT_NAMES}
            traced = tf.function(lambda inputs: self.model(inputs, training=False),
                                 autograph=False).get_concrete_function(specs)
            frozen = convert_variables_to_constants_v2(traced)

            def network(inputs):
                flat = frozen(*[inputs[name] for name in sorted(inputs)])
                return tf.nest.pack_sequence_as(traced.structured_outputs, flat)
            cache[length] = network
        return cache[length]

    def _network(self, packed: dict):
        """The network on the shortest bucket that holds every row's packed ids."""
        needed = tf.reduce_max(tf.reduce_sum(packed["input_mask"], axis=1))
        return self._branch(packed, needed, 0, len(self.buckets) - 1)

    def _branch(self, packed: dict, needed, first: int, last: int):
        """Buckets `first..last` as a balanced tree of `IF`s: a bucket is reached through
        about log2(buckets) of them (each `IF` copies its inputs into its branch)."""
        if first == last:
            length = self.buckets[first]
            return self._frozen(length)({name: value[:, :length]
                                         for name, value in packed.items()})
        middle = (first + last) // 2
        return tf.cond(needed <= self.buckets[middle],
                       lambda: self._branch(packed, needed, first, middle),
                       lambda: self._branch(packed, needed, middle + 1, last))
