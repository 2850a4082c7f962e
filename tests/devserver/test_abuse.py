"""Abuse never takes `keras-bert serve` down: hostile REST bodies get a 4xx and the
connection stays usable (or is closed cleanly); per-request limits name themselves; under
16 concurrent clients with mixed sizes and 10% malformed requests, every valid request is
answered correctly. The load figures (p50/p99, peak memory) are printed.
"""

from __future__ import annotations

import http.client
import json
import os
import random
import re
import signal
import time
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pytest

from keras_bert.client import GrpcClient, ServerError
from tests.devserver.test_server import ServeProcess
from tests.support.devserver import reference_outputs
from tests.support.reference import require

LIMITS = ["--max-request-rows", "16", "--max-message-mb", "1", "--max-string-kb", "64"]
CLIENTS = 16
# Requests per client: 64 in the README's tier, the same 16 concurrent clients and checks;
# 250 (6.4-7.2 s a run on a busy 2-core Zen 4, four times the requests) once, in the slow tier.
REQUESTS = int(os.environ.get("KERAS_BERT_ABUSE_REQUESTS", "64"))
FULL_REQUESTS = 250
PREDICT = "/v1/models/bert:predict"


@pytest.fixture(scope="module")
def exported(tiny_export):
    """The shared tiny export's version directory (`tests/conftest.py`)."""
    return tiny_export.path


@pytest.fixture(scope="module")
def serve(exported):
    """`keras-bert serve` with small limits: `(process, grpc address, rest host, port)`."""
    served = ServeProcess(os.path.dirname(exported), *LIMITS)
    grpc_address, rest_url = served.addresses()
    host, port = rest_url.removeprefix("http://").split(":")
    yield served, grpc_address, host, int(port)
    served.process.kill()
    served.process.wait(30)


def _exchange(conn: http.client.HTTPConnection, method: str, path: str, body: bytes | None,
              headers: dict | None = None) -> tuple[int, dict, bool]:
    """`(status, JSON answer, whether the server closes the connection)`."""
    conn.request(method, path, body=body, headers=headers or {})
    response = conn.getresponse()
    return response.status, json.loads(response.read()), response.will_close


HOSTILE = {
    "100,000 nested lists": b'{"instances": ' + b"[" * 100_000 + b"]" * 100_000 + b"}",
    "100,000 nested objects": b'{"instances": [' + b'{"a":' * 100_000 + b"1" +
                              b"}" * 100_000 + b"]}",
    "20-deep lists": b'{"instances": ' + b"[" * 20 + b'"a"' + b"]" * 20 + b"}",
    "a huge array": json.dumps({"instances": ["a"] * 100_000}).encode(),
    "numbers for strings": json.dumps({"instances": [1, 2.5, True]}).encode(),
    "null instances": b'{"instances": null}',
    "objects for strings": json.dumps({"instances": [{"b64": {"x": 1}}]}).encode(),
    "a 100 KiB string": json.dumps({"instances": ["x" * (100 << 10)]}).encode(),
    "not UTF-8": b'{"instances": ["\xff\xfe"]}',
    "a bare string": b'"text"',
    "17 rows": json.dumps({"instances": ["a"] * 17}).encode(),
}


@pytest.mark.parametrize("case", list(HOSTILE))
def test_hostile_bodies_get_4xx_and_the_connection_stays_usable(case, serve):
    _, _, host, port = serve
    conn = http.client.HTTPConnection(host, port, timeout=60)
    status, answer, closes = _exchange(conn, "POST", PREDICT, HOSTILE[case])
    assert 400 <= status < 500 and list(answer) == ["error"], (status, answer)
    assert "Traceback" not in answer["error"]
    if case == "17 rows":
        assert "the limit is 16 rows per request" in answer["error"]
    if case == "a 100 KiB string":
        assert "the limit is 65536 bytes" in answer["error"]
    if not closes:  # the same keep-alive connection answers the next request
        status, answer, _ = _exchange(conn, "POST", PREDICT, b'{"instances": ["a whale"]}')
        assert status == 200 and len(answer["predictions"]) == 1
    conn.close()


