"""`ServingModule`: raw strings in, the task's named outputs out, as one SavedModel.

The module holds the model's `BertPreprocessor` -- the object its training pipeline mapped
over the data (vocabulary and casing from the model directory; the vocabulary is a graph
constant, never a file path) -- and the Keras model, and exposes:

- `serving_default`: `text` (and `text_b` for pair tasks), `[batch]` strings -> outputs,
  with what was read of each text: `num_tokens`, `num_windows`, `truncated` (a text longer
  than the sequence length is truncated, or read in windows whose outputs are aggregated:
  `keras_bert.text.sentence_windows.LongTextReading`);
- `serve_ids`: `input_word_ids`, `input_mask`, `input_type_ids` -> the same outputs, for
  clients that tokenize themselves;
- `preprocess`: the `serving_default` inputs -> the model inputs the preprocessor makes of
  them (what `serving_default` feeds the model), for clients and checks.

String processing is pinned to the host CPU so a GPU model server runs only the network on
the GPU. Outputs depend on the kind (each kind's `serving.py`); the token classifier's and
question answerer's exports subclass this module because their text signature needs more
than the packed ids (word and context offsets). Each kind's model builds its module
(`TextTaskModel.serving_functions`, through the kind's `_build_serving`); `predict` and
`keras-bert predict` run the same functions in process.

The module itself is never saved: `endpoints()` gives the functions and input signatures
that `keras_bert.export.exporter` hands to `keras.export.ExportArchive`, which stores each
variable the functions read exactly once, where TF Serving's SaverDef restores it.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import tensorflow as tf

from keras_bert.config import LongTextReading
from keras_bert.models.encoder import INPUT_NAMES
from keras_bert.tasks.batches import length_buckets
from keras_bert.text.sentence_windows import (
    WindowBatch,
    aggregate_windows,
    read_windows,
    truncation_stats,
)
from keras_bert.training.backends import is_tensorflow

Endpoint = tuple[Callable, list[tf.TensorSpec]]
PREDICT_BATCH = 32  # texts per call when answering in process
# The most windows one request may need (all its texts together): a larger request is
# refused with this number in the error rather than exhausting the server's memory.
MAX_REQUEST_WINDOWS = 4096


class ServingModule:
    """Preprocessing + model + postprocessing: the functions of one export.

    Args:
      model: a Keras model taking the three id tensors (a dict).
      preprocessor: the model's `BertPreprocessor` at the serving length: a fixed
        `seq_length` (TPU/XLA serving), or None to pad each batch to its longest text,
        truncated at its `max_length` (see `BertPreprocessor.with_length`).
      outputs_fn: `(model_outputs, packed_inputs) -> dict of named tensors` (the kind's
        postprocessing, in its `serving.py`).
      pair: whether `serving_default` takes `text_b` too.
      label_names: the labels of the outputs' label axis, for answers made in process
        (multi-label scores); None where the outputs name their labels themselves.
      reading: how texts longer than the serving length are read (truncated, or in
        windows); `aggregate`: how the windows' outputs become a text's (`mean`, `max`,
        `first`; `aggregate_windows`).
    """

    def __init__(self, model, preprocessor, outputs_fn: Callable, pair: bool = False,
                 label_names: list[str] | None = None,
                 reading: LongTextReading | None = None, aggregate: str = "mean"):
        self.model = model
        self.reading = reading or LongTextReading()
        self.aggregate = aggregate
        self.preprocessor = preprocessor
        self.tokenizer = preprocessor.tokenizer
        self.outputs_fn = outputs_fn
        self.seq_length = preprocessor.seq_length
        self.pair = pair
        self.label_names = None if label_names is None else list(label_names)

    def preprocess(self, text, text_b=None) -> dict:
        """Strings -> packed int32 inputs (the preprocessor's, on the host CPU); read in
        windows, one row per window and `text_index`, the text each belongs to."""
        if not self.reading.windowed:
            return self.preprocessor(text if text_b is None else (text, text_b))
        packed, batch = self.windows(text, text_b)
        return {**packed, "text_index": batch.example}

    def _segments(self, text, text_b) -> list[tf.RaggedTensor]:
        return [self.preprocessor.tokenize(t) for t in ([text] if text_b is None
                                                        else [text, text_b])]

    def windows(self, text, text_b=None) -> tuple[dict, WindowBatch]:
        """Strings -> `(packed windows, WindowBatch)` (`read_windows`); a request needing
        more than `MAX_REQUEST_WINDOWS` windows fails with an error naming the limit."""
        return read_windows(self.preprocessor, self.reading, text, text_b, MAX_REQUEST_WINDOWS)

    def read(self, text, text_b=None) -> dict:
        """Strings -> the task's outputs and, per text, `num_tokens` (word pieces of `text`
        and `text_b`), `num_windows` and `truncated` (some word piece was not read)."""
        if self.reading.windowed:
            packed, batch = self.windows(text, text_b)
            outputs = tf.nest.map_structure(
                lambda v: aggregate_windows(v, batch, self.aggregate), self.network(packed))
            result = self.outputs_fn(outputs, None)
        else:
            segments = self._segments(text, text_b)
            batch = truncation_stats(segments, self.preprocessor.max_length)
            result = self.run(self.preprocessor.pack(segments))
        return {**result, "num_tokens": batch.num_tokens, "num_windows": batch.num_windows,
                "truncated": batch.truncated}

    # Whether the network's outputs have a position axis (axis 1: the tagger's logits, span
    # QA's start and end logits), cut back to the packed length after a padded run.
    per_token_outputs = False

    def use_xla(self) -> None:
        """Runs the network under `jit_compile` (XLA) with each batch padded to a length
        bucket (16, 32, 48, ... 128, 160, ... 256, 384, 512, up to the serving length) and to a
        power-of-two number of rows (`pad_to_bucket`), so that few shapes are compiled.

        TF Serving runs such exports only with `--xla_cpu_compilation_enabled=true`.
        """
        self._xla_model = tf.function(lambda inputs: self.model(inputs, training=False),
                                      jit_compile=True, autograph=False)
        self._traced = {}  # functions traced earlier would run the network without XLA

    def xla_lengths(self) -> list[int]:
        """The sequence lengths an XLA-compiled network is compiled for (`length_buckets`
        up to the serving length)."""
        return length_buckets(self.preprocessor.max_length)

    def network(self, inputs: dict):
        """Packed inputs -> the model's outputs (XLA-compiled over length buckets after
        `use_xla`; on a Keras backend other than TensorFlow, the model's own compiled
        `predict_on_batch` over the same buckets, answering in process)."""
        compiled = getattr(self, "_xla_model", None)
        if compiled is None and is_tensorflow():
            return self.model(inputs, training=False)
        batch = tf.shape(inputs["input_word_ids"])[0]
        length = tf.shape(inputs["input_word_ids"])[1]
        padded = pad_to_bucket(inputs, self.preprocessor.max_length)
        outputs = compiled(padded) if compiled is not None else self._backend_call(padded)

        def unpad(tensor):
            return tensor[:batch, :length] if self.per_token_outputs else tensor[:batch]
        return tf.nest.map_structure(unpad, outputs)

    def _backend_call(self, inputs: dict):
        """The model run by its own Keras backend (JAX: one jitted function per bucket
        shape) on eager `inputs`; its outputs as TensorFlow tensors."""
        outputs = self.model.predict_on_batch({k: v.numpy() for k, v in inputs.items()})
        return tf.nest.map_structure(lambda value: tf.constant(np.asarray(value)), outputs)

    def run(self, inputs: dict) -> dict:
        """Packed inputs -> the task's named outputs."""
        return self.outputs_fn(self.network(inputs), inputs)

    def litert_graph(self):
        """The graph of this module's LiteRT export (`keras_bert.export.litert_graph`,
        `litert_windows` for texts read in windows): each kind says here whether, and how,
        its export goes to LiteRT (the tagger and span QA override it); a kind that cannot
        raises one `ValueError` line naming why."""
        from keras_bert.export.litert_graph import LiteRTGraph
        from keras_bert.export.litert_windows import WindowedGraph

        graph = WindowedGraph if self.reading.windowed else LiteRTGraph
        return graph(self, pair=self.pair)

    def text_endpoint(self) -> Endpoint:
        """`serving_default`: `text` (and `text_b`) strings -> the task's outputs.

        Subclasses whose text signature differs (tagging, question answering) override it.
        """
        specs = [tf.TensorSpec([None], tf.string, name="text")]
        if self.pair:
            specs.append(tf.TensorSpec([None], tf.string, name="text_b"))

            def serving_default(text, text_b):
                return self.read(text, text_b)
        else:
            def serving_default(text):
                return self.read(text)
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

    def preprocess_endpoint(self) -> Endpoint:
        """`preprocess`: the `serving_default` inputs -> the model inputs made of them.

        Subclasses whose text signature differs (tagging, question answering) override it.
        """
        specs = [tf.TensorSpec([None], tf.string, name="text")]
        if self.pair:
            specs.append(tf.TensorSpec([None], tf.string, name="text_b"))
            return self.preprocess, specs

        def preprocess(text):
            return self.preprocess(text)
        return preprocess, specs

    def endpoints(self) -> dict[str, Endpoint]:
        """`{signature name: (function, input signature)}` of the export."""
        return {"serving_default": self.text_endpoint(), "serve_ids": self.ids_endpoint(),
                "preprocess": self.preprocess_endpoint()}

    def traced(self, name: str) -> tf.types.experimental.GenericFunction:
        """The endpoint `name` as a `tf.function`, traced once per module (about a second
        and a half for BERT-Tiny on 2 cores): what the export holds (`keras.export.
        ExportArchive` takes it as it is) and what `predict` runs, however often. On
        another Keras backend the endpoint runs eagerly (its network by that backend),
        and only answers in process: exports are TensorFlow's."""
        if not is_tensorflow():
            return self.endpoints()[name][0]
        cache = self.__dict__.setdefault("_traced", {})
        if name not in cache:
            fn, specs = self.endpoints()[name]
            # autograph=False, as keras.export.ExportArchive traces endpoints.
            cache[name] = tf.function(fn, input_signature=specs, autograph=False)
            cache[name].get_concrete_function()
        return cache[name]

    def text_function(self) -> Callable:
        """`serving_default` traced in this process (what the export holds)."""
        return self._concrete("serving_default")

    def ids_function(self) -> Callable:
        """`serve_ids` traced in this process (what the export holds)."""
        return self._concrete("serve_ids")

    def _concrete(self, name: str) -> Callable:
        function = self.traced(name)
        return function.get_concrete_function() if is_tensorflow() else function


