"""TF Serving's REST API over a stdlib `ThreadingHTTPServer`.

    GET  /v1/models/NAME[/versions/N]            GetModelStatus as JSON
    GET  /v1/models/NAME[/versions/N]/metadata   GetModelMetadata as JSON
    POST /v1/models/NAME[/versions/N]:predict    {"instances": [...]} or {"inputs": ...}

Requests and answers follow TF Serving's formats: the row format answers
`{"predictions": [...]}` (bare values when the signature has one output, else one object per
instance), the columnar format `{"outputs": ...}`; binary strings travel as `{"b64": "..."}`
(outputs: when they are not valid UTF-8 or the output name ends in `_bytes`). Errors answer
`{"error": "..."}` with the HTTP status TF Serving maps the gRPC code to.
"""

from __future__ import annotations

import json
import logging
import re
import socket
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import grpc

from keras_bert.devserver.model_store import ModelStore, status_response
from keras_bert.devserver.rest_json import decode_predict, encode_predict, json_kind
from keras_bert.devserver.served_version import (
    DEFAULT_MAX_MESSAGE_BYTES,
    DEFAULT_SIGNATURE,
    ServingError,
    invalid,
    not_found,
)
from keras_bert.proto_json import message_to_dict

log = logging.getLogger("keras_bert.devserver")

# TF Serving's mapping of status codes to HTTP (model_servers/http_rest_api_util).
HTTP_STATUS = {
    grpc.StatusCode.INVALID_ARGUMENT: 400, grpc.StatusCode.OUT_OF_RANGE: 400,
    grpc.StatusCode.NOT_FOUND: 404, grpc.StatusCode.FAILED_PRECONDITION: 412,
    grpc.StatusCode.RESOURCE_EXHAUSTED: 429, grpc.StatusCode.UNIMPLEMENTED: 501,
    grpc.StatusCode.UNAVAILABLE: 503, grpc.StatusCode.INTERNAL: 500,
    grpc.StatusCode.DEADLINE_EXCEEDED: 504,
}
ROUTE = re.compile(r"^/v1/models/(?P<name>[^/:]+)"
                   r"(?:/versions/(?P<version>[^/:]+)|/labels/(?P<label>[^/:]+))?"
                   r"(?:(?P<metadata>/metadata)|:(?P<verb>[A-Za-z]+))?/?$")


def status_json(store: ModelStore, name: str, version: int | None) -> dict:
    """`GetModelStatusResponse` as TF Serving writes it in JSON."""
    return message_to_dict(status_response(store, name, version))


def metadata_json(store: ModelStore, name: str, version: int | None) -> dict:
    """`GetModelMetadataResponse` as TF Serving writes it (the signature map unpacked)."""
    from tensorflow_serving.apis import get_model_metadata_pb2, model_pb2

    served = store.get(name, version)
    spec = model_pb2.ModelSpec(name=name)
    spec.version.value = served.version
    signature_map = get_model_metadata_pb2.SignatureDefMap()
    for key, value in served.signature_defs.items():
        signature_map.signature_def[key].CopyFrom(value)
    return {"model_spec": message_to_dict(spec),
            "metadata": {"signature_def": message_to_dict(signature_map)}}


# HTTP ----------------------------------------------------------------------------------------

