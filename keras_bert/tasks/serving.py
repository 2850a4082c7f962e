"""The export graph: a task kind's serving functions, the signatures its SavedModel (and
LiteRT file) holds, in TensorFlow.

`ServingModule` holds the model's `BertPreprocessor` -- the object its training pipeline
mapped over the data (vocabulary and casing from the model directory; the vocabulary is a
graph constant, never a file path) -- and the Keras model, and exposes:

- `serving_default`: strings -> the kind's outputs (`text`, and `text_b` for pair tasks,
  for the sentence-level kinds: `SentenceServing`, with what was read of each text:
  `num_tokens`, `num_windows`, `truncated`; a text longer than the sequence length is
  truncated, or read in windows whose outputs are aggregated:
  `keras_bert.text.sentence_windows.LongTextReading`);
- `serve_ids`: `input_word_ids`, `input_mask`, `input_type_ids` -> the kind's outputs, for
  clients that tokenize themselves;
- `preprocess`: the `serving_default` inputs -> the model inputs the preprocessor makes of
  them (what `serving_default` feeds the model), for clients and checks.

String processing is pinned to the host CPU so a GPU model server runs only the network on
the GPU. The network is called through `keras_bert.tasks.network_call` (a Keras call in this
graph on TensorFlow; the backend's own on another, where the functions run eagerly in
process), or XLA-compiled (`use_xla`). `ServingModule` is the contract of a kind's module:
what it must implement and may set is listed in its docstring; the token classifier's and
question answerer's modules (their folders' `serving.py`) implement it, and the
sentence-level kinds share `SentenceServing`. Each kind's model builds its module
(`TextTaskModel.serving_functions`, through the kind's `_build_serving`); `predict` and
`keras-bert predict` run the same functions in process (`keras_bert.tasks.in_process`).

The module itself is never saved: `endpoints()` gives the functions and input signatures
that `keras_bert.export.exporter` hands to `keras.export.ExportArchive`, which stores each
variable the functions read exactly once, where TF Serving's SaverDef restores it.
"""

from __future__ import annotations

import abc
from collections.abc import Callable

import numpy as np
import tensorflow as tf

from keras_bert.config import LongTextReading
from keras_bert.models.encoder import INPUT_NAMES
from keras_bert.tasks.batches import length_buckets
from keras_bert.tasks.in_process import answering_function
from keras_bert.tasks.network_call import network_call
from keras_bert.text.sentence_windows import (
    WindowBatch,
    aggregate_windows,
    read_windows,
    truncation_stats,
)
from keras_bert.training.backends import require_tensorflow

Endpoint = tuple[Callable, list[tf.TensorSpec]]
# The most windows one request may need (all its texts together): a larger request is
# refused with this number in the error rather than exhausting the server's memory.
MAX_REQUEST_WINDOWS = 4096


