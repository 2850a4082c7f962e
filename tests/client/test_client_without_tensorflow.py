"""The client distribution (`client/`, `keras-bert-client[grpc]`) in a fresh virtual
environment without TensorFlow: it installs NumPy and grpcio only, and its
`keras-bert-query` (REST and gRPC) and `RestClient` answer exactly as `keras-bert query`
of the full package does, from `keras-bert serve` serving an exported BERT.

The new environment (~7 s on a busy 2-core Zen 4, and a subprocess per command) is the slow
tier's; the README's tier runs the same commands and `RestClient` in a fresh interpreter of
this environment where TensorFlow, Keras, protobuf and keras_bert cannot be imported
(`test_the_client_answers_where_tensorflow_cannot_be_imported`), and reads the client's
requirements and console script from its settings
(`tests/test_wheel.py::test_the_build_settings_ship_every_tracked_file_and_require_the_client`).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

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


# What a Python without TensorFlow cannot import (its packages, and what only they bring).
BLOCKED = ("tensorflow", "tensorflow_serving", "tensorflow_text", "keras", "keras_bert",
           "google.protobuf")
WITHOUT_TENSORFLOW = """
import contextlib, importlib.abc, io, json, sys
blocked = json.loads(sys.argv[1])

class Missing(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if any(name == b or name.startswith(b + ".") for b in blocked):
            raise ModuleNotFoundError(f"No module named {name!r}", name=name)

sys.meta_path.insert(0, Missing())
from keras_bert_client import RestClient, query
answers = []
for argv in json.loads(sys.argv[2]):
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = query.main(argv)
    answers.append([code, out.getvalue(), err.getvalue()])
with RestClient(sys.argv[3], "bert") as client:
    rows = [json.dumps(row) + "\\n" for row in client.predict(json.loads(sys.argv[4]))]
print(json.dumps({"answers": answers, "rows": "".join(rows), "loaded": sorted(
    m for m in sys.modules if any(m == b or m.startswith(b + ".") for b in blocked))}))
"""


def test_the_client_answers_where_tensorflow_cannot_be_imported(server, capsys):
    """The README tier's guard of the tests below: `keras-bert-query`'s code over REST and
    gRPC, and `RestClient`, in a fresh interpreter that can import none of `BLOCKED`, answer
    as `keras-bert query` of the full package does, one error line for a bad signature."""
    commands = []
    for address, flags in ((server.rest_url.removeprefix("http://"), ["--rest"]),
                           (server.grpc_address, [])):
        args = ["--server", address, "--model-name", "bert", *flags]
        commands += [[*args, *extra] for extra in (TEXTS, ["--status"], ["--metadata"])]
    want = []
    for argv in commands:
        assert main(["query", *argv]) == 0
        want.append([0, capsys.readouterr().out, ""])
    assert main(["query", "--rest", "--server", server.rest_url, "--model-name", "bert",
                 *TEXTS]) == 0
    want_rows = capsys.readouterr().out
    failing = [*commands[0][:5], "--signature", "nope", "a"]
    got = _run([sys.executable, "-c", WITHOUT_TENSORFLOW, json.dumps(BLOCKED),
                json.dumps([*commands, failing]), server.rest_url, json.dumps(TEXTS)])
    assert got.returncode == 0, got.stderr[-2000:]
    found = json.loads(got.stdout)
    assert found["loaded"] == []
    assert found["answers"][:-1] == want
    code, out, err = found["answers"][-1]
    assert code == 1 and out == "" and "NOT_FOUND" in err
    assert found["rows"] == want_rows
    rows = [json.loads(line) for line in want_rows.splitlines()]
    assert len(rows) == len(TEXTS) and rows[0]


@pytest.mark.slow
def test_the_client_installs_without_tensorflow(client_python):
    installed = set(json.loads(_run([client_python, "-c", INSTALLED]).stdout))
    assert {"keras-bert-client", "numpy", "grpcio"} <= installed
    assert not installed & {"tensorflow", "tensorflow-cpu", "tensorflow-serving-api",
                            "protobuf", "keras", "keras-bert-tf"}
    probe = _run([client_python, "-c", "import tensorflow"])
    assert probe.returncode == 1 and "No module named 'tensorflow'" in probe.stderr


@pytest.mark.slow
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


@pytest.mark.slow
def test_rest_client_in_python_answers_as_keras_bert_query(client_python, server, capsys):
    assert main(["query", "--rest", "--server", server.rest_url, "--model-name", "bert",
                 *TEXTS]) == 0
    want = capsys.readouterr().out
    got = _run([client_python, "-c", PYTHON_CLIENT, server.rest_url, *TEXTS])
    assert got.returncode == 0, got.stderr
    assert got.stdout == want
    rows = [json.loads(line) for line in want.splitlines()]
    assert len(rows) == len(TEXTS) and rows[0]  # named outputs of the encoder export
