"""The development server (`keras-bert serve`): TF Serving's gRPC and REST protocols end to
end over loopback, malformed requests, signals, and load. New versions:
`test_server_versions.py`; the batcher: `test_batcher.py`.

Every server binds 127.0.0.1 on free ports (port 0); every loop is bounded in count and time.
"""

from __future__ import annotations

import base64
import http.client
import json
import os
import re
import subprocess
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pytest
import tensorflow as tf

from keras_bert.client import GrpcClient, RestClient, ServerError
from tests.support.devserver import (
    TEXTS,
    assert_rows_match,
    load,
    model_server,
    reference_outputs,
)
from tests.support.reference import require

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def http_request(url: str, method: str, path: str, data: bytes | None = None):
    """`(status, JSON answer)` of one raw HTTP request."""
    host, port = url.removeprefix("http://").split(":")
    conn = http.client.HTTPConnection(host, int(port), timeout=60)
    try:
        conn.request(method, path, body=data,
                     headers={"Content-Type": "application/json"} if data is not None else {})
        response = conn.getresponse()
        return response.status, json.loads(response.read())
    finally:
        conn.close()


@pytest.fixture(scope="module")
def expected(exported):
    """`serving_default` outputs for TEXTS, computed in this process."""
    return reference_outputs(exported.path, TEXTS)


@pytest.fixture(scope="module")
def server(exported):
    """An in-process `ModelServer` of the export on free loopback ports."""
    with model_server(os.path.dirname(exported.path), "bert", grpc_port=0, rest_port=0,
                      poll_seconds=0.5) as running:
        yield running


@pytest.fixture(scope="module")
def clients(server):
    """`(GrpcClient, RestClient)` of `server`."""
    grpc_client = GrpcClient(server.grpc_address, "bert", timeout=60)
    rest_client = RestClient(server.rest_url, "bert", timeout=60)
    yield grpc_client, rest_client
    grpc_client.close()
    rest_client.close()


# An embedding export's answer: the vectors and what was read of each text.
SERVED_OUTPUTS = {"embedding", "pooled_output", "num_tokens", "num_windows", "truncated"}


# (a) End to end -------------------------------------------------------------------------------

def test_grpc_and_rest_answer_like_the_saved_model(clients, expected, server):
    grpc_client, rest_client = clients
    assert_rows_match(grpc_client.predict(TEXTS), expected)
    assert_rows_match(rest_client.predict(TEXTS), expected)
    assert_rows_match(grpc_client.predict(TEXTS, version=1), expected)
    # The columnar REST format, a bare value, and base64 strings.
    status, answer = http_request(server.rest_url, "POST", "/v1/models/bert:predict",
                                  json.dumps({"inputs": {"text": TEXTS}}).encode())
    assert status == 200 and set(answer["outputs"]) == SERVED_OUTPUTS
    np.testing.assert_allclose(answer["outputs"]["embedding"], expected["embedding"], atol=1e-5)
    # What was read of each text, as JSON numbers and booleans.
    assert answer["outputs"]["num_windows"] == [1] * len(TEXTS)
    assert all(t is False or t is True for t in answer["outputs"]["truncated"])
    b64 = [{"b64": base64.b64encode(t.encode()).decode()} for t in TEXTS]
    for body in ({"inputs": TEXTS}, {"instances": b64, "signature_name": "serving_default"}):
        status, answer = http_request(server.rest_url, "POST",
                                      "/v1/models/bert/versions/1:predict",
                                      json.dumps(body).encode())
        assert status == 200, answer
        got = answer.get("outputs") or {k: [row[k] for row in answer["predictions"]]
                                         for k in answer["predictions"][0]}
        np.testing.assert_allclose(got["pooled_output"], expected["pooled_output"], atol=1e-5)


def test_serve_ids_signature(clients, exported, expected):
    grpc_client, rest_client = clients
    ids = np.array([[2, 5, 7, 3, 0], [2, 8, 3, 0, 0]], np.int32)
    inputs = {"input_word_ids": ids, "input_mask": (ids > 0).astype(np.int32),
              "input_type_ids": np.zeros_like(ids)}
    want = {k: v.numpy() for k, v in load(exported.path).signatures["serve_ids"](**inputs).items()}
    by_grpc = grpc_client.predict_columns(inputs, "serve_ids")
    by_rest = rest_client.predict_columns(inputs, "serve_ids")
    for name in want:
        np.testing.assert_allclose(by_grpc[name], want[name], atol=1e-5)
        np.testing.assert_allclose(by_rest[name], want[name], atol=1e-5)
    only = grpc_client.predict_columns(inputs, "serve_ids", output_filter=["embedding"])
    assert list(only) == ["embedding"]


