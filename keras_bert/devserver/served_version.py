"""One loaded version of a model: a `SessionBundle` (TF Serving's Session path), its
signatures, request validation against their input specs, and the server's limits.

Every problem a client can cause is a `ServingError` carrying the gRPC status code the
transports (`server.py`, `rest.py`) report. No Keras or model code.
"""

from __future__ import annotations

import dataclasses
import functools
import re
import threading

import grpc
import numpy as np
import tensorflow as tf

from keras_bert.devserver.batcher import Batcher
from keras_bert.export.session_bundle import SessionBundle

DEFAULT_SIGNATURE = "serving_default"
# One string element of a request (a BERT text is truncated at 512 tokens: a few KiB).
DEFAULT_MAX_STRING_BYTES = 1 << 20
# Whole request messages (gRPC's max receive length; the REST body limit).
DEFAULT_MAX_MESSAGE_BYTES = 64 << 20
# Rows (texts) in one request: bounds the activations of one model call.
DEFAULT_MAX_ROWS = 256
# Model calls running at once (the others wait): with the limits above, bounds the memory
# of a server under any number of clients (measured in bench/RESULTS.md: serve_abuse).
DEFAULT_MAX_CONCURRENT_CALLS = 4


class ServingError(Exception):
    """A request the server refuses: a gRPC status code and a message for the client."""

    def __init__(self, code: grpc.StatusCode, message: str):
        super().__init__(message)
        self.code = code
        self.message = message


def not_found(message: str) -> ServingError:
    """A NOT_FOUND `ServingError`."""
    return ServingError(grpc.StatusCode.NOT_FOUND, message)


def invalid(message: str) -> ServingError:
    """An INVALID_ARGUMENT `ServingError`."""
    return ServingError(grpc.StatusCode.INVALID_ARGUMENT, message)


@dataclasses.dataclass(frozen=True)
class InputSpec:
    """Dtype and shape (None for unknown dims) of one signature input."""

    name: str
    dtype: tf.DType
    shape: tuple


@dataclasses.dataclass
class Signature:
    """A callable signature of a loaded version, with its input specs and output names."""

    name: str
    fn: object
    inputs: dict[str, InputSpec]
    outputs: list[str]
    batcher: Batcher | None = None


def _shape(tensor_shape) -> tuple:
    return tuple(None if d.size < 0 else int(d.size) for d in tensor_shape.dim)


def clean_tf_error(message: str) -> str:
    """A TensorFlow runtime error without graph node names, stack traces or op suffixes."""
    keep = []
    for line in message.splitlines():
        stripped = line.strip()
        if (not stripped or stripped.startswith(("Graph execution error", "Detected at node",
                                                 "<stack traces", "File ", "[[")) or
                line.startswith("  ")):
            continue
        keep.append(re.sub(r"\s*\[Op:[^\]]*\]$", "", stripped))
    return " ".join(keep) or "the model could not run this request"


