"""A development model server that speaks TensorFlow Serving's protocols.

`ModelServer(base_dir, model_name, ...)` serves the latest version under `base_dir` (picking up
new versions as they appear, replaying each one's warmup requests before it becomes
AVAILABLE) over

- gRPC: `PredictionService.Predict`, `PredictionService.GetModelMetadata` and
  `ModelService.GetModelStatus`, on the servicers `tensorflow-serving-api` generates;
- REST: TF Serving's `/v1/models/...` API (see `keras_bert.devserver.rest`).

It loads each version as TF Serving does (a Session-based `SavedModelBundle`: SaverDef
restore, `signature_def` tensors, TF Text as kernel libraries only; see
`keras_bert.devserver.model_store`), so it serves only what TensorFlow Serving can. It is a
development server for local work and tests; production runs the official
`tensorflow/serving` images (see `export/README.md`).
"""

from __future__ import annotations

import functools
import logging
from concurrent import futures

import grpc
import tensorflow as tf
from google.protobuf import any_pb2
from tensorflow_serving.apis import (
    get_model_metadata_pb2,
    model_service_pb2_grpc,
    predict_pb2,
    prediction_service_pb2_grpc,
)

from keras_bert.devserver.model_store import ModelStore, status_response
from keras_bert.devserver.rest import RestServer
from keras_bert.devserver.served_version import (
    DEFAULT_MAX_CONCURRENT_CALLS,
    DEFAULT_MAX_MESSAGE_BYTES,
    DEFAULT_MAX_ROWS,
    DEFAULT_MAX_STRING_BYTES,
    DEFAULT_SIGNATURE,
    ServingError,
    invalid,
    tensor_proto_to_array,
)
from keras_bert.export.litert_runtime import available_cpus
from keras_bert.export.session_bundle import session_config

log = logging.getLogger("keras_bert.devserver")


def _rpc(method):
    """Turns `ServingError`s into gRPC statuses and anything else into INTERNAL (logged)."""
    @functools.wraps(method)
    def wrapper(self, request, context):
        try:
            return method(self, request, context)
        except ServingError as e:
            error = (e.code, e.message)
        except Exception:  # noqa: BLE001 - never a stack trace to the client
            log.exception("grpc: %s failed", method.__name__)
            error = (grpc.StatusCode.INTERNAL, "internal error; see the server log")
        context.abort(*error)
    return wrapper


def _version(model_spec) -> int | None:
    if model_spec.HasField("version_label"):
        raise ServingError(grpc.StatusCode.NOT_FOUND,
                           f"version label '{model_spec.version_label}' is not configured for "
                           f"model '{model_spec.name}'")
    return model_spec.version.value if model_spec.HasField("version") else None


class PredictionServicer(prediction_service_pb2_grpc.PredictionServiceServicer):
    """`Predict` and `GetModelMetadata` (Classify, Regress, MultiInference: UNIMPLEMENTED)."""

    def __init__(self, store: ModelStore):
        self.store = store

    @_rpc
    def Predict(self, request, context):  # noqa: N802 - gRPC's naming
        """Runs a signature (default `serving_default`) of the requested/latest version."""
        spec = request.model_spec
        served = self.store.get(spec.name, _version(spec))
        signature = served.signature(spec.signature_name or DEFAULT_SIGNATURE)
        inputs = {}
        for name, proto in request.inputs.items():
            expected = signature.inputs.get(name)
            if expected is not None and proto.dtype != expected.dtype.as_datatype_enum:
                got = tf.dtypes.as_dtype(proto.dtype).name if proto.dtype else "DT_INVALID"
                raise invalid(f"input '{name}' must be {expected.dtype.name}, got {got}")
            inputs[name] = tensor_proto_to_array(proto, name)
        outputs = served.run(signature, inputs, list(request.output_filter))
        response = predict_pb2.PredictResponse()
        response.model_spec.name = spec.name
        response.model_spec.version.value = served.version
        response.model_spec.signature_name = signature.name
        for name, value in outputs.items():
            response.outputs[name].CopyFrom(tf.make_tensor_proto(value))
        return response

    @_rpc
    def GetModelMetadata(self, request, context):  # noqa: N802 - gRPC's naming
        """The `signature_def` metadata: a packed `SignatureDefMap`, as TF Serving sends it."""
        spec = request.model_spec
        served = self.store.get(spec.name, _version(spec))
        fields = list(request.metadata_field)
        if not fields:
            raise invalid("GetModelMetadataRequest must name at least one metadata_field "
                          "(the server knows 'signature_def')")
        for field in fields:
            if field != "signature_def":
                raise invalid(f"metadata field '{field}' is not supported; the server knows "
                              f"'signature_def'")
        response = get_model_metadata_pb2.GetModelMetadataResponse()
        response.model_spec.name = spec.name
        response.model_spec.version.value = served.version
        signature_map = get_model_metadata_pb2.SignatureDefMap()
        for key, value in served.signature_defs.items():
            signature_map.signature_def[key].CopyFrom(value)
        packed = any_pb2.Any()
        packed.Pack(signature_map)
        response.metadata["signature_def"].CopyFrom(packed)
        return response


