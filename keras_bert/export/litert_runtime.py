"""`LiteRTModel`: a LiteRT export loaded in LiteRT's interpreter, texts in, answers out.

The interpreter is `ai_edge_litert`'s (what LiteRT users deploy), with TF Text's TFLite
kernels registered from `tensorflow_text.tflite_registrar` (the tokenizer ops inside the
file); without `ai-edge-litert`, TensorFlow's own `tf.lite` interpreter, which takes the
same registerers. One interpreter per model, built once: each signature resizes and
allocates its tensors when an input's shape (the batch size; ids: their length) changes,
and keeps them while it stays the same (`SignatureCall`).

It needs neither Keras nor the rest of this package: a file and its metadata (carried in
the flatbuffer, `keras_bert` entry) are enough to answer with label names.
"""

from __future__ import annotations

import json
import os

import numpy as np

MODEL_FILE = "model.tflite"
METADATA_NAME = "keras_bert"  # the flatbuffer metadata entry holding the export's JSON
FORMAT = "keras_bert.litert/1"


def read_metadata(blob: bytes, where: str) -> dict:
    """The keras_bert metadata carried in the LiteRT flatbuffer `blob` (read from
    `where`); one `ValueError` line for a file another tool wrote, or no LiteRT file."""
    from ai_edge_litert import schema_py_generated as schema

    if len(blob) < 8 or blob[4:8] != b"TFL3":
        raise ValueError(f"{where}: not a LiteRT (.tflite) file")
    model = schema.Model.GetRootAs(blob, 0)
    for i in range(model.MetadataLength()):
        entry = model.Metadata(i)
        if entry.Name() == METADATA_NAME.encode():
            data = bytes(model.Buffers(entry.Buffer()).DataAsNumpy())
            metadata = json.loads(data.decode("utf-8"))
            if metadata.get("format") != FORMAT:
                raise ValueError(f"{where}: keras_bert LiteRT format "
                                 f"{metadata.get('format')!r}; this version reads {FORMAT}")
            return metadata
    raise ValueError(f"{where}: a LiteRT file written by another tool (no keras_bert "
                     "metadata); LiteRTModel reads files written by `keras-bert export "
                     "--format litert`")


def available_cpus() -> int:
    """The CPUs this process may run on (its affinity, where the OS has one)."""
    if hasattr(os, "sched_getaffinity"):
        return len(os.sched_getaffinity(0))
    return os.cpu_count() or 1


def make_interpreter(blob: bytes, num_threads: int | None = None):
    """A LiteRT interpreter over `blob` with TF Text's TFLite kernels registered, running
    on `num_threads` threads (None: every CPU this process may run on). LiteRT's own
    default is one thread, and its XNNPACK kernels at batch 1 answered a 34-token MiniLM
    request 1.55x faster on two (bench/RESULTS.md, "LiteRT float32 against ONNX Runtime");
    ONNX Runtime, the peer, takes every core by default too."""
    from tensorflow_text import tflite_registrar

    if num_threads is None:
        num_threads = available_cpus()
    if isinstance(num_threads, bool) or not isinstance(num_threads, int) or num_threads < 1:
        raise ValueError(f"num_threads must be a whole number of threads >= 1, got "
                         f"{num_threads!r}")

    try:
        from ai_edge_litert.interpreter import InterpreterWithCustomOps
    except ImportError:  # TensorFlow's own interpreter takes the same registerers
        from tensorflow.lite.python.interpreter import InterpreterWithCustomOps
    return InterpreterWithCustomOps(
        custom_op_registerers=tflite_registrar.SELECT_TFTEXT_OPS, model_content=blob,
        num_threads=num_threads)


