"""TF Serving's REST API: the standard library and NumPy."""

from __future__ import annotations

import http.client
import json
import threading
import urllib.parse

import numpy as np

from keras_bert_client.values import (
    DEFAULT_SIGNATURE,
    ServerError,
    python_value,
    text_inputs,
)

# HTTP statuses TF Serving answers, back to their gRPC code names.
_CODES = {400: "INVALID_ARGUMENT", 404: "NOT_FOUND", 412: "FAILED_PRECONDITION",
          429: "RESOURCE_EXHAUSTED", 500: "INTERNAL", 501: "UNIMPLEMENTED",
          503: "UNAVAILABLE", 504: "DEADLINE_EXCEEDED"}


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
        inputs = text_inputs(texts, text_b)
        instances = [dict(zip(inputs, values, strict=True))
                     for values in zip(*inputs.values(), strict=True)]
        answer = self.request("POST", self._path(version) + ":predict",
                              {"signature_name": signature, "instances": instances})
        predictions = answer["predictions"]
        if predictions and not (isinstance(predictions[0], dict)
                                and list(predictions[0]) != ["b64"]):
            (name,) = self.output_names(signature, version)
            predictions = [{name: value} for value in predictions]
        return [{name: python_value(row[name]) for name in sorted(row)} for row in predictions]

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
