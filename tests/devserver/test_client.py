"""`GrpcClient`, `RestClient` and `keras-bert query` against the development server.

The served model is a small hand-written SavedModel with the classifier's output names
(`logits`, `probabilities`, `label_id`, `label`), a pair input (`text`, `text_b`), an output
that is not valid UTF-8 and a one-output `regress` signature: it saves and loads in about a
second and covers what the BERT encoder export does not (string and bytes outputs, single
outputs over REST).
"""

from __future__ import annotations

import json
import os

import numpy as np
import pytest
import tensorflow as tf

from keras_bert.cli import main
from keras_bert.client import GrpcClient, RestClient, ServerError, rows
from keras_bert.export.warmup import predict_log, write_warmup
from tests.support.devserver import model_server

TEXTS = ["great film", "bad", "naïve café"]
TEXT_B = ["ok", "a much longer text", "x"]


class PairClassifier(tf.Module):
    """`text`, `text_b` -> a 'positive' label when `text` is longer than `text_b`."""

    @tf.function(input_signature=[tf.TensorSpec([None], tf.string, name="text"),
                                  tf.TensorSpec([None], tf.string, name="text_b")])
    def classify(self, text, text_b):
        """Classifier-style outputs, plus `last_byte`."""
        score = tf.cast(tf.strings.length(text) - tf.strings.length(text_b), tf.float32)
        logits = tf.stack([-score, score], axis=-1)
        label_id = tf.argmax(logits, axis=-1, output_type=tf.int32)
        return {"logits": logits, "probabilities": tf.nn.softmax(logits), "label_id": label_id,
                "label": tf.gather(tf.constant(["negative", "positive"]), label_id),
                # The last byte of `text`: not valid UTF-8 when it splits a character.
                "last_byte": tf.strings.substr(text, tf.strings.length(text) - 1,
                                               tf.ones_like(tf.strings.length(text)))}

    @tf.function(input_signature=[tf.TensorSpec([None], tf.string, name="text")])
    def regress(self, text):
        """One output: the text's length in bytes."""
        return {"score": tf.cast(tf.strings.length(text), tf.float32)}


def expected_row(text: str, text_b: str) -> dict:
    """What the classifier answers for one pair, as Python values."""
    score = float(len(text.encode()) - len(text_b.encode()))
    probabilities = tf.nn.softmax([-score, score]).numpy().tolist()
    last = text.encode()[-1:]
    try:
        last = last.decode()
    except UnicodeDecodeError:
        pass
    label_id = int(score > 0)
    return {"logits": [-score, score], "probabilities": probabilities, "label_id": label_id,
            "label": ["negative", "positive"][label_id], "last_byte": last}


def assert_row(got: dict, want: dict) -> None:
    """Equal dicts (floats to 1e-6)."""
    assert set(got) == set(want)
    for name, value in want.items():
        if isinstance(value, list):
            np.testing.assert_allclose(got[name], value, atol=1e-6)
        else:
            assert got[name] == value, (name, got[name], value)


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    """`ModelServer` of a `PairClassifier` SavedModel (model name "pairs", with warmup)."""
    base = tmp_path_factory.mktemp("fake") / "pairs"
    module = PairClassifier()
    path = str(base / "1")
    tf.saved_model.save(module, path, signatures={"serving_default": module.classify,
                                                  "regress": module.regress})
    write_warmup(path, [predict_log("pairs", "serving_default",
                                    {"text": np.array([b"a"], object),
                                     "text_b": np.array([b"b"], object)})])
    with model_server(str(base), "pairs", grpc_port=0, rest_port=0) as running:
        yield running


@pytest.fixture(params=["grpc", "rest"])
def client(request, server):
    """A gRPC or a REST client of `server`."""
    if request.param == "grpc":
        made = GrpcClient(server.grpc_address, "pairs", timeout=30)
    else:
        made = RestClient(server.rest_url.removeprefix("http://"), "pairs", timeout=30)
    yield made
    made.close()


def test_predict_returns_one_dict_of_python_values_per_text(client):
    got = client.predict(TEXTS, TEXT_B)
    assert len(got) == len(TEXTS)
    for row, text, text_b in zip(got, TEXTS, TEXT_B, strict=True):
        assert_row(row, expected_row(text, text_b))
        assert isinstance(row["label"], str) and isinstance(row["label_id"], int)
    assert got[2]["last_byte"] == b"\xa9"  # half of "é": bytes, not text
    assert client.predict("great film", "ok", version=1)[0]["label"] == "positive"


def test_single_output_signature(client):
    assert client.predict(["abc", "a"], signature="regress") == [{"score": 3.0}, {"score": 1.0}]


def test_metadata_and_status(client):
    defs = client.metadata()["metadata"]["signature_def"]["signature_def"]
    assert set(defs["serving_default"]["inputs"]) == {"text", "text_b"}
    assert set(defs["regress"]["outputs"]) == {"score"}
    (status,) = client.status()["model_version_status"]
    assert status["version"] == "1" and status["state"] == "AVAILABLE"