def test_metadata_and_status(clients, server):
    grpc_client, rest_client = clients
    metadata = grpc_client.metadata()
    assert metadata == rest_client.metadata()
    assert metadata["model_spec"] == {"name": "bert", "version": "1", "signature_name": ""}
    defs = metadata["metadata"]["signature_def"]["signature_def"]
    assert defs["serving_default"]["inputs"]["text"]["dtype"] == "DT_STRING"
    assert set(defs["serving_default"]["outputs"]) == SERVED_OUTPUTS
    assert set(defs["serve_ids"]["inputs"]) == {"input_word_ids", "input_mask", "input_type_ids"}
    assert defs["serving_default"]["method_name"] == "tensorflow/serving/predict"
    status = {"model_version_status": [{"version": "1", "state": "AVAILABLE", "status": {
        "error_code": "OK", "error_message": ""}}]}
    assert grpc_client.status() == status == rest_client.status() == grpc_client.status(1)
    assert http_request(server.rest_url, "GET", "/v1/models/bert/versions/1") == (200, status)
    assert server.store.warmup_counts == {1: 1}


# (d) Malformed requests -----------------------------------------------------------------------

def _tensor(value, dtype=None, shape=None):
    """A request `TensorProto`."""
    return tf.make_tensor_proto(value, dtype=dtype, shape=shape)


GRPC_CASES = {
    "wrong dtype": ({"text": _tensor([1.5], tf.float32)}, {}, "INVALID_ARGUMENT",
                    "must be string"),
    "missing input": ({"txt": _tensor(["a"])}, {}, "INVALID_ARGUMENT", "missing input"),
    "extra input": ({"text": _tensor(["a"]), "text_b": _tensor(["b"])}, {},
                    "INVALID_ARGUMENT", "unexpected input"),
    "empty batch": ({"text": _tensor([], tf.string, [0])}, {}, "INVALID_ARGUMENT",
                    "empty batch"),
    "bad shape": ({"text": _tensor([["a"]])}, {}, "INVALID_ARGUMENT", "shape"),
    "10 MB string": ({"text": _tensor([b"x" * (10 << 20)])}, {}, "INVALID_ARGUMENT",
                     "bytes; the limit"),
    "unknown model": ({"text": _tensor(["a"])}, {"name": "nope"}, "NOT_FOUND",
                      "model 'nope' not found"),
    "unknown signature": ({"text": _tensor(["a"])}, {"signature_name": "nope"}, "NOT_FOUND",
                          "signature 'nope' not found"),
    "unknown version": ({"text": _tensor(["a"])}, {"version": 9}, "NOT_FOUND",
                        "version 9"),
    "bad output_filter": ({"text": _tensor(["a"])}, {"output_filter": ["nope"]},
                          "INVALID_ARGUMENT", "unknown output"),
}


@pytest.mark.parametrize("case", list(GRPC_CASES))
def test_malformed_grpc_requests(case, server, clients, expected):
    inputs, spec, code, message = GRPC_CASES[case]
    grpc = require("grpc")
    predict_pb2 = require("tensorflow_serving.apis.predict_pb2")
    prediction_service_pb2_grpc = require("tensorflow_serving.apis.prediction_service_pb2_grpc")
    request = predict_pb2.PredictRequest()
    request.model_spec.name = spec.get("name", "bert")
    request.model_spec.signature_name = spec.get("signature_name", "")
    if "version" in spec:
        request.model_spec.version.value = spec["version"]
    request.output_filter.extend(spec.get("output_filter", []))
    for name, proto in inputs.items():
        request.inputs[name].CopyFrom(proto)
    with grpc.insecure_channel(server.grpc_address, options=[
            ("grpc.max_send_message_length", 64 << 20)]) as channel:
        stub = prediction_service_pb2_grpc.PredictionServiceStub(channel)
        with pytest.raises(grpc.RpcError) as error:
            stub.Predict(request, timeout=60)
    assert error.value.code().name == code
    assert message in error.value.details() and "Traceback" not in error.value.details()
    # The server keeps serving.
    assert_rows_match(clients[0].predict(TEXTS), expected)