class ServedVersion:
    """One loaded version: its `SessionBundle` (its Session built with `config`: the thread
    pools, `session_bundle.session_config`), signatures and `SignatureDef`s."""

    def __init__(self, version: int, path: str, max_string_bytes: int = DEFAULT_MAX_STRING_BYTES,
                 batching: dict | None = None, max_rows: int = DEFAULT_MAX_ROWS,
                 gate: threading.Semaphore | None = None,
                 config: tf.compat.v1.ConfigProto | None = None):
        self.version = version
        self.path = path
        self.max_string_bytes = max_string_bytes
        self.max_rows = max_rows
        self.gate = gate or threading.BoundedSemaphore(DEFAULT_MAX_CONCURRENT_CALLS)
        self.bundle = SessionBundle(path, config=config)
        self.signature_defs = self.bundle.signature_defs
        self.signatures = {}
        for name, sig_def in self.signature_defs.items():
            inputs = {key: InputSpec(key, tf.dtypes.as_dtype(info.dtype), _shape(info.tensor_shape))
                      for key, info in sig_def.inputs.items()}
            fn = functools.partial(self.bundle.run, name)
            signature = Signature(name, fn, inputs, sorted(sig_def.outputs))
            if batching is not None and inputs and all(spec.shape for spec in inputs.values()):
                signature.batcher = Batcher(functools.partial(self._call, signature),
                                            **batching)
            self.signatures[name] = signature
        self.warmup_requests = 0

    def close(self) -> None:
        """Stops the batchers (requests already queued still finish). The session is closed
        when the last request holding this version lets go of it."""
        for signature in self.signatures.values():
            if signature.batcher is not None:
                signature.batcher.stop()

    def signature(self, name: str | None) -> Signature:
        """The signature called `name` (default `serving_default`), else NOT_FOUND."""
        name = name or DEFAULT_SIGNATURE
        if name not in self.signatures:
            raise not_found(f"signature '{name}' not found in version {self.version}; it has: "
                            f"{', '.join(sorted(self.signatures))}")
        return self.signatures[name]

    def validate(self, signature: Signature, inputs: dict[str, np.ndarray]) -> None:
        """Raises INVALID_ARGUMENT naming the first problem with `inputs`."""
        expected = set(signature.inputs)
        missing, extra = sorted(expected - set(inputs)), sorted(set(inputs) - expected)
        takes = f"signature '{signature.name}' takes: {', '.join(sorted(expected))}"
        if missing:
            raise invalid(f"missing input(s) {', '.join(map(repr, missing))}; {takes}")
        if extra:
            raise invalid(f"unexpected input(s) {', '.join(map(repr, extra))}; {takes}")
        batch = {}
        for name, spec in signature.inputs.items():
            value = inputs[name]
            got = _dtype_of(value)
            if got != spec.dtype:
                raise invalid(f"input '{name}' must be {spec.dtype.name}, got {got.name}")
            if value.ndim != len(spec.shape) or any(
                    want is not None and want != have for want, have in zip(spec.shape, value.shape,
                                                                            strict=False)):
                raise invalid(f"input '{name}' has shape {list(value.shape)}; the signature "
                              f"expects {[-1 if d is None else d for d in spec.shape]}")
            if value.ndim and value.shape[0] == 0:
                raise invalid(f"input '{name}' is an empty batch (0 elements)")
            if value.ndim and value.shape[0] > self.max_rows:
                raise invalid(f"input '{name}' has {value.shape[0]} rows; the limit is "
                              f"{self.max_rows} rows per request (serve --max-request-rows)")
            if value.ndim:
                batch[name] = value.shape[0]
            if spec.dtype == tf.string and value.size:
                longest = max(len(s) for s in value.ravel())
                if longest > self.max_string_bytes:
                    raise invalid(f"input '{name}' holds a string of {longest} bytes; the limit "
                                  f"is {self.max_string_bytes} bytes (serve --max-string-kb)")
        if len(set(batch.values())) > 1:
            raise invalid(f"inputs have different batch sizes: {batch}")

    def run(self, signature: Signature | str | None, inputs: dict[str, np.ndarray],
            output_filter=()) -> dict[str, np.ndarray]:
        """Validates `inputs` and runs the signature; returns the (filtered) outputs."""
        if not isinstance(signature, Signature):
            signature = self.signature(signature)
        self.validate(signature, inputs)
        unknown = sorted(set(output_filter) - set(signature.outputs))
        if unknown:
            raise invalid(f"output_filter names unknown output(s) {', '.join(map(repr, unknown))}"
                          f"; signature '{signature.name}' has: {', '.join(signature.outputs)}")
        if signature.batcher is not None:
            outputs = signature.batcher(inputs)
        else:
            outputs = self._call(signature, inputs)
        keep = set(output_filter) or set(outputs)
        return {name: value for name, value in outputs.items() if name in keep}

    def _call(self, signature: Signature, inputs: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
        feed = {name: np.asarray(value, dtype=signature.inputs[name].dtype.as_numpy_dtype)
                for name, value in inputs.items()}
        try:
            with self.gate:
                return signature.fn(feed)
        except tf.errors.InvalidArgumentError as e:
            raise invalid(clean_tf_error(e.message)) from None


def _dtype_of(value: np.ndarray) -> tf.DType:
    if value.dtype.kind in "OSU":
        return tf.string
    return tf.dtypes.as_dtype(value.dtype)


def tensor_proto_to_array(proto, name: str) -> np.ndarray:
    """A request `TensorProto` as an array; INVALID_ARGUMENT if it is malformed."""
    try:
        return tf.make_ndarray(proto)
    except Exception as e:  # noqa: BLE001 - any malformed proto is the client's problem
        raise invalid(f"input '{name}' is not a valid TensorProto: {e}") from None