def test_grpc_metadata_and_status_equal_rest(server):
    # gRPC's answers are decoded by keras_bert_client; REST's are the server's protos
    # printed by protobuf's own JSON printer.
    with GrpcClient(server.grpc_address, "pairs") as grpc_client, \
            RestClient(server.rest_url, "pairs") as rest_client:
        assert grpc_client.metadata() == rest_client.metadata()
        assert grpc_client.status() == rest_client.status()
        assert grpc_client.metadata(1) == rest_client.metadata(1)


@pytest.mark.parametrize("call, code, message", [
    (lambda c: c.predict(["a"]), "INVALID_ARGUMENT", "missing input(s) 'text_b'"),
    (lambda c: c.predict(["a"], ["b"], signature="nope"), "NOT_FOUND", "signature 'nope'"),
    (lambda c: c.predict(["a"], ["b"], version=4), "NOT_FOUND", "version 4"),
    (lambda c: c.status(4), "NOT_FOUND", "version 4"),
])
def test_errors_raise_server_error(client, call, code, message):
    with pytest.raises(ServerError) as error:
        call(client)
    assert error.value.code == code and message in error.value.message
    with pytest.raises(ValueError, match="text_b has 1 texts"):
        client.predict(["a", "b"], ["c"])


def test_unknown_model(server):
    with GrpcClient(server.grpc_address, "nope") as client, pytest.raises(ServerError) as error:
        client.predict(["a"], ["b"])
    assert error.value.code == "NOT_FOUND"
    with pytest.raises(ServerError) as error:
        RestClient(server.rest_url, "nope").status()
    assert (error.value.code, error.value.http_status) == ("NOT_FOUND", 404)


def test_rows():
    columns = {"label": np.array([b"yes", b"\xff"], object), "ids": np.array([[1, 2], [3, 4]]),
               "score": np.array([0.5, 1.5], np.float32)}
    assert rows(columns, 2) == [{"label": "yes", "ids": [1, 2], "score": 0.5},
                                {"label": b"\xff", "ids": [3, 4], "score": 1.5}]


@pytest.mark.parametrize("protocol", ["grpc", "rest"])
def test_query_prints_one_json_object_per_text(server, protocol, capsys):
    address = server.grpc_address if protocol == "grpc" else server.rest_url
    args = ["query", "--server", address.removeprefix("http://"), "--model-name", "pairs"]
    args += ["--rest"] if protocol == "rest" else []
    pairs = [arg for text_b in TEXT_B for arg in ("--text-b", text_b)]
    assert main(args + pairs + TEXTS) == 0
    lines = capsys.readouterr().out.splitlines()
    assert len(lines) == len(TEXTS)
    for line, text, text_b in zip(lines, TEXTS, TEXT_B, strict=True):
        row = json.loads(line)
        want = expected_row(text, text_b)
        if isinstance(want["last_byte"], bytes):  # printed as TF Serving's {"b64": ...}
            want["last_byte"] = {"b64": "qQ=="}
        assert_row(row, want)
    assert main(args + ["--signature", "regress", "abc"]) == 0
    assert json.loads(capsys.readouterr().out) == {"score": 3.0}
    assert main(args + ["--status"]) == 0
    status = json.loads(capsys.readouterr().out)
    assert status["model_version_status"][0]["state"] == "AVAILABLE"
    # A server error: a message on stderr and exit status 1.
    assert main(args + ["--signature", "nope", "--text-b", "b", "a"]) == 1
    assert "NOT_FOUND" in capsys.readouterr().err


def test_query_needs_a_text(capsys):
    assert main(["query", "--server", "127.0.0.1:1"]) == 2
    assert "give at least one TEXT" in capsys.readouterr().err


def test_cli_lists_serve_and_query():
    from keras_bert.cli import build_parser

    parser = build_parser()
    args = parser.parse_args(["serve", os.devnull, "--grpc-port", "0", "--rest-port", "0"])
    assert (args.grpc_port, args.rest_port, args.host, args.poll_seconds) == (0, 0,
                                                                               "127.0.0.1", 2.0)
    args = parser.parse_args(["query", "--rest", "hello"])
    assert args.texts == ["hello"] and args.rest and args.model_name == "bert"


def test_serve_reports_a_busy_port_and_a_missing_directory(server, tmp_path, capsys):
    host, port = server.grpc_address.split(":")
    args = ["serve", server.store.base_dir, "--model-name", "pairs", "--rest-port", "0"]
    assert main(args + ["--grpc-port", port]) == 2  # the running server holds that port
    assert f"cannot listen on 127.0.0.1:{port}" in capsys.readouterr().err
    assert main(["serve", str(tmp_path / "missing")]) == 2
    assert "is not a directory" in capsys.readouterr().err
