"""Hostile text never crashes anything: `keras-bert tokenize`, an export loaded in process
and in TF Serving's loader (a Session), and `keras-bert serve` over gRPC and REST.

The strings come from `tests/support/fuzz_strings.py` (seeded: every plane and category, invalid
UTF-8, controls, combining towers, emoji, CJK, RTL, 1 MiB texts, empty, `[MASK]`-like).
Every string gets valid ids (on a sample, those of the tokenizer in process) and finite
outputs of the right batch size, equal (atol 1e-4) to what the export answers loaded in
process; the server answers a status request afterwards. `FUZZ_COUNT` strings per path in
the default run (3,000, not 10,000, for CI's time: still every family of pieces many times over
and one 1 MiB text); the exhaustive tier (`pytest -m exhaustive`) 100,000 more
through every path, in ten shards of `SHARD_COUNT` = 10,000 with their own seeds, so that
`.ci/run`, which runs one exhaustive test per landing, never spends more than about a minute
and a half on it.
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

from keras_bert.checkpoints import load_model_dir
from keras_bert.client import GrpcClient, RestClient
from keras_bert.export.session_bundle import SessionBundle
from tests.devserver.test_server import ServeProcess
from tests.support.fuzz_strings import fuzz_strings, is_utf8

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
FUZZ_COUNT = 3_000
SHARD_COUNT = 10_000
FULL_SHARDS = 10  # x SHARD_COUNT: 100,000 strings in the exhaustive tier
BATCH = 64


@pytest.fixture(scope="module")
def exported(tiny_model_dir, tiny_export):
    """`(model dir, export dir)` of the shared tiny export (`tests/conftest.py`)."""
    return tiny_model_dir, tiny_export.path


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


def _assert_same(got: dict, want: dict, where: str) -> None:
    """`got` (a server's or the Session's outputs) equals `want`, the in-process outputs."""
    assert sorted(got) == sorted(want), (where, sorted(got), sorted(want))
    for name, value in want.items():
        np.testing.assert_allclose(np.asarray(got[name], value.dtype), value, atol=1e-4,
                                   err_msg=f"{where}: {name}")


TOKENIZE_SAMPLE = 10  # every 10th line's ids are checked against the in-process tokenizer


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
    # A sample (every TOKENIZE_SAMPLE-th line: each family, and a 1 MiB text) gets the ids
    # of the model's tokenizer in process (the CLI strips a line's trailing "\r" as well).
    sample = range(0, count, TOKENIZE_SAMPLE)
    tokenizer = load_model_dir(model_dir).tokenizer()
    want = tokenizer.tokenize(tf.constant([texts[i].rstrip(b"\r") for i in sample])).to_list()
    for i, ids in zip(sample, want, strict=True):
        assert lines[i] == " ".join(map(str, ids)), (i, texts[i][:80])
    return len(lines)


def _through_exports(export_path: str, count: int, seed: int) -> list[dict]:
    """Each batch through `tf.saved_model.load` and through TF Serving's Session loader;
    returns the in-process outputs of each batch (the server's answers are checked
    against them)."""
    loaded = tf.saved_model.load(export_path).signatures["serving_default"]
    bundle = SessionBundle(export_path)
    answers = []
    for batch in _batches(count, seed):
        outputs = {k: v.numpy() for k, v in loaded(text=tf.constant(batch, tf.string)).items()}
        _check_outputs(outputs, len(batch), "in process")
        session = bundle.run("serving_default", {"text": np.array(batch, dtype=object)})
        _check_outputs(session, len(batch), "session")
        _assert_same(session, outputs, "session")
        answers.append(outputs)
    return answers


def _through_server(base_dir: str, count: int, seed: int, answers: list[dict]) -> int:
    """Each batch as a request, alternately gRPC (bytes) and REST (text or b64); each
    answer equals `answers`, the same batch's in-process outputs."""
    served = ServeProcess(base_dir)
    try:
        grpc_address, rest_url = served.addresses()
        grpc_client = GrpcClient(grpc_address, "bert", timeout=120)
        rest_client = RestClient(rest_url, "bert", timeout=120)
        seen = 0
        for i, (batch, want) in enumerate(zip(_batches(count, seed), answers, strict=True)):
            if i % 2:
                instances = [t.decode() if is_utf8(t) else {"b64": base64.b64encode(t).decode()}
                             for t in batch]
                rows = rest_client.request("POST", "/v1/models/bert:predict",
                                           {"instances": instances})["predictions"]
                assert len(rows) == len(batch)
                outputs = {name: [r[name] for r in rows] for name in rows[0]}
                _check_outputs(outputs, len(batch), "rest")
                _assert_same(outputs, want, f"rest, batch {i}")
            else:
                outputs = grpc_client.predict_columns({"text": np.array(batch, dtype=object)})
                _check_outputs(outputs, len(batch), "grpc")
                _assert_same(outputs, want, f"grpc, batch {i}")
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
    answers = _through_exports(export_path, count, seed)
    figures = {"tokenize": _tokenize_cli(model_dir, count, seed),
               "exports": sum(len(next(iter(a.values()))) for a in answers),
               "serve": _through_server(os.path.dirname(export_path), count, seed, answers)}
    print(f"\nfuzz: {figures} strings, seed {seed}, {time.perf_counter() - started:.0f} s")
    assert figures == {"tokenize": count, "exports": count, "serve": count}


@pytest.mark.slow  # over 30 s in CI's durations log docs/runs/ci-durations-2026-11-26-8c1e29d.md
def test_fuzzed_text_never_crashes(exported):
    _fuzz_all(exported, FUZZ_COUNT, seed=1)


@pytest.mark.exhaustive
@pytest.mark.slow  # so that `-m "not slow"` (which replaces the default `-m`) leaves it out
@pytest.mark.parametrize("shard", range(FULL_SHARDS))
def test_fuzzed_text_never_crashes_full(exported, shard):
    _fuzz_all(exported, SHARD_COUNT, seed=2 + shard)