class ModelServicer(model_service_pb2_grpc.ModelServiceServicer):
    """`GetModelStatus` (HandleReloadConfigRequest: UNIMPLEMENTED)."""

    def __init__(self, store: ModelStore):
        self.store = store

    @_rpc
    def GetModelStatus(self, request, context):  # noqa: N802 - gRPC's naming
        """States of the model's versions (START, LOADING, AVAILABLE, UNLOADING, END)."""
        spec = request.model_spec
        return status_response(self.store, spec.name, _version(spec))


def warn_of_one_core(intra_op_threads: int, batch_threads: int, cores: int | None = None) -> bool:
    """Logs a warning (and returns True) when merging requests would leave cores idle: merged
    calls run `batch_threads` at a time, each op on `intra_op_threads` thread(s), on a host
    of `cores` (default: the CPUs this process may use). One intra-op thread and one batch
    thread keep one core working: with 2 clients on 2 cores that answered 128-piece texts at
    0.90x the defaults, where merging off gave 1.54x (bench/RESULTS.md, "The Session's
    thread pools"). 0 intra-op threads (TensorFlow's default) uses every core."""
    cores = cores or available_cpus()
    busy = intra_op_threads * batch_threads
    if intra_op_threads == 0 or busy >= cores:
        return False
    log.warning("merged calls run %d at a time with %d intra-op thread(s) each: about %d of "
                "%d cores work. Serve with --no-batching, or --batch-threads %d, to use them "
                "all", batch_threads, intra_op_threads, busy, cores,
                -(-cores // intra_op_threads))
    return True


class ModelServer:
    """gRPC + REST serving of the versions of one model under `base_dir`.

    Args:
      base_dir: the model's base directory (`BASE/<N>/` SavedModels).
      model_name: the name clients use (`model_spec.name`, `/v1/models/NAME`).
      host: the address both servers bind (default loopback).
      grpc_port, rest_port: ports (0 picks a free one; None disables that protocol).
      poll_seconds: how often `base_dir` is scanned for new versions.
      warmup: replay `assets.extra/tf_serving_warmup_requests` when a version loads.
      max_message_bytes: the largest request message (gRPC receive limit, REST body limit).
      max_string_bytes: the largest string element of a request (INVALID_ARGUMENT beyond).
      max_rows: the most rows (texts) in one request (INVALID_ARGUMENT beyond).
      max_concurrent_calls: model calls running at once; other requests wait their turn.
      workers: threads answering gRPC requests (REST uses a thread per connection).
      batching: merge concurrent requests to a signature into one call (like TF Serving's
        `--enable_batching`); `max_batch_size`, `batch_timeout_s` (how long a batch waits
        for more requests; 0 takes what is queued) and `batch_threads` tune it.
      intra_op_threads, inter_op_threads: the Session's thread pools, as TF Serving's
        `--tensorflow_intra_op_parallelism` / `--tensorflow_inter_op_parallelism` (0:
        TensorFlow's default, every core; `session_bundle.session_config`).
    """

    def __init__(self, base_dir: str, model_name: str = "bert", host: str = "127.0.0.1",
                 grpc_port: int | None = 8500, rest_port: int | None = 8501,
                 poll_seconds: float = 2.0, warmup: bool = True,
                 max_message_bytes: int = DEFAULT_MAX_MESSAGE_BYTES,
                 max_string_bytes: int = DEFAULT_MAX_STRING_BYTES, workers: int = 16,
                 batching: bool = True, max_batch_size: int = 32, batch_timeout_s: float = 0.0,
                 batch_threads: int = 1, max_rows: int = DEFAULT_MAX_ROWS,
                 max_concurrent_calls: int = DEFAULT_MAX_CONCURRENT_CALLS,
                 intra_op_threads: int = 0, inter_op_threads: int = 0):
        threads = session_config(intra_op_threads, inter_op_threads)  # checked before loading
        if batching:
            warn_of_one_core(intra_op_threads, batch_threads)
        options = dict(max_batch_size=max_batch_size, timeout_s=batch_timeout_s,
                       threads=batch_threads) if batching else None
        self.store = ModelStore(base_dir, model_name, poll_seconds, warmup, max_string_bytes,
                                options, max_rows, max_concurrent_calls, threads)
        self.host = host
        self._grpc_port, self._rest_port = grpc_port, rest_port
        self.max_message_bytes = max_message_bytes
        self.workers = workers
        self.grpc_server = None
        self.rest_server: RestServer | None = None
        self.grpc_port: int | None = None

    @property
    def grpc_address(self) -> str | None:
        """`host:port` of the gRPC server, once started."""
        return f"{self.host}:{self.grpc_port}" if self.grpc_port else None

    @property
    def rest_url(self) -> str | None:
        """`http://host:port` of the REST server, once started."""
        return f"http://{self.host}:{self.rest_server.port}" if self.rest_server else None

    def start(self) -> ModelServer:
        """Loads the latest version, then listens (returns at once; serving is threaded)."""
        self.store.start()
        try:
            if self._grpc_port is not None:
                self._start_grpc()
            if self._rest_port is not None:
                self.rest_server = RestServer(self.store, self.host, self._rest_port,
                                              self.max_message_bytes).start()
        except BaseException:
            self.stop()
            raise
        return self

    def _start_grpc(self) -> None:
        limit = self.max_message_bytes
        server = grpc.server(futures.ThreadPoolExecutor(self.workers,
                                                        thread_name_prefix="grpc-worker"),
                             options=[("grpc.max_receive_message_length", limit),
                                      ("grpc.max_send_message_length", limit),
                                      ("grpc.so_reuseport", 0)])
        prediction_service_pb2_grpc.add_PredictionServiceServicer_to_server(
            PredictionServicer(self.store), server)
        model_service_pb2_grpc.add_ModelServiceServicer_to_server(ModelServicer(self.store),
                                                                  server)
        try:
            port = server.add_insecure_port(f"{self.host}:{self._grpc_port}")
        except RuntimeError as e:
            raise OSError(f"cannot listen on {self.host}:{self._grpc_port} (gRPC): {e}") from None
        if not port:
            raise OSError(f"cannot listen on {self.host}:{self._grpc_port} (gRPC)")
        server.start()
        self.grpc_server, self.grpc_port = server, port

    def stop(self, grace: float = 2.0) -> None:
        """Stops both servers (in-flight gRPC calls get `grace` seconds) and the poller."""
        rest_server, self.rest_server = self.rest_server, None
        grpc_server, self.grpc_server = self.grpc_server, None
        if rest_server is not None:
            rest_server.stop()
        if grpc_server is not None:
            grpc_server.stop(grace).wait(grace + 5)
        self.store.stop()

    def __enter__(self) -> ModelServer:
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()