class LiteRTModel:
    """A LiteRT export (a version directory or its `model.tflite`) ready to answer.

    Args:
      path: the version directory `keras-bert export --format litert` wrote, or the file.
      num_threads: the interpreter's threads (None: every CPU this process may run on;
        LiteRT's own default would be one).

    `model(texts)` runs `serving_default` (a list of strings; span QA:
    `model(questions, contexts)`) and gives its outputs as NumPy arrays;
    `model.predict(texts)` gives one dict per row with strings as `str`;
    `model.run(signature, **inputs)` runs any signature.
    """

    def __init__(self, path: str, num_threads: int | None = None):
        file = os.path.join(path, MODEL_FILE) if os.path.isdir(path) else path
        if not os.path.isfile(file):
            raise FileNotFoundError(f"{path}: no {MODEL_FILE}")
        with open(file, "rb") as f:
            blob = f.read()
        self.path = file
        self.metadata = read_metadata(blob, file)
        self.interpreter = make_interpreter(blob, num_threads)
        self._runners = {}

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def close(self) -> None:
        """Drops the interpreter (its memory is freed when no runner holds it)."""
        self._runners.clear()
        self.interpreter = None

    @property
    def signatures(self) -> dict:
        """`{signature: {"inputs": [...], "outputs": [...]}}` of the file."""
        return self.metadata["signatures"]

    @property
    def labels(self) -> list[str] | None:
        """The label names by id (labelled kinds), from the file's metadata."""
        return self.metadata["labels"]

    def run(self, signature: str, **inputs) -> dict[str, np.ndarray]:
        """Runs `signature` on NumPy inputs named as its inputs."""
        if signature not in self.signatures:
            raise ValueError(f"{self.path} has no signature {signature!r}; it has "
                             f"{', '.join(sorted(self.signatures))}")
        expected = sorted(self.signatures[signature]["inputs"])
        if sorted(inputs) != expected:
            raise ValueError(f"{signature} takes {', '.join(expected)}, got "
                             f"{', '.join(sorted(inputs)) or 'nothing'}")
        rows = {name: np.shape(value)[0] for name, value in inputs.items() if np.ndim(value)}
        if len(set(rows.values())) > 1:  # the graph would read the shortest, silently
            raise ValueError(f"{signature}'s inputs must have as many rows each, got "
                             + ", ".join(f"{n} {name}" for name, n in sorted(rows.items())))
        if signature not in self._runners:
            self._runners[signature] = SignatureCall(
                self.interpreter.get_signature_runner(signature))
        return self._runners[signature](inputs)

    @property
    def text_inputs(self) -> list[str]:
        """The string inputs of `serving_default`, in the SavedModel's order (`text`; span
        QA: `question`, `context`)."""
        return self.metadata.get("text_inputs", ["text"])

    def __call__(self, *texts, **named) -> dict[str, np.ndarray]:
        """`serving_default` on strings: a string or a list of strings per text input, in
        order (`model(texts)`; span QA: `model(questions, contexts)`) or by name
        (`model(question=..., context=...)`)."""
        if "serving_default" not in self.signatures:
            raise ValueError(f"{self.path} takes token ids (exported with --litert-tokenizer "
                             "none): tokenize with the model's tokenizer and call "
                             "run('serve_ids', ...)")
        names = self.text_inputs
        if texts and named:
            raise TypeError("give the texts in order or by name, not both")
        if texts and len(texts) != len(names):
            raise TypeError(f"serving_default takes {len(names)} text input(s) "
                            f"({', '.join(names)}), got {len(texts)}")
        arrays = {name: text_array(value) for name, value in
                  (zip(names, texts, strict=True) if texts else named.items())}
        return self.run("serving_default", **arrays)

    def predict(self, *texts, **named) -> list[dict]:
        """One answer per row (the texts as `__call__` takes them): each output's row,
        strings decoded, arrays as lists."""
        outputs = self(*texts, **named)
        count = len(next(iter(outputs.values())))
        return [{name: _plain(value[row]) for name, value in outputs.items()}
                for row in range(count)]

    def warm(self) -> None:
        """Runs each signature once (a file that cannot answer fails here)."""
        if "serving_default" in self.signatures:
            self(*[["Call me Ishmael."]] * len(self.text_inputs))
        else:
            ids = np.array([[self.metadata["tokenizer"]["cls_id"],
                             self.metadata["tokenizer"]["sep_id"]]], np.int32)
            self.run("serve_ids", input_word_ids=ids, input_mask=np.ones_like(ids),
                     input_type_ids=np.zeros_like(ids))


class SignatureCall:
    """Runs one signature of an interpreter, allocating its tensors only when an input's
    shape changes.

    LiteRT's `SignatureRunner` resizes the inputs and allocates on every call. With a
    string input (a dynamic tensor, whatever its shape) that allocation re-prepares every
    op of the graph, network included, before the interpreter prepares again what the new
    text changes: 1-5% of an int8 tagger's or span QA's answer against LiteRT's runner
    (bench/RESULTS.md, "LiteRT taggers and span QA against ONNX Runtime int8"). Resizing
    only on a new shape is the interpreter's own contract (its C++ API allocates after a
    resize; ops whose inputs change size inside a call are prepared again by the
    interpreter). It goes through the runner's wrapper (`_interpreter_wrapper`), which
    `ai-edge-litert` and `tf.lite` both have; a runner without it is called as it is.
    """

    def __init__(self, runner):
        self.runner = runner
        parts = ("_interpreter_wrapper", "_subgraph_index", "_inputs", "_outputs")
        self.direct = all(hasattr(runner, name) for name in parts)
        self.shapes: dict[str, tuple] = {}

    def __call__(self, inputs: dict) -> dict[str, np.ndarray]:
        if not self.direct:
            return self.runner(**inputs)
        wrapper, index = self.runner._interpreter_wrapper, self.runner._subgraph_index
        tensors = self.runner._inputs
        arrays = {name: np.asarray(value) for name, value in inputs.items()}
        try:
            if any(self.shapes.get(n) != a.shape for n, a in arrays.items()):
                for name, array in arrays.items():
                    wrapper.ResizeInputTensor(tensors[name], np.array(array.shape, np.int32),
                                              False, index)
                wrapper.AllocateTensors(index)
                self.shapes = {n: a.shape for n, a in arrays.items()}
            for name, array in arrays.items():
                wrapper.SetTensor(tensors[name], array, index)
            wrapper.Invoke(index)
        except Exception:
            self.shapes = {}  # a failed call allocates afresh next time
            raise
        return {name: wrapper.GetTensor(tensor, index) for name, tensor in self.runner._outputs}


def text_array(texts) -> np.ndarray:
    """`texts` (a `str` or a list of `str`) as the `[batch]` object array LiteRT takes; one
    `TypeError` line for anything else."""
    if isinstance(texts, str):
        texts = [texts]
    if isinstance(texts, np.ndarray) and texts.dtype.kind in "OSU":
        texts = texts.tolist()
    if not isinstance(texts, (list, tuple)) or not all(isinstance(t, str) for t in texts):
        kinds = sorted({type(t).__name__ for t in texts}) if isinstance(
            texts, (list, tuple)) else [type(texts).__name__]
        raise TypeError(f"texts must be a string or a list of strings, got {', '.join(kinds)}")
    return np.array([t.encode("utf-8", "surrogatepass") for t in texts], dtype=object)


def _plain(value):
    if isinstance(value, bytes):
        return value.decode("utf-8", "replace")
    if isinstance(value, np.ndarray):
        return [_plain(v) for v in value] if value.dtype == object else value.tolist()
    return value.item() if isinstance(value, np.generic) else value