class ServingModule(abc.ABC):
    """The functions of one export: preprocessing + model + postprocessing.

    Args:
      model: a Keras model taking the three id tensors (a dict).
      preprocessor: the model's `BertPreprocessor` at the serving length: a fixed
        `seq_length` (TPU/XLA serving), or None to pad each batch to its longest text,
        truncated at its `max_length` (see `BertPreprocessor.with_length`).
      outputs_fn: `(model_outputs, packed_inputs) -> dict of named tensors`: the outputs of
        `serve_ids` (the kind's postprocessing, in its `serving.py`).

    A kind's module (a subclass) must implement the abstract methods, the signatures that
    read text:

    - `text_endpoint()`: `serving_default`'s function and input signature;
    - `preprocess_endpoint()`: `preprocess`'s;
    - `warmup_inputs(texts)`: a `serving_default` request made of `texts` (the export's
      warmup file);
    - `litert_graph()`: the graph of its LiteRT export, or one `ValueError` line naming
      why it has none;

    and may set `per_token_outputs` (True where the network's outputs have a position
    axis). The rest is shared and not overridden: the network (`network`, `run`, `use_xla`,
    `xla_lengths`), `serve_ids` (`ids_endpoint`), the signatures (`endpoints`, `traced`)
    and the functions answering in process (`text_function`, `ids_function`).
    """

    # Whether the network's outputs have a position axis (axis 1: the tagger's logits, span
    # QA's start and end logits), cut back to the packed length after a padded run.
    per_token_outputs = False

    def __init__(self, model, preprocessor, outputs_fn: Callable):
        self.model = model
        self.preprocessor = preprocessor
        self.tokenizer = preprocessor.tokenizer
        self.outputs_fn = outputs_fn
        self.seq_length = preprocessor.seq_length
        self._call = network_call(model, preprocessor.max_length, self.per_token_outputs)
        self._traced: dict = {}

    # ----- what a kind implements -----------------------------------------------------------

    @abc.abstractmethod
    def text_endpoint(self) -> Endpoint:
        """`serving_default`: the kind's text inputs -> its outputs."""

    @abc.abstractmethod
    def preprocess_endpoint(self) -> Endpoint:
        """`preprocess`: the `serving_default` inputs -> the model inputs made of them."""

    @abc.abstractmethod
    def warmup_inputs(self, texts) -> dict:
        """A `serving_default` request (input name -> `[batch]` strings) made of `texts`."""

    @abc.abstractmethod
    def litert_graph(self):
        """The graph of this module's LiteRT export (`keras_bert.export.litert_graph`):
        each kind says here whether, and how, its export goes to LiteRT; a kind that
        cannot raises one `ValueError` line naming why."""

    # ----- the network ----------------------------------------------------------------------

    def network(self, inputs: dict):
        """Packed inputs -> the model's outputs, as tensors of the calling function
        (`network_call`; XLA-compiled over length buckets after `use_xla`)."""
        return tf.nest.map_structure(tf.convert_to_tensor, self._call(inputs))

    def run(self, inputs: dict) -> dict:
        """Packed inputs -> the task's named outputs."""
        return self.outputs_fn(self.network(inputs), inputs)

    def use_xla(self) -> None:
        """Runs the network under `jit_compile` (XLA) with each batch padded to a length
        bucket (16, 32, 48, ... 128, 160, ... 256, 384, 512, up to the serving length) and to a
        power-of-two number of rows (`pad_to_bucket`), so that few shapes are compiled.

        TF Serving runs such exports only with `--xla_cpu_compilation_enabled=true`.
        """
        require_tensorflow("an XLA export")
        self._call = xla_call(self.model, self.preprocessor.max_length,
                              self.per_token_outputs)
        self._traced = {}  # functions traced earlier would run the network without XLA

    def xla_lengths(self) -> list[int]:
        """The sequence lengths an XLA-compiled network is compiled for (`length_buckets`
        up to the serving length)."""
        return length_buckets(self.preprocessor.max_length)

    # ----- the signatures -------------------------------------------------------------------

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
        return {"serving_default": self.text_endpoint(), "serve_ids": self.ids_endpoint(),
                "preprocess": self.preprocess_endpoint()}

    def traced(self, name: str) -> tf.types.experimental.GenericFunction:
        """The endpoint `name` as a `tf.function`, traced once per module (about a second
        and a half for BERT-Tiny on 2 cores): what the export holds (`keras.export.
        ExportArchive` takes it as it is) and what `predict` runs, however often. Exports
        are TensorFlow's: on another backend the endpoints answer in process only
        (`text_function`)."""
        require_tensorflow("the export's traced functions")
        if name not in self._traced:
            fn, specs = self.endpoints()[name]
            # autograph=False, as keras.export.ExportArchive traces endpoints.
            self._traced[name] = tf.function(fn, input_signature=specs, autograph=False)
            self._traced[name].get_concrete_function()
        return self._traced[name]

    def text_function(self) -> Callable:
        """`serving_default` as this process answers with it (`in_process`: on TensorFlow,
        traced, as the export holds it)."""
        return answering_function(self, "serving_default")

    def ids_function(self) -> Callable:
        """`serve_ids` as this process answers with it (as `text_function`)."""
        return answering_function(self, "serve_ids")


