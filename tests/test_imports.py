"""The client side of serving imports no Keras; the server side no more than TensorFlow does.

Each check runs in a fresh interpreter (this test process has Keras loaded already).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

PROBE = """
import json, sys
for name in sys.argv[1:]:
    __import__(name)
print(json.dumps({"keras": sorted(m for m in sys.modules if m == "keras" or m.startswith("keras.")),
                  "keras_bert": sorted(m for m in sys.modules
                                       if m == "keras_bert" or m.startswith("keras_bert."))}))
"""


def loaded_after(*modules: str) -> dict:
    """`{"keras": [...], "keras_bert": [...]}` modules loaded by importing `modules`."""
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3")
    done = subprocess.run([sys.executable, "-c", PROBE, *modules], cwd=REPO, env=env,
                          capture_output=True, text=True, timeout=180)
    assert done.returncode == 0, done.stderr[-2000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


@pytest.mark.parametrize("module", ["keras_bert.client", "keras_bert.export",
                                    "keras_bert.export.op_audit", "keras_bert.cli"])
def test_client_side_imports_no_keras(module):
    loaded = loaded_after(module)
    assert loaded["keras"] == [], loaded["keras"][:5]
    assert "keras_bert.models" not in loaded["keras_bert"]


def test_package_exposes_encoder_lazily():
    loaded = loaded_after("keras_bert")
    assert loaded["keras"] == [] and loaded["keras_bert"] == ["keras_bert"]
    import keras_bert
    from keras_bert.models import BertEncoder

    assert keras_bert.BertEncoder is BertEncoder and "BertConfig" in dir(keras_bert)
    with pytest.raises(AttributeError, match="no attribute 'Nope'"):
        keras_bert.Nope  # noqa: B018


def test_server_side_loads_no_keras_model_code():
    # `import tensorflow` itself imports Keras 3 when it is installed (it eagerly loads
    # keras.src.optimizers); the server must not add to that, nor load keras_bert's models.
    server = loaded_after("keras_bert.devserver.server", "keras_bert.devserver.rest",
                          "keras_bert.devserver.model_store")
    tensorflow_alone = loaded_after("tensorflow", "tensorflow_text", "grpc")
    assert set(server["keras"]) <= set(tensorflow_alone["keras"])
    # The dev server uses the export package's TF-only modules (loader, versions, warmup)
    # and the protobuf-only JSON printer.
    assert not [m for m in server["keras_bert"]
                if not m.startswith(("keras_bert.devserver", "keras_bert.export"))
                and m not in ("keras_bert", "keras_bert.proto_json")]
    assert "keras_bert.export.exporter" not in server["keras_bert"]
    assert "keras_bert.tasks.serving_module" not in server["keras_bert"]


def test_module_names_say_what_they_are_once():
    # A file name names one thing: no two modules of the package share a name.
    names: dict[str, list[str]] = {}
    for root, _, files in os.walk(os.path.join(REPO, "keras_bert")):
        for name in files:
            if name.endswith(".py") and name != "__init__.py":
                names.setdefault(name, []).append(os.path.relpath(os.path.join(root, name), REPO))
    assert {n: paths for n, paths in names.items() if len(paths) > 1} == {}


def _package_imports() -> dict[str, set[str]]:
    """`{package: packages it imports}` over every `keras_bert` import in the source (those
    inside functions too); a top-level module counts as its own package."""
    import ast

    edges: dict[str, set[str]] = {}
    source = os.path.join(REPO, "keras_bert")
    for root, _, files in os.walk(source):
        for name in files:
            if not name.endswith(".py"):
                continue
            path = os.path.join(root, name)
            package = os.path.relpath(path, source).split(os.sep)[0].removesuffix(".py")
            with open(path, encoding="utf-8") as f:
                tree = ast.parse(f.read())
            for node in ast.walk(tree):
                modules = []
                if isinstance(node, ast.ImportFrom) and node.module:
                    modules = [node.module]
                elif isinstance(node, ast.Import):
                    modules = [alias.name for alias in node.names]
                for module in modules:
                    parts = module.split(".")
                    if parts[0] == "keras_bert" and len(parts) > 1 and parts[1] != package:
                        edges.setdefault(package, set()).add(parts[1])
    return edges


def assert_acyclic(edges: dict[str, set[str]]) -> None:
    """Fails naming the first import cycle in `edges` (depth-first from each node)."""
    done: set[str] = set()

    def visit(node: str, path: list[str]):
        assert node not in path, f"import cycle: {' -> '.join([*path, node])}"
        if node in done:
            return
        for target in sorted(edges.get(node, ())):
            visit(target, [*path, node])
        done.add(node)

    for node in sorted(edges):
        visit(node, [])


def test_packages_import_each_other_without_cycles():
    edges = _package_imports()
    # task kinds sit below checkpoints and export (`config`: the package's bottom module)
    assert edges["tasks"] <= {"config", "models", "text"}
    assert "export" not in edges["checkpoints"] and "training" not in edges["export"]
    assert_acyclic(edges)


def _module_imports() -> dict[str, set[str]]:
    """`{module: keras_bert modules it imports}`, imports inside functions included; `from
    PACKAGE import NAME` counts as importing `PACKAGE.NAME` when that is a module."""
    import ast

    source = os.path.join(REPO, "keras_bert")
    modules = {}
    for root, _, files in os.walk(source):
        for name in files:
            if name.endswith(".py"):
                path = os.path.join(root, name)
                dotted = os.path.relpath(path, REPO)[:-3].replace(os.sep, ".")
                modules[dotted.removesuffix(".__init__")] = path
    edges: dict[str, set[str]] = {}
    for module, path in modules.items():
        with open(path, encoding="utf-8") as f:
            tree = ast.parse(f.read())
        for node in ast.walk(tree):
            targets = []
            if isinstance(node, ast.ImportFrom) and node.module:
                targets = [f"{node.module}.{alias.name}" for alias in node.names]
                targets = [t if t in modules else node.module for t in targets]
            elif isinstance(node, ast.Import):
                targets = [alias.name for alias in node.names]
            edges.setdefault(module, set()).update(
                t for t in targets if t in modules and t != module)
    return edges


def test_modules_import_each_other_without_cycles():
    """No module imports one that imports it back, directly or through others, not even
    inside a function (session 19 removed checkpoints.conversion <-> checkpoints.heads)."""
    edges = _module_imports()
    assert len(edges) > 100 and "keras_bert.checkpoints.heads" in edges
    assert_acyclic(edges)

