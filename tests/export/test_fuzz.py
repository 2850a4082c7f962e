"""Hostile text never crashes anything: `keras-bert tokenize`, an export loaded in process
and in TF Serving's loader (a Session), and `keras-bert serve` over gRPC and REST.

The strings come from `tests/fuzz_strings.py` (seeded: every plane and category, invalid
UTF-8, controls, combining towers, emoji, CJK, RTL, 1 MiB texts, empty, `[MASK]`-like).
Every string gets valid ids / finite outputs of the right batch size; the server answers a
status request afterwards. `FUZZ_COUNT` strings per path in the default run; the exhaustive
test (`pytest -m exhaustive`, run by .ci/run when time allows) 100,000 through every path.
"""

from __future__ import annotations

import base64
import os
import subprocess
import sys
import time

import numpy as np
import pytest
import tensorflow as tf

from keras_bert.client import GrpcClient, RestClient
from keras_bert.export.exporter import export_model
from keras_bert.export.session_bundle import SessionBundle
from tests.devserver.test_server import ServeProcess
from tests.export.helpers import make_tiny_model_dir
from tests.fuzz_strings import fuzz_strings, is_utf8

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
FUZZ_COUNT = 10_000
FULL_COUNT = 100_000
BATCH = 64


@pytest.fixture(scope="module")
def exported(tmp_path_factory):
    model_dir = make_tiny_model_dir(str(tmp_path_factory.mktemp("tiny")))
    export = export_model(model_dir, str(tmp_path_factory.mktemp("serving") / "bert"),
                          target=None)
    return model_dir, export.path


def _batches(count: int, seed: int):
    batch = []
    for text in fuzz_strings(count, seed):
        batch.append(text)
        if len(batch) == BATCH:
            yield batch
            batch = []
    if batch:
        yield batch


def _check_outputs(outputs: dict, size: int, where: str) -> None:
    assert outputs, where
    for name, value in outputs.items():
        value = np.asarray(value)
        assert value.shape[0] == size, (where, name, value.shape)
        if value.dtype.kind == "f":
            assert np.isfinite(value).all(), (where, name)


def _tokenize_cli(model_dir: str, count: int, seed: int) -> int:
    """Runs `keras-bert tokenize` over the strings (one per line); returns the line count."""
    texts = [t.replace(b"\n", b" ") for t in fuzz_strings(count, seed)]
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3", PYTHONPATH=ROOT)
    done = subprocess.run([sys.executable, "-m", "keras_bert.cli", "tokenize", "--model",
                           model_dir], input=b"\n".join(texts) + b"\n", capture_output=True,
                          env=env, cwd=ROOT, timeout=1800)
    assert done.returncode == 0, done.stderr[-2000:]
    with open(os.path.join(model_dir, "vocab.txt"), encoding="utf-8") as f:
        vocab_size = sum(1 for _ in f)
    lines = done.stdout.decode().split("\n")[:-1]
    assert len(lines) == count
    for line in lines:
        ids = [int(x) for x in line.split()]
        assert all(0 <= i < vocab_size for i in ids)
    return len(lines)


def _through_exports(export_path: str, count: int, seed: int) -> int:
    """Each batch through `tf.saved_model.load` and through TF Serving's Session loader."""
    loaded = tf.saved_model.load(export_path).signatures["serving_default"]
    bundle = SessionBundle(export_path)
    seen = 0
    for batch in _batches(count, seed):
        outputs = loaded(text=tf.constant(batch, tf.string))
        _check_outputs({k: v.numpy() for k, v in outputs.items()}, len(batch), "in process")
        session = bundle.run("serving_default", {"text": np.array(batch, dtype=object)})
        _check_outputs(session, len(batch), "session")
        for name, value in outputs.items():
            np.testing.assert_allclose(session[name], value.numpy(), atol=1e-4)
        seen += len(batch)
    return seen


def _through_server(base_dir: str, count: int, seed: int) -> int:
    """Each batch as a request, alternately gRPC (bytes) and REST (text or b64)."""
    served = ServeProcess(base_dir)
    try:
        grpc_address, rest_url = served.addresses()
        grpc_client = GrpcClient(grpc_address, "bert", timeout=120)
        rest_client = RestClient(rest_url, "bert", timeout=120)
        seen = 0
        for i, batch in enumerate(_batches(count, seed)):
            if i % 2:
                instances = [t.decode() if is_utf8(t) else {"b64": base64.b64encode(t).decode()}
                             for t in batch]
                rows = rest_client.request("POST", "/v1/models/bert:predict",
                                           {"instances": instances})["predictions"]
                assert len(rows) == len(batch)
                _check_outputs({"embedding": [r["embedding"] for r in rows]}, len(batch), "rest")
            else:
                outputs = grpc_client.predict_columns({"text": np.array(batch, dtype=object)})
                _check_outputs(outputs, len(batch), "grpc")
            seen += len(batch)
        assert grpc_client.status()["model_version_status"][0]["state"] == "AVAILABLE"
        assert rest_client.request("GET", "/v1/models/bert")["model_version_status"]
        grpc_client.close()
        rest_client.close()
        assert served.process.poll() is None  # still running
        return seen
    finally:
        served.process.kill()
        served.process.wait(30)


def _fuzz_all(exported, count: int, seed: int) -> None:
    model_dir, export_path = exported
    started = time.perf_counter()
    figures = {"tokenize": _tokenize_cli(model_dir, count, seed),
               "exports": _through_exports(export_path, count, seed),
               "serve": _through_server(os.path.dirname(export_path), count, seed)}
    print(f"\nfuzz: {figures} strings, seed {seed}, {time.perf_counter() - started:.0f} s")
    assert figures == {"tokenize": count, "exports": count, "serve": count}


def test_fuzzed_text_never_crashes(exported):
    _fuzz_all(exported, FUZZ_COUNT, seed=1)


@pytest.mark.exhaustive
def test_fuzzed_text_never_crashes_full(exported):
    _fuzz_all(exported, FULL_COUNT, seed=2)