class RestHandler(BaseHTTPRequestHandler):
    """Routes one HTTP request to the store; the server object carries `store`."""

    protocol_version = "HTTP/1.1"
    server_version = "keras-bert-serve"
    timeout = 60  # idle keep-alive connections are closed after this many seconds
    disable_nagle_algorithm = True  # headers and body are two writes: no 40 ms delayed ACKs
    linger_seconds = 5.0  # how long a refused, unread body is drained before the close
    _unread_body = False

    def log_message(self, format, *args):  # noqa: A002 - the base class's signature
        """Access log at DEBUG level (the base class writes every request to stderr)."""
        log.debug("rest: %s - %s", self.address_string(), format % args)

    def do_GET(self):  # noqa: N802 - http.server's naming
        """Status and metadata."""
        self._handle("GET")

    def do_POST(self):  # noqa: N802 - http.server's naming
        """Predict."""
        self._handle("POST")

    def _handle(self, method: str) -> None:
        self._body_read = False
        try:
            code, body = 200, self._route(method)
        except ServingError as e:
            code, body = HTTP_STATUS.get(e.code, 500), {"error": e.message}
        except Exception:  # noqa: BLE001 - never a stack trace to the client
            log.exception("rest: %s %s failed", method, self.path)
            code, body = 500, {"error": "internal error; see the server log"}
        if not self._body_read:
            self._discard_body()  # a keep-alive connection must not read it as a request
        self._send(code, body)

    def _send(self, code: int, body: dict) -> None:
        data = json.dumps(body).encode("utf-8")
        self.send_response(code)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        if self.close_connection:
            self.send_header("Connection", "close")
        self.end_headers()
        self.wfile.write(data)

    def finish(self) -> None:
        """Closes the connection; a refused body still on its way is drained first (a
        lingering close), so the client reads the refusal rather than a reset connection."""
        if self._unread_body:
            try:
                self.connection.shutdown(socket.SHUT_WR)
                deadline = time.monotonic() + self.linger_seconds
                while (left := deadline - time.monotonic()) > 0:
                    self.connection.settimeout(min(left, 1.0))
                    if not self.connection.recv(1 << 16):
                        break
            except OSError:  # the client is gone or idle: close now
                pass
        super().finish()

    def _route(self, method: str) -> dict:
        store: ModelStore = self.server.store
        match = ROUTE.match(self.path.split("?", 1)[0])
        if not match:
            raise not_found(f"malformed request: {method} {self.path} (see "
                            f"/v1/models/{store.model_name})")
        name, label, verb = match["name"], match["label"], match["verb"]
        version = None
        if match["version"] is not None:
            if not match["version"].isdigit():
                raise invalid(f"version must be a non-negative integer, got "
                              f"'{match['version']}'")
            version = int(match["version"])
        if label is not None:
            raise not_found(f"version label '{label}' is not configured for model '{name}'")
        if method == "GET" and verb is None:
            return (metadata_json if match["metadata"] else status_json)(store, name, version)
        if method == "POST" and verb == "predict":
            return self._predict(store, name, version)
        if verb in ("classify", "regress"):
            raise ServingError(grpc.StatusCode.UNIMPLEMENTED,
                               f":{verb} is not served by this development server; use :predict")
        raise not_found(f"malformed request: {method} {self.path}")

    def _read_body(self) -> bytes:
        length = self.headers.get("Content-Length")
        if length is None or not length.isdigit():
            self.close_connection = self._unread_body = True
            raise invalid("a POST request needs a Content-Length header")
        length = int(length)
        limit = self.server.max_message_bytes
        self._body_read = True
        if length > limit:
            self.close_connection = self._unread_body = True  # dropped after the answer
            raise invalid(f"the request body is {length} bytes; the limit is {limit} bytes "
                          "(serve --max-message-mb)")
        return self.rfile.read(length)

    def _discard_body(self) -> None:
        """Reads and drops the request's body (closing the connection where it can't)."""
        if self.headers.get("Transfer-Encoding"):
            self.close_connection = self._unread_body = True  # chunked bodies are not read
        elif self.command == "POST" or self.headers.get("Content-Length"):
            try:
                self._read_body()
            except ServingError:
                pass

    def _predict(self, store: ModelStore, name: str, version: int | None) -> dict:
        raw = self._read_body()
        try:
            body = json.loads(raw)
        except (UnicodeDecodeError, json.JSONDecodeError) as e:
            raise invalid(f"the request body is not valid JSON: {e}") from None
        except RecursionError:
            raise invalid("the request body nests JSON too deeply") from None
        if not isinstance(body, dict):
            raise invalid(f"the request body must be a JSON object, got {json_kind(body)}")
        signature_name = body.get("signature_name", DEFAULT_SIGNATURE)
        if not isinstance(signature_name, str):
            raise invalid("'signature_name' must be a string")
        served = store.get(name, version)
        signature = served.signature(signature_name)
        inputs, row_format = decode_predict(body, signature, store.max_rows)
        return encode_predict(served.run(signature, inputs), row_format)


class RestServer:
    """TF Serving's REST API for `store` on `host:port` (port 0 picks a free port)."""

    def __init__(self, store: ModelStore, host: str = "127.0.0.1", port: int = 8501,
                 max_message_bytes: int = DEFAULT_MAX_MESSAGE_BYTES):
        self.httpd = ThreadingHTTPServer((host, port), RestHandler)
        self.httpd.daemon_threads = True
        self.httpd.store = store
        self.httpd.max_message_bytes = max_message_bytes
        self._thread: threading.Thread | None = None

    @property
    def port(self) -> int:
        """The port listened on."""
        return self.httpd.server_address[1]

    def start(self) -> RestServer:
        """Serves in a daemon thread."""
        self._thread = threading.Thread(target=self.httpd.serve_forever, name="rest-server",
                                        kwargs={"poll_interval": 0.2}, daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        """Stops accepting requests and closes the listening socket."""
        if self._thread is not None:
            self.httpd.shutdown()  # (waits for serve_forever: only when it runs)
            self._thread.join(timeout=10)
            self._thread = None
        self.httpd.server_close()


__all__ = ["RestServer", "metadata_json", "status_json"]
