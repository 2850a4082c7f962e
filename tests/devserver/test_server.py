"""The development server (`keras-bert serve`): TF Serving's gRPC and REST protocols end to
end over loopback, version pick-up with warmup, malformed requests, signals, and load.

Every server binds 127.0.0.1 on free ports (port 0); every loop is bounded in count and time.
"""

from __future__ import annotations

import base64
import functools
import http.client
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pytest
import tensorflow as tf

from keras_bert.client import GrpcClient, RestClient, ServerError
from keras_bert.devserver.batcher import Batcher
from keras_bert.tasks.task_dir import export_model
from tests.export.helpers import make_tiny_model_dir
from tests.support.reference import require

TEXTS = ["Call me Ishmael.", "", "The cat sat on the mat!", "Naïve café — BERT reads."]
REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def model_server(*args, **kwargs):
    """`keras_bert.devserver.server.ModelServer(*args, **kwargs)`. The server needs the
    `serving` extra (tensorflow-serving-api, grpcio), imported here: without it the tests
    that serve skip naming what is missing (fail under CI), and collection goes on."""
    return require("keras_bert.devserver.server").ModelServer(*args, **kwargs)


@functools.cache
def load(export_dir: str):
    """`tf.saved_model.load`, once per export."""
    return tf.saved_model.load(export_dir)


def reference_outputs(export_dir: str, texts, signature="serving_default") -> dict:
    """What `tf.saved_model.load` answers in this process, as arrays."""
    outputs = load(export_dir).signatures[signature](text=tf.constant(texts))
    return {name: value.numpy() for name, value in outputs.items()}


def assert_rows_match(rows, expected: dict, atol=1e-5) -> None:
    """`rows` (one dict per text) equal the columns of `expected`."""
    assert len(rows) == len(next(iter(expected.values())))
    for name, column in expected.items():
        np.testing.assert_allclose(np.array([row[name] for row in rows]), column, atol=atol)


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
def exported(tiny_export):
    """Its export: `BASE/1/` (shared, `tests/conftest.py`; copied before versions are added)."""
    return tiny_export


@pytest.fixture(scope="module")
def expected(exported):
    """`serving_default` outputs for TEXTS, computed in this process."""
    return reference_outputs(exported.path, TEXTS)


@pytest.fixture(scope="module")
def server(exported, serve_process):
    """An in-process `ModelServer` of the export on free loopback ports."""
    # (`serve_process` boots the `keras-bert serve` subprocess now, while these tests run.)
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


# (b) New versions ---------------------------------------------------------------------------

def test_new_version_is_loaded_warmed_up_and_served(exported, tmp_path, caplog):
    base = tmp_path / "bert"
    shutil.copytree(exported.path, base / "1")  # the module's export as version 1
    caplog.set_level("INFO", logger="keras_bert.devserver")
    with model_server(str(base), "bert", grpc_port=0, rest_port=0, poll_seconds=0.2) as server, \
            GrpcClient(server.grpc_address, "bert", timeout=60) as client:
        rest = RestClient(server.rest_url, "bert")
        before = client.predict(TEXTS[:2])
        # A second, differently initialised model, exported next to version 1.
        new_model = make_tiny_model_dir(str(tmp_path / "second"), seed=1)
        second = export_model(new_model, str(base), target=None)
        assert second.version == 2
        deadline = time.monotonic() + 60
        while server.store.current.version != 2 and time.monotonic() < deadline:
            time.sleep(0.1)
        states = {s["version"]: s["state"] for s in client.status()["model_version_status"]}
        assert states == {"2": "AVAILABLE", "1": "END"}
        assert rest.status(2)["model_version_status"][0]["state"] == "AVAILABLE"
        assert server.store.warmup_counts == {1: 1, 2: 1}
        assert "warmup: replayed 1 request(s) for model 'bert' version 2" in caplog.text
        after = client.predict(TEXTS[:2])
        assert_rows_match(after, reference_outputs(second.path, TEXTS[:2]))
        assert not np.allclose(after[0]["embedding"], before[0]["embedding"], atol=1e-3)
        assert rest.metadata()["model_spec"]["version"] == "2"
        with pytest.raises(ServerError, match="version 1 of model 'bert' is not available"):
            client.predict(TEXTS[:1], version=1)
        # A broken version is reported and never replaces the served one.
        os.makedirs(base / "3")
        deadline = time.monotonic() + 30
        while (3 not in server.store.states or server.store.states[3].state != "END") \
                and time.monotonic() < deadline:
            time.sleep(0.1)
        assert client.status(3)["model_version_status"][0]["status"]["error_code"] == "UNKNOWN"
        assert_rows_match(client.predict(TEXTS[:2]), reference_outputs(second.path, TEXTS[:2]))
        rest.close()


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


def test_batcher_merges_concurrent_requests_and_isolates_failures():
    calls = []

    def call(inputs):
        calls.append(len(inputs["text"]))
        time.sleep(0.01)
        if b"bad" in inputs["text"]:
            raise ValueError("bad input")
        return {"length": np.array([len(t) for t in inputs["text"]])}

    batcher = Batcher(call, max_batch_size=8)
    texts = [b"x" * i for i in range(1, 24)] + [b"bad"]

    def one(text):
        try:
            return batcher({"text": np.array([text], object)})["length"].tolist()
        except ValueError as e:
            return str(e)

    with ThreadPoolExecutor(12) as executor:
        answers = list(executor.map(one, texts))
    batcher.stop()
    assert answers == [[len(t)] for t in texts[:-1]] + ["bad input"]
    assert max(calls) > 1 and max(calls) <= 8  # merged, within max_batch_size
    assert one(b"after stop") == [10]  # runs unbatched once stopped


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


@pytest.mark.slow  # 30-42 s: CI runs it every landing (keeps the README's tier under 15 min)
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


def test_serve_stops_cleanly_on_sigterm(serve_process):
    grpc_address, _ = serve_process.addresses()
    with GrpcClient(grpc_address, "bert") as client:
        assert client.status()["model_version_status"][0]["state"] == "AVAILABLE"
    serve_process.process.send_signal(signal.SIGTERM)
    assert serve_process.process.wait(30) == 0
    time.sleep(0.2)
    assert any("stopping" in line for line in serve_process.lines)