def test_bad_version_path_with_a_body_on_keep_alive(serve):
    _, _, host, port = serve
    conn = http.client.HTTPConnection(host, port, timeout=60)
    body = json.dumps({"instances": ["a"] * 10}).encode()
    for path in ["/v1/models/bert/versions/x:predict", "/v1/models/bert/labels/l:predict",
                 "/v1/models/bert:classify", "/v9/nothing"]:
        status, answer, closes = _exchange(conn, "POST", path, body)
        assert 400 <= status < 502 and not closes, (path, status, answer)
    status, _, closes = _exchange(conn, "GET", "/v1/models/bert", b'{"a body": "on a GET"}')
    assert status == 200 and not closes
    status, answer, _ = _exchange(conn, "POST", PREDICT, body)
    assert status == 200 and len(answer["predictions"]) == 10
    conn.close()


@pytest.mark.parametrize("size", [(1 << 20) + 1, 32 << 20])
def test_oversized_body_is_refused_and_the_connection_closed(serve, size):
    # 32 MiB outgrows the sockets' buffers: the client is still sending when the refusal is
    # written, so the server must drain the body before closing (else: a reset connection)
    _, _, host, port = serve
    conn = http.client.HTTPConnection(host, port, timeout=60)
    status, answer, closes = _exchange(conn, "POST", PREDICT, b" " * size)
    assert status == 400 and closes and "the limit is 1048576 bytes" in answer["error"]
    conn.close()
    conn = http.client.HTTPConnection(host, port, timeout=60)  # a new one is served
    assert _exchange(conn, "GET", "/v1/models/bert", None)[0] == 200
    conn.close()


def test_grpc_limits_name_themselves(serve):
    _, grpc_address, _, _ = serve
    with GrpcClient(grpc_address, "bert", timeout=60) as client:
        with pytest.raises(ServerError, match="17 rows; the limit is 16 rows per request"):
            client.predict(["a"] * 17)
        with pytest.raises(ServerError, match="the limit is 65536 bytes"):
            client.predict(["x" * (65 << 10)])
        assert len(client.predict(["a"] * 16)) == 16


def test_json_to_array_bounds_values_and_depth(monkeypatch):
    import tensorflow as tf

    # The server's modules need grpcio: imported here, so that without it this test skips
    # (fails under CI) instead of stopping the collection.
    rest_json = require("keras_bert.devserver.rest_json")
    invalid = require("keras_bert.devserver.served_version").invalid
    monkeypatch.setattr(rest_json, "MAX_ELEMENTS", 50)
    with pytest.raises(type(invalid("x")), match="more than 50 values"):
        rest_json.json_to_array([[0] * 10] * 10, tf.int32, "ids")
    with pytest.raises(type(invalid("x")), match="more than 8 deep"):
        rest_json.json_to_array([[[[[[[[[["a"]]]]]]]]]], tf.string, "text")


def _rss_peak_mb(pid: int) -> float:
    with open(f"/proc/{pid}/status", encoding="ascii") as f:
        return int(re.search(r"VmHWM:\s+(\d+) kB", f.read()).group(1)) / 1024


def _malformed(rng: random.Random) -> bytes:
    return rng.choice([b"{", b'{"instances": [1]}', b'{"instances": []}', b"[]",
                       json.dumps({"instances": ["a"] * 17}).encode(),
                       b'{"instances": ' + b"[" * 5000 + b"]" * 5000 + b"}",
                       json.dumps({"inputs": {"nope": ["a"]}}).encode()])


@pytest.mark.parametrize(("malformed_share", "requests"), [
    (0.0, REQUESTS), (0.1, REQUESTS),
    # The full count: the README's tier keeps both shares above at 64 requests a client.
    pytest.param(0.1, FULL_REQUESTS, marks=pytest.mark.slow)])
