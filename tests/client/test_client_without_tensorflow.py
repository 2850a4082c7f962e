"""The client distribution (`client/`, `keras-bert-client[grpc]`) in a fresh virtual
environment without TensorFlow: it installs NumPy and grpcio only, and its
`keras-bert-query` (REST and gRPC) and `RestClient` answer exactly as `keras-bert query`
of the full package does, from `keras-bert serve` serving an exported BERT."""

from __future__ import annotations

import json
import os
import subprocess

import pytest

from keras_bert.cli import main
from tests.export.runtimes import new_environment
from tests.support.devserver import model_server

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
TEXTS = ["Call me Ishmael.", "naïve café, 100,000 words"]
INSTALLED = ("import importlib.metadata as m, json; print(json.dumps(sorted("
             "d.metadata['Name'].lower() for d in m.distributions())))")
PYTHON_CLIENT = """
import json, sys
from keras_bert_client import RestClient
with RestClient(sys.argv[1], "bert") as client:
    for row in client.predict(sys.argv[2:]):
        print(json.dumps(row))
"""


@pytest.fixture(scope="module")
def client_python(tmp_path_factory) -> str:
    """A new environment holding `client/` with its gRPC extra (and nothing else asked)."""
    return new_environment(tmp_path_factory.mktemp("client-env") / "venv",
                           os.path.join(REPO, "client") + "[grpc]")


def _run(command: list[str]) -> subprocess.CompletedProcess:
    """`command` in a folder outside the repository (whose metadata `-c` would see)."""
    return subprocess.run(command, capture_output=True, text=True, timeout=120,
                          cwd=os.path.expanduser("~"))


@pytest.fixture(scope="module")
def server(tiny_export):
    with model_server(os.path.dirname(tiny_export.path), "bert", grpc_port=0,
                      rest_port=0) as running:
        yield running


def test_the_client_installs_without_tensorflow(client_python):
    installed = set(json.loads(_run([client_python, "-c", INSTALLED]).stdout))
    assert {"keras-bert-client", "numpy", "grpcio"} <= installed
    assert not installed & {"tensorflow", "tensorflow-cpu", "tensorflow-serving-api",
                            "protobuf", "keras", "keras-bert-tf"}
    probe = _run([client_python, "-c", "import tensorflow"])
    assert probe.returncode == 1 and "No module named 'tensorflow'" in probe.stderr


@pytest.mark.parametrize("protocol", ["rest", "grpc"])
def test_keras_bert_query_answers_as_the_full_package(client_python, server, protocol,
                                                      capsys):
    address = (server.rest_url if protocol == "rest" else server.grpc_address)
    args = ["--server", address.removeprefix("http://"), "--model-name", "bert"]
    args += ["--rest"] if protocol == "rest" else []
    script = os.path.join(os.path.dirname(client_python), "keras-bert-query")
    for extra in (TEXTS, ["--status"], ["--metadata"]):
        assert main(["query", *args, *extra]) == 0
        want = capsys.readouterr().out
        got = _run([script, *args, *extra])
        assert got.returncode == 0, got.stderr
        assert got.stdout == want and got.stderr == ""
    failed = _run([script, *args, "--signature", "nope", "a"])
    assert failed.returncode == 1 and "NOT_FOUND" in failed.stderr


def test_rest_client_in_python_answers_as_keras_bert_query(client_python, server, capsys):
    assert main(["query", "--rest", "--server", server.rest_url, "--model-name", "bert",
                 *TEXTS]) == 0
    want = capsys.readouterr().out
    got = _run([client_python, "-c", PYTHON_CLIENT, server.rest_url, *TEXTS])
    assert got.returncode == 0, got.stderr
    assert got.stdout == want
    rows = [json.loads(line) for line in want.splitlines()]
    assert len(rows) == len(TEXTS) and rows[0]  # named outputs of the encoder export
