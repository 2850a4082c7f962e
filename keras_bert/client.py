"""Clients for TensorFlow Serving (or `keras-bert serve`), over gRPC or REST.

    client = GrpcClient("127.0.0.1:8500", "bert")      # or RestClient("http://127.0.0.1:8501", "bert")
    client.predict(["Call me Ishmael."])               # [{"embedding": [...], "pooled_output": [...]}]
    client.status()                                    # TF Serving's GetModelStatus JSON
    client.metadata()                                  # TF Serving's GetModelMetadata JSON

`predict` sends raw strings to a text signature (`text`, and `text_b` for pair tasks) and
returns one dict of Python values per text (floats, ints, lists; strings as `str`, or
`bytes` when they are not valid UTF-8). `predict_columns` sends any named inputs. Server
errors raise `ServerError` with TF Serving's status code name and message.
"""

from __future__ import annotations

import base64
import http.client
import json
import threading
import urllib.parse

import numpy as np

DEFAULT_SIGNATURE = "serving_default"
MAX_MESSAGE_BYTES = 64 << 20

# HTTP statuses TF Serving answers, back to their gRPC code names.
_CODES = {400: "INVALID_ARGUMENT", 404: "NOT_FOUND", 412: "FAILED_PRECONDITION",
          429: "RESOURCE_EXHAUSTED", 500: "INTERNAL", 501: "UNIMPLEMENTED",
          503: "UNAVAILABLE", 504: "DEADLINE_EXCEEDED"}


class ServerError(RuntimeError):
    """An error answer: `code` (e.g. "NOT_FOUND"), `message`, and `http_status` over REST."""

    def __init__(self, code: str, message: str, http_status: int | None = None):
        super().__init__(f"{code}: {message}")
        self.code = code
        self.message = message
        self.http_status = http_status


def _text_inputs(texts, text_b) -> dict[str, list[str]]:
    texts = [texts] if isinstance(texts, str) else list(texts)
    inputs = {"text": texts}
    if text_b is not None:
        text_b = [text_b] if isinstance(text_b, str) else list(text_b)
        if len(text_b) != len(texts):
            raise ValueError(f"text_b has {len(text_b)} texts; text has {len(texts)}")
        inputs["text_b"] = text_b
    return inputs


def _python(value):
    """Numpy/JSON values as plain Python values (bytes decoded when valid UTF-8)."""
    if isinstance(value, np.ndarray):
        value = value.tolist()
    elif isinstance(value, np.generic):
        value = value.item()
    if isinstance(value, list):
        return [_python(x) for x in value]
    if isinstance(value, bytes):
        try:
            return value.decode("utf-8")
        except UnicodeDecodeError:
            return value
    if isinstance(value, dict) and list(value) == ["b64"]:
        return _python(base64.b64decode(value["b64"]))
    return value


def rows(columns: dict, count: int) -> list[dict]:
    """`{name: batch}` -> one `{name: value}` per batch element (names sorted)."""
    return [{name: _python(columns[name][i]) for name in sorted(columns)} for i in range(count)]