REST_CASES = {
    "invalid JSON": ("/v1/models/bert:predict", b'{"instances": [', 400, "not valid JSON"),
    "not an object": ("/v1/models/bert:predict", b"[1]", 400, "must be a JSON object"),
    "wrong dtype": ("/v1/models/bert:predict", {"instances": [1.5]}, 400,
                    "expects string values, got number 1.5"),
    "missing input": ("/v1/models/bert:predict", {"instances": [{"txt": "a"}]}, 400,
                      "unexpected input 'txt'"),
    "missing key": ("/v1/models/bert:predict", {"signature_name": "serving_default"}, 400,
                    "needs 'instances'"),
    "empty batch": ("/v1/models/bert:predict", {"instances": []}, 400, "empty batch"),
    "ragged": ("/v1/models/bert:predict", {"inputs": [["a"], "b"]}, 400, "ragged"),
    "bad shape": ("/v1/models/bert:predict", {"inputs": [["a"]]}, 400, "shape"),
    "10 MB string": ("/v1/models/bert:predict", {"instances": ["x" * (10 << 20)]}, 400,
                     "bytes; the limit"),
    "bad base64": ("/v1/models/bert:predict", {"instances": [{"b64": "%%"}]}, 400, "base64"),
    "unknown model": ("/v1/models/nope:predict", {"instances": ["a"]}, 404,
                      "model 'nope' not found"),
    "unknown version": ("/v1/models/bert/versions/9:predict", {"instances": ["a"]}, 404,
                        "version 9"),
    "unknown signature": ("/v1/models/bert:predict",
                          {"instances": ["a"], "signature_name": "nope"}, 404,
                          "signature 'nope' not found"),
    "unknown path": ("/v2/models/bert:predict", {"instances": ["a"]}, 404, "malformed request"),
    "unknown label": ("/v1/models/bert/labels/stable:predict", {"instances": ["a"]}, 404,
                      "label 'stable'"),
}


@pytest.mark.parametrize("case", list(REST_CASES))
def test_malformed_rest_requests(case, server, clients, expected):
    path, body, status, message = REST_CASES[case]
    data = body if isinstance(body, bytes) else json.dumps(body).encode()
    got_status, answer = http_request(server.rest_url, "POST", path, data)
    assert got_status == status and list(answer) == ["error"], answer
    assert message in answer["error"] and "Traceback" not in answer["error"]
    assert_rows_match(clients[1].predict(TEXTS), expected)


def test_graph_errors_reach_the_client_without_node_names(clients, expected):
    ids = np.full([1, 100], 5, np.int32)  # longer than max_position_embeddings (64)
    inputs = {"input_word_ids": ids, "input_mask": np.ones_like(ids),
              "input_type_ids": np.zeros_like(ids)}
    for client in clients:
        with pytest.raises(ServerError) as error:
            client.predict_columns(inputs, "serve_ids")
        assert error.value.code == "INVALID_ARGUMENT"
        assert "exceeds max_position_embeddings" in error.value.message
        assert "Detected at node" not in error.value.message
        assert "[Op:" not in error.value.message and "File " not in error.value.message
        assert_rows_match(client.predict(TEXTS), expected)


def test_internal_errors_are_logged_not_sent(server, clients, expected, monkeypatch, caplog):
    def broken(inputs):
        raise RuntimeError("secret detail")

    monkeypatch.setattr(server.store.current.signatures["serving_default"], "fn", broken)
    for client in clients:
        with pytest.raises(ServerError) as error:
            client.predict(TEXTS)
        assert error.value.code == "INTERNAL"
        assert error.value.message == "internal error; see the server log"
    assert "secret detail" in caplog.text and "Traceback" in caplog.text
    monkeypatch.undo()
    assert_rows_match(clients[0].predict(TEXTS), expected)


def test_rest_status_errors(server):
    assert http_request(server.rest_url, "GET", "/v1/models/nope")[0] == 404
    assert http_request(server.rest_url, "GET", "/v1/models/bert/versions/7")[0] == 404
    assert http_request(server.rest_url, "GET", "/v1/models/bert/versions/x/metadata")[0] == 400