def test_load_mixed_sizes_with_malformed_requests(malformed_share, requests, serve, exported):
    served, grpc_address, host, port = serve
    rng = random.Random(7)
    pool = [" ".join(rng.choice(["the", "whale", "sea", "ship", "Ishmael", "captain", "naïve"])
                     for _ in range(rng.randrange(1, 120))) for _ in range(64)]
    want = reference_outputs(exported, pool)["embedding"]
    deadline = time.monotonic() + 600

    def client_loop(index):
        rng = random.Random(index)
        grpc = GrpcClient(grpc_address, "bert", timeout=60) if index % 2 == 0 else None
        conn = None if grpc else http.client.HTTPConnection(host, port, timeout=60)
        latencies, errors, refused = [], [], 0
        for _ in range(requests):
            assert time.monotonic() < deadline
            if rng.random() < malformed_share:
                if conn is None:  # gRPC: a malformed request is one over the row limit
                    try:
                        grpc.predict(["a"] * 17)
                        errors.append("17 rows accepted")
                    except ServerError:
                        refused += 1
                    continue
                status, _, closes = _exchange(conn, "POST", PREDICT, _malformed(rng))
                refused += 400 <= status < 500
                if status >= 500:
                    errors.append(f"HTTP {status}")
                if closes:
                    conn.close()
                    conn = http.client.HTTPConnection(host, port, timeout=60)
                continue
            picks = [rng.randrange(len(pool)) for _ in range(rng.choice([1, 1, 2, 4, 8, 16]))]
            started = time.perf_counter()
            try:
                if grpc:
                    got = grpc.predict_columns({"text": [pool[k] for k in picks]})["embedding"]
                else:
                    status, answer, _ = _exchange(conn, "POST", PREDICT, json.dumps(
                        {"instances": [pool[k] for k in picks]}).encode())
                    assert status == 200, answer
                    got = np.array([row["embedding"] for row in answer["predictions"]])
                if not np.allclose(got, want[picks], atol=1e-4):
                    errors.append("wrong answer")
            except Exception as e:  # noqa: BLE001 - counted
                errors.append(repr(e))
            latencies.append(time.perf_counter() - started)
        (grpc or conn).close()
        return latencies, errors, refused

    started = time.perf_counter()
    with ThreadPoolExecutor(CLIENTS) as executor:
        results = list(executor.map(client_loop, range(CLIENTS)))
    elapsed = time.perf_counter() - started
    latencies = np.concatenate([r[0] for r in results]) * 1000
    errors = [e for r in results for e in r[1]]
    refused = sum(r[2] for r in results)
    print(f"\nload ({malformed_share:.0%} malformed): {len(latencies)} valid requests served, "
          f"{refused} malformed refused, {len(errors)} errors, p50 "
          f"{np.percentile(latencies, 50):.1f} ms, p99 {np.percentile(latencies, 99):.1f} ms, "
          f"{elapsed:.1f} s, server peak RSS {_rss_peak_mb(served.process.pid):.0f} MB")
    assert errors == []
    assert len(latencies) + refused == CLIENTS * requests
    assert (refused > 0) == (malformed_share > 0)
    assert served.process.poll() is None


def test_serve_stops_cleanly_on_sigterm(serve):
    """Last in this file: the module's server process, asked to stop (moved here from
    `test_server.py`, whose own `keras-bert serve` process now starts only for its slow
    load test: one fresh process, ~9 s on 2 busy cores, fewer in the README's tier)."""
    served, grpc_address, _, _ = serve
    with GrpcClient(grpc_address, "bert") as client:
        assert client.status()["model_version_status"][0]["state"] == "AVAILABLE"
    served.process.send_signal(signal.SIGTERM)
    assert served.process.wait(30) == 0
    time.sleep(0.2)
    assert any("stopping" in line for line in served.lines)