class GrpcClient:
    """PredictionService/ModelService over gRPC (`host_port` like "127.0.0.1:8500")."""

    def __init__(self, host_port: str, model_name: str = "bert", timeout: float = 30.0,
                 max_message_bytes: int = MAX_MESSAGE_BYTES):
        import grpc

        from keras_bert.serving_api import serving_apis

        model_service_pb2_grpc, prediction_service_pb2_grpc = serving_apis(
            "the gRPC client", "model_service_pb2_grpc", "prediction_service_pb2_grpc")

        self.model_name = model_name
        self.timeout = timeout
        self.channel = grpc.insecure_channel(
            host_port, options=[("grpc.max_send_message_length", max_message_bytes),
                                ("grpc.max_receive_message_length", max_message_bytes)])
        self._predictions = prediction_service_pb2_grpc.PredictionServiceStub(self.channel)
        self._models = model_service_pb2_grpc.ModelServiceStub(self.channel)

    def _spec(self, spec, version: int | None, signature: str | None = None) -> None:
        spec.name = self.model_name
        if version is not None:
            spec.version.value = int(version)
        if signature:
            spec.signature_name = signature

    def _call(self, method, request):
        import grpc

        try:
            return method(request, timeout=self.timeout)
        except grpc.RpcError as e:
            raise ServerError(e.code().name, e.details() or "") from None

    def predict_columns(self, inputs: dict, signature: str = DEFAULT_SIGNATURE,
                        version: int | None = None, output_filter=()) -> dict[str, np.ndarray]:
        """Runs `signature` on named inputs (array-likes); returns the output arrays."""
        import tensorflow as tf
        from tensorflow_serving.apis import predict_pb2

        request = predict_pb2.PredictRequest()
        self._spec(request.model_spec, version, signature)
        for name, value in inputs.items():
            if isinstance(value, list) and value and isinstance(value[0], str):
                value = np.array([v.encode("utf-8") for v in value], dtype=object)
            request.inputs[name].CopyFrom(tf.make_tensor_proto(value))
        request.output_filter.extend(output_filter)
        response = self._call(self._predictions.Predict, request)
        return {name: tf.make_ndarray(proto) for name, proto in response.outputs.items()}

    def predict(self, texts, text_b=None, signature: str = DEFAULT_SIGNATURE,
                version: int | None = None) -> list[dict]:
        """One dict of outputs per text."""
        inputs = _text_inputs(texts, text_b)
        return rows(self.predict_columns(inputs, signature, version), len(inputs["text"]))

    def metadata(self, version: int | None = None) -> dict:
        """`GetModelMetadata` as TF Serving's REST API writes it (signature map unpacked)."""
        from tensorflow_serving.apis import get_model_metadata_pb2

        from keras_bert.proto_json import message_to_dict

        request = get_model_metadata_pb2.GetModelMetadataRequest(metadata_field=["signature_def"])
        self._spec(request.model_spec, version)
        response = self._call(self._predictions.GetModelMetadata, request)
        signature_map = get_model_metadata_pb2.SignatureDefMap()
        response.metadata["signature_def"].Unpack(signature_map)
        return {"model_spec": message_to_dict(response.model_spec),
                "metadata": {"signature_def": message_to_dict(signature_map)}}

    def status(self, version: int | None = None) -> dict:
        """`GetModelStatus` as JSON (`{"model_version_status": [...]}`)."""
        from tensorflow_serving.apis import get_model_status_pb2

        from keras_bert.proto_json import message_to_dict

        request = get_model_status_pb2.GetModelStatusRequest()
        self._spec(request.model_spec, version)
        response = self._call(self._models.GetModelStatus, request)
        return message_to_dict(response)

    def close(self) -> None:
        """Closes the channel."""
        self.channel.close()

    def __enter__(self) -> GrpcClient:
        return self

    def __exit__(self, *exc) -> None:
        self.close()