class SentenceServing(ServingModule):
    """The `ServingModule` of the sentence-level kinds (classifiers, regressor, embedder):
    single texts or sentence pairs, one output row per text.

    Args:
      model, preprocessor, outputs_fn: as for `ServingModule`.
      pair: whether `serving_default` takes `text_b` too.
      reading: how texts longer than the serving length are read (truncated, or in
        windows); `aggregate`: how the windows' outputs become a text's (`mean`, `max`,
        `first`; `aggregate_windows`).
    """

    def __init__(self, model, preprocessor, outputs_fn: Callable, pair: bool = False,
                 reading: LongTextReading | None = None, aggregate: str = "mean"):
        super().__init__(model, preprocessor, outputs_fn)
        self.pair = pair
        self.reading = reading or LongTextReading()
        self.aggregate = aggregate

    def preprocess(self, text, text_b=None) -> dict:
        """Strings -> packed int32 inputs (the preprocessor's, on the host CPU); read in
        windows, one row per window and `text_index`, the text each belongs to."""
        if not self.reading.windowed:
            return self.preprocessor(text if text_b is None else (text, text_b))
        packed, batch = self.windows(text, text_b)
        return {**packed, "text_index": batch.example}

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
            segments = [self.preprocessor.tokenize(t)
                        for t in ([text] if text_b is None else [text, text_b])]
            batch = truncation_stats(segments, self.preprocessor.max_length)
            result = self.run(self.preprocessor.pack(segments))
        return {**result, "num_tokens": batch.num_tokens, "num_windows": batch.num_windows,
                "truncated": batch.truncated}

    def text_endpoint(self) -> Endpoint:
        """`serving_default`: `text` (and `text_b`) strings -> the task's outputs."""
        if self.pair:
            def serving_default(text, text_b):
                return self.read(text, text_b)
        else:
            def serving_default(text):
                return self.read(text)
        return serving_default, self._text_specs()

    def preprocess_endpoint(self) -> Endpoint:
        """`preprocess`: `text` (and `text_b`) -> the model inputs made of them."""
        if self.pair:
            return self.preprocess, self._text_specs()

        def preprocess(text):
            return self.preprocess(text)
        return preprocess, self._text_specs()

    def _text_specs(self) -> list[tf.TensorSpec]:
        names = ("text", "text_b") if self.pair else ("text",)
        return [tf.TensorSpec([None], tf.string, name=name) for name in names]

    def warmup_inputs(self, texts) -> dict:
        """A warmup request: `texts` (and, for pairs, `texts` reversed as `text_b`)."""
        texts = np.asarray(texts, dtype=object)
        inputs = {"text": texts}
        if self.pair:
            inputs["text_b"] = texts[::-1]
        return inputs

    def litert_graph(self):
        """The LiteRT graph of a sentence-level export (`litert_windows` for texts read in
        windows)."""
        from keras_bert.export.litert_graph import LiteRTGraph
        from keras_bert.export.litert_windows import WindowedGraph

        graph = WindowedGraph if self.reading.windowed else LiteRTGraph
        return graph(self, pair=self.pair)


def xla_call(model, longest: int, per_token: bool) -> Callable:
    """`inputs -> outputs` of `model` XLA-compiled (`jit_compile`) in the calling graph,
    the inputs padded to few shapes (`pad_to_bucket`) and the outputs cut back."""
    compiled = tf.function(lambda inputs: model(inputs, training=False),
                           jit_compile=True, autograph=False)

    def call(inputs: dict):
        batch = tf.shape(inputs["input_word_ids"])[0]
        length = tf.shape(inputs["input_word_ids"])[1]

        def unpad(tensor):
            return tensor[:batch, :length] if per_token else tensor[:batch]
        return tf.nest.map_structure(unpad, compiled(pad_to_bucket(inputs, longest)))
    return call


def pad_to_bucket(inputs: dict, longest: int) -> dict:
    """The packed inputs padded so that an XLA-compiled network sees few shapes: positions
    with 0 (padding, masked out) to the next of `length_buckets(longest)`, and rows (copies
    of the first) to the next power of two. The caller keeps the first rows of the outputs.
    (The graph's form of `network_call.padded_shape`, which eager backends pad to.)
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