def pad_to_bucket(inputs: dict, longest: int) -> dict:
    """The packed inputs padded so that an XLA-compiled network sees few shapes: positions
    with 0 (padding, masked out) to the next of `length_buckets(longest)`, and rows (copies
    of the first) to the next power of two. The caller keeps the first rows of the outputs.
    """
    ids = inputs["input_word_ids"]
    batch, length = tf.shape(ids)[0], tf.shape(ids)[1]
    buckets = tf.constant(length_buckets(longest), tf.int32)
    bucket = tf.reduce_min(tf.where(buckets >= length, buckets, buckets[-1]))
    bucket = tf.maximum(bucket, length)
    rows = tf.maximum(batch - 1, 0)
    for shift in (1, 2, 4, 8, 16):  # the next power of two, in integers (0 stays 0)
        rows = tf.bitwise.bitwise_or(rows, tf.bitwise.right_shift(rows, shift))
    rows = tf.where(batch > 0, rows + 1, 0)
    take = tf.concat([tf.range(batch), tf.zeros([rows - batch], tf.int32)], axis=0)
    return {name: tf.pad(tf.gather(value, take), [[0, 0], [0, bucket - length]])
            for name, value in inputs.items()}



def float_logits(model_outputs) -> tf.Tensor:
    """A network's logits (its output, or its `logits` output) as float32."""
    logits = model_outputs["logits"] if isinstance(model_outputs, dict) else model_outputs
    return tf.cast(logits, tf.float32)


def run_in_batches(function, requests: dict[str, list], batch_size: int) -> dict[str, np.ndarray]:
    """`function(**batch)` over `requests` (name -> list of strings) in batches of
    `batch_size`; each output's batches concatenated (padded ones padded to the widest)."""
    count = len(next(iter(requests.values())))
    parts: dict[str, list[np.ndarray]] = {}
    for begin in range(0, count, batch_size):
        batch = {k: tf.constant(v[begin:begin + batch_size], tf.string)
                 for k, v in requests.items()}
        for name, value in function(**batch).items():
            parts.setdefault(name, []).append(value.numpy())
    return {name: _concatenate(values) for name, values in parts.items()}


def _concatenate(values: list[np.ndarray]) -> np.ndarray:
    if values[0].ndim < 2:
        return np.concatenate(values)
    width = max(v.shape[1] for v in values)
    padded = []
    for v in values:
        pad = np.zeros((v.shape[0], width - v.shape[1], *v.shape[2:]), v.dtype)
        padded.append(np.concatenate([v, pad], axis=1))
    return np.concatenate(padded)


def text_of(value) -> str:
    """A string output of a serving function as `str`."""
    return value.decode("utf-8") if isinstance(value, bytes) else str(value)