class RestClient:
    """TF Serving's REST API (`base_url` like "http://127.0.0.1:8501" or "127.0.0.1:8501").

    Keeps one persistent HTTP/1.1 connection per thread, so one client can be shared by
    threads.
    """

    def __init__(self, base_url: str, model_name: str = "bert", timeout: float = 30.0):
        if "://" not in base_url:
            base_url = "http://" + base_url
        url = urllib.parse.urlsplit(base_url)
        if url.scheme != "http" or not url.hostname:
            raise ValueError(f"expected http://HOST:PORT, got {base_url!r}")
        self.host, self.port = url.hostname, url.port or 8501
        self.model_name = model_name
        self.timeout = timeout
        self._local = threading.local()
        self._output_names: dict[str, list[str]] = {}

    def _connection(self, fresh: bool = False) -> http.client.HTTPConnection:
        conn = getattr(self._local, "conn", None)
        if conn is None or fresh:
            if conn is not None:
                conn.close()
            conn = http.client.HTTPConnection(self.host, self.port, timeout=self.timeout)
            self._local.conn = conn
        return conn

    def request(self, method: str, path: str, body: dict | None = None) -> dict:
        """Sends a JSON request; returns the JSON answer or raises `ServerError`."""
        data = None if body is None else json.dumps(body).encode("utf-8")
        headers = {"Content-Type": "application/json"} if data is not None else {}
        for attempt in range(2):
            conn = self._connection(fresh=attempt > 0)
            try:
                conn.request(method, path, body=data, headers=headers)
                response = conn.getresponse()
                payload = response.read()
                break
            except (http.client.RemoteDisconnected, ConnectionResetError, BrokenPipeError):
                conn.close()
                if attempt:
                    raise
        if response.will_close:
            conn.close()
        try:
            answer = json.loads(payload)
        except ValueError:
            answer = {"error": payload.decode("utf-8", "replace")}
        if response.status != 200:
            message = answer.get("error", "") if isinstance(answer, dict) else str(answer)
            raise ServerError(_CODES.get(response.status, "UNKNOWN"), message, response.status)
        return answer

    def _path(self, version: int | None) -> str:
        path = f"/v1/models/{urllib.parse.quote(self.model_name, safe='')}"
        return path if version is None else f"{path}/versions/{int(version)}"

    def predict_columns(self, inputs: dict, signature: str = DEFAULT_SIGNATURE,
                        version: int | None = None) -> dict:
        """Runs `signature` on named inputs (JSON-able lists) with the columnar format;
        returns `{output: nested lists}`."""
        inputs = {k: (v.tolist() if isinstance(v, np.ndarray) else v) for k, v in inputs.items()}
        answer = self.request("POST", self._path(version) + ":predict",
                              {"signature_name": signature, "inputs": inputs})
        outputs = answer["outputs"]
        if isinstance(outputs, dict) and list(outputs) != ["b64"]:
            return outputs  # several outputs, by name; one output comes bare
        (name,) = self.output_names(signature, version)
        return {name: outputs}

    def output_names(self, signature: str = DEFAULT_SIGNATURE,
                     version: int | None = None) -> list[str]:
        """The output names of `signature` (from the metadata; cached)."""
        if signature not in self._output_names:
            defs = self.metadata(version)["metadata"]["signature_def"]["signature_def"]
            if signature not in defs:
                raise ServerError("NOT_FOUND", f"signature '{signature}' not found")
            self._output_names[signature] = sorted(defs[signature]["outputs"])
        return self._output_names[signature]

    def predict(self, texts, text_b=None, signature: str = DEFAULT_SIGNATURE,
                version: int | None = None) -> list[dict]:
        """One dict of outputs per text (row format request)."""
        inputs = _text_inputs(texts, text_b)
        instances = [dict(zip(inputs, values, strict=True))
                     for values in zip(*inputs.values(), strict=True)]
        answer = self.request("POST", self._path(version) + ":predict",
                              {"signature_name": signature, "instances": instances})
        predictions = answer["predictions"]
        if predictions and not (isinstance(predictions[0], dict)
                                and list(predictions[0]) != ["b64"]):
            (name,) = self.output_names(signature, version)
            predictions = [{name: value} for value in predictions]
        return [{name: _python(row[name]) for name in sorted(row)} for row in predictions]

    def metadata(self, version: int | None = None) -> dict:
        """`GET /v1/models/NAME[/versions/N]/metadata`."""
        return self.request("GET", self._path(version) + "/metadata")

    def status(self, version: int | None = None) -> dict:
        """`GET /v1/models/NAME[/versions/N]`."""
        return self.request("GET", self._path(version))

    def close(self) -> None:
        """Closes this thread's connection."""
        conn = getattr(self._local, "conn", None)
        if conn is not None:
            conn.close()
            self._local.conn = None

    def __enter__(self) -> RestClient:
        return self

    def __exit__(self, *exc) -> None:
        self.close()