# The `serve` command: a subprocess, signals, and load ---------------------------------------

class ServeProcess:
    """A `keras-bert serve` subprocess on free ports, and what it printed."""

    def __init__(self, base_dir: str, *options: str):
        require("keras_bert.devserver.server")  # what the command runs: the `serving` extra
        env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3", PYTHONPATH=REPO)
        self.process = subprocess.Popen(
            [sys.executable, "-m", "keras_bert.cli", "serve", base_dir, "--model-name", "bert",
             "--grpc-port", "0", "--rest-port", "0", "--log-level", "WARNING", *options],
            cwd=REPO, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        self.lines: list[str] = []
        threading.Thread(target=lambda: self.lines.extend(iter(self.process.stdout.readline, "")),
                         daemon=True).start()

    def addresses(self, timeout: float = 300) -> tuple[str, str]:
        """`(grpc_address, rest_url)` once the server listens (its start-up imports TensorFlow
        and replays the warmup: generous, for a loaded 2-core machine)."""
        deadline = time.monotonic() + timeout
        while not any(line.startswith("Ctrl-C") for line in list(self.lines)):
            assert self.process.poll() is None, self.process.stderr.read()[-3000:]
            assert time.monotonic() < deadline, "keras-bert serve did not start"
            time.sleep(0.1)
        text = "".join(self.lines)
        return (re.search(r"^gRPC\s+(\S+)", text, re.M).group(1),
                re.search(r"^REST\s+(http://[\d.]+:\d+)/v1/models/bert", text, re.M).group(1))


@pytest.fixture(scope="module")
def serve_process(exported):
    """`keras-bert serve` of the module's export (started, not yet waited for)."""
    served = ServeProcess(os.path.dirname(exported.path))
    yield served
    if served.process.poll() is None:
        served.process.kill()
        served.process.wait(30)


LOAD_CLIENTS = 16
LOAD_REQUESTS = int(os.environ.get("KERAS_BERT_LOAD_REQUESTS", "1000"))


@pytest.mark.slow  # 30-42 s: kept out of the README's tier (under 15 min); CI runs it once a cycle
def test_load_16_concurrent_clients(serve_process, exported):
    """16 clients (8 gRPC, 8 REST) x 1000 requests each, bounded at 120 s: 0 errors."""
    grpc_address, rest_url = serve_process.addresses()
    pool = TEXTS + [f"the cat sat on the mat {i} times" for i in range(12)]
    want = reference_outputs(exported.path, pool)["embedding"]
    deadline = time.monotonic() + 120

    def client_loop(index):
        client = (GrpcClient(grpc_address, "bert", timeout=30) if index % 2 == 0
                  else RestClient(rest_url, "bert", timeout=30))
        latencies, errors = [], []
        for i in range(LOAD_REQUESTS):
            if time.monotonic() > deadline:
                errors.append("deadline")
                break
            k = (index * 7 + i) % len(pool)
            started = time.perf_counter()
            try:
                (row,) = client.predict([pool[k]])
                if not np.allclose(row["embedding"], want[k], atol=1e-4):
                    errors.append(f"wrong answer for {pool[k]!r}")
            except Exception as e:  # noqa: BLE001 - counted
                errors.append(repr(e))
            latencies.append(time.perf_counter() - started)
        client.close()
        return latencies, errors

    started = time.perf_counter()
    with ThreadPoolExecutor(LOAD_CLIENTS) as executor:
        results = list(executor.map(client_loop, range(LOAD_CLIENTS)))
    elapsed = time.perf_counter() - started
    latencies = np.concatenate([r[0] for r in results]) * 1000
    errors = [e for r in results for e in r[1]]
    print(f"\nload: {len(latencies)} requests, {len(errors)} errors, "
          f"{len(latencies) / elapsed:.0f} requests/s, p50 {np.percentile(latencies, 50):.1f} "
          f"ms, p99 {np.percentile(latencies, 99):.1f} ms ({elapsed:.1f} s)")
    assert errors == [] and len(latencies) == LOAD_CLIENTS * LOAD_REQUESTS

# `keras-bert serve` stopping on SIGTERM: tests/devserver/test_abuse.py (its server process).
