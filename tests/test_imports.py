"""The client side of serving imports no Keras; the server side no more than TensorFlow does.

Each check runs in a fresh interpreter (this test process has Keras loaded already).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from tests.support.package_walk import KIND_FOLDERS, modules_outside_kind_folders

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
    assert loaded["keras"] == []
    assert loaded["keras_bert"] == ["keras_bert", "keras_bert.environment"]
    import keras_bert
    from keras_bert.models import BertEncoder

    assert keras_bert.BertEncoder is BertEncoder and "BertConfig" in dir(keras_bert)
    with pytest.raises(AttributeError, match="no attribute 'Nope'"):
        keras_bert.Nope  # noqa: B018


@pytest.mark.slow  # 17-30 s: kept out of the README's tier (under 15 min); CI runs it once a cycle
def test_server_side_loads_no_keras_model_code():
    # `import tensorflow` itself imports Keras 3 when it is installed (it eagerly loads
    # keras.src.optimizers); the server must not add to that, nor load keras_bert's models.
    server = loaded_after("keras_bert.devserver.server", "keras_bert.devserver.rest",
                          "keras_bert.devserver.model_store")
    tensorflow_alone = loaded_after("tensorflow", "tensorflow_text", "grpc")
    assert set(server["keras"]) <= set(tensorflow_alone["keras"])
    # The dev server uses the export package's TF-only modules (loader, versions, warmup),
    # the protobuf-only JSON printer and the process defaults `import keras_bert` sets
    # (keras_bert.environment: environment variables, no model code).
    assert not [m for m in server["keras_bert"]
                if not m.startswith(("keras_bert.devserver", "keras_bert.export"))
                and m not in ("keras_bert", "keras_bert.proto_json", "keras_bert.environment")]
    assert "keras_bert.export.exporter" not in server["keras_bert"]
    assert "keras_bert.tasks.serving" not in server["keras_bert"]


def test_module_names_say_what_they_are_once():
    """A file name names one thing: no two modules share a name, but for the parts every
    task kind's folder repeats (`config.py`, `model.py`, ...: the same part of another
    kind; the pretraining folder has the same shape) and a command beside its job
    (`cli/finetune.py` parses what `jobs/finetune.py` runs)."""
    repeated_parts = {"config.py", "network.py", "model.py", "serving.py", "metrics.py",
                      "readers.py", "checkpoints.py"}
    names: dict[str, list[str]] = {}
    for root, _, files in os.walk(os.path.join(REPO, "keras_bert")):
        for name in files:
            if name.endswith(".py") and name != "__init__.py":
                names.setdefault(name, []).append(os.path.relpath(os.path.join(root, name), REPO))
    shared = {}
    for name, paths in names.items():
        folders = {os.path.dirname(p) for p in paths}
        if len(paths) < 2 or name in repeated_parts:
            continue
        if folders == {"keras_bert/cli", "keras_bert/jobs"}:
            continue
        shared[name] = paths
    assert shared == {}


def _graph():
    """`scripts/package_graph.py`, the repository's one import-graph walker."""
    import importlib.util

    spec = importlib.util.spec_from_file_location(
        "package_graph", os.path.join(REPO, "scripts", "package_graph.py"))
    graph = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(graph)
    return graph


def _package_imports() -> dict[str, set[str]]:
    """`{package: packages it imports}` over every `keras_bert` import in the source (those
    inside functions too); a top-level module counts as its own package."""
    return _graph().package_edges(REPO)


def assert_acyclic(edges: dict[str, set[str]]) -> None:
    """Fails naming the first import cycle in `edges` (depth-first from each node)."""
    cycle = _graph().find_cycle(edges)
    assert not cycle, f"import cycle: {' -> '.join(cycle)}"


def test_packages_import_each_other_without_cycles():
    edges = _package_imports()
    # The task kinds build on the encoder, the text pipeline, checkpoints (their models'
    # sources and directories), training and export; none of those imports them back, and
    # the jobs and the command line sit on top.
    assert edges["tasks"] <= {"checkpoints", "config", "export", "models", "text", "training"}
    for below in ("checkpoints", "export", "models", "text", "training", "pretraining"):
        assert not edges.get(below, set()) & {"tasks", "jobs", "cli"}, below
    assert_acyclic(edges)


def _module_imports() -> dict[str, set[str]]:
    """`{module: keras_bert modules it imports}`, imports inside functions included; `from
    PACKAGE import NAME` counts as importing `PACKAGE.NAME` when that is a module."""
    return _graph().module_edges(REPO, "keras_bert")


def test_modules_import_each_other_without_cycles():
    """No module imports one that imports it back, directly or through others, not even
    inside a function: checkpoints.pretraining_heads importing detect_format from
    checkpoints.conversion in a function made such a cycle (issue 30), which is why
    checkpoints.formats holds it."""
    edges = _module_imports()
    assert len(edges) > 100 and "keras_bert.checkpoints.pretraining_heads" in edges
    assert_acyclic(edges)



# The parts every kind's folder holds (`keras_bert/tasks/__init__.py`).
KIND_PARTS = ("config.py", "network.py", "model.py", "serving.py")


def test_each_kind_lives_in_one_folder_with_the_same_parts():
    from keras_bert.tasks.registry import KINDS

    folders = {kind.model.split(".")[0] for kind in KINDS.values()}
    assert folders == set(KIND_FOLDERS)
    for folder in KIND_FOLDERS:
        files = set(os.listdir(os.path.join(REPO, "keras_bert", "tasks", folder)))
        assert set(KIND_PARTS) <= files, (folder, sorted(files))
    for name, kind in KINDS.items():  # each class declares the name the registry gives it
        assert kind.model_class().kind == name
        if kind.checkpoints is not None:  # its hook for other checkpoint layouts: its folder's
            assert kind.checkpoints.split(".")[0] == kind.model.split(".")[0], name
            hooks = kind.checkpoint_hooks()
            assert callable(hooks.read_head) and callable(hooks.hf_head), name


def test_kind_modules_are_imported_only_from_their_folder_and_the_job_layer():
    """A change to a kind touches its folder (and its line in the registry, which imports
    its class by name, at run time): no other package imports a kind's module, except the
    job layer (`keras_bert.jobs`), which runs the kinds for the command line."""
    edges = _module_imports()
    outside = []
    for module, targets in edges.items():
        for target in targets:
            parts = target.split(".")
            if len(parts) > 3 and parts[1] == "tasks" and parts[2] in KIND_FOLDERS:
                own = module.startswith(".".join(parts[:3]))
                if not own and not module.startswith("keras_bert.jobs"):
                    outside.append(f"{module} -> {target}")
    assert outside == []


# Where a kind's classes may be named outside its folder: the registry (its line), the job
# layer and the command line (which run the kinds), and the package's exports (its class's
# public name, resolved through the registry).
KIND_NAMES_ALLOWED = ("keras_bert/tasks/registry.py", "keras_bert/jobs/", "keras_bert/cli/",
                      "keras_bert/__init__.py", "keras_bert/tasks/__init__.py")


def _kind_classes() -> dict[str, str]:
    """`{class name: its kind folder}` of every class a kind's folder defines."""
    import ast

    classes = {}
    for folder in KIND_FOLDERS:
        path = os.path.join(REPO, "keras_bert", "tasks", folder)
        for name in sorted(os.listdir(path)):
            if name.endswith(".py"):
                with open(os.path.join(path, name), encoding="utf-8") as f:
                    tree = ast.parse(f.read())
                classes.update({node.name: folder for node in ast.walk(tree)
                                if isinstance(node, ast.ClassDef)})
    return classes


def kind_code_outside_its_folder() -> list[str]:
    """Where code outside the kinds' folders names a kind's class (its model, network,
    config, serving or reader classes) or a kind's module: `path:line name`. Prose
    (docstrings, comments, messages) may name them; code may not."""
    import ast

    classes = _kind_classes()
    modules = {f"keras_bert.tasks.{folder}" for folder in KIND_FOLDERS}
    found = []
    for rel, tree in modules_outside_kind_folders(KIND_NAMES_ALLOWED):
        for node in ast.walk(tree):
            names = []
            if isinstance(node, ast.Name):
                names = [node.id]
            elif isinstance(node, ast.Attribute):
                names = [node.attr]
            elif isinstance(node, ast.ImportFrom) and node.module:
                names = [alias.name for alias in node.names] + [
                    m for m in modules if node.module == m or node.module.startswith(m + ".")]
            elif isinstance(node, ast.Constant) and isinstance(node.value, str):
                names = [folder for folder in KIND_FOLDERS
                         if node.value.startswith((f"{folder}.", f"keras_bert.tasks.{folder}"))]
            found += [f"{rel}:{node.lineno} {n}" for n in names
                      if n in classes or n in modules or n in KIND_FOLDERS]
    return found


def test_kind_code_sits_in_its_folder_the_registry_and_the_job_layer():
    """A change to a kind touches its folder, its registry line, and (where it changes what
    they offer) the job layer, the command line and the package's exports: nothing else
    names a kind's classes or modules. The checkpoint layouts reach a kind's heads through
    the hook its registry line names (`Kind.checkpoints`), the exports through the
    registry."""
    classes = _kind_classes()
    assert {"TextClassifier", "BertTokenClassifier", "QuestionAnswererConfig"} <= set(classes)
    assert kind_code_outside_its_folder() == []


def test_kind_names_are_compared_nowhere_but_the_registry():
    """Code that needs a kind's behaviour asks its class; the names live in one table
    (`keras_bert/tasks/registry.py`). (TF Serving's REST verbs `classify` / `regress` in
    `keras_bert/devserver/rest.py` are its API, not our kinds.)"""
    import ast

    from keras_bert.tasks.registry import KINDS

    found = []
    for root, _, files in os.walk(os.path.join(REPO, "keras_bert")):
        for name in files:
            path = os.path.join(root, name)
            rel = os.path.relpath(path, REPO)
            if not name.endswith(".py") or rel in ("keras_bert/tasks/registry.py",
                                                    "keras_bert/devserver/rest.py"):
                continue
            with open(path, encoding="utf-8") as f:
                tree = ast.parse(f.read())
            for node in ast.walk(tree):
                if isinstance(node, ast.Compare):
                    constants = [n.value for n in ast.walk(node)
                                 if isinstance(n, ast.Constant)]
                    found += [f"{rel}:{node.lineno} {c!r}" for c in constants if c in KINDS]
    assert found == []


def test_files_and_functions_stay_short():
    """No file over 400 lines, no function over 60 lines."""
    import ast

    long_files, long_functions = [], []
    for root, _, files in os.walk(os.path.join(REPO, "keras_bert")):
        for name in files:
            if not name.endswith(".py"):
                continue
            path = os.path.join(root, name)
            with open(path, encoding="utf-8") as f:
                source = f.read()
            rel = os.path.relpath(path, REPO)
            if source.count("\n") > 400:
                long_files.append(rel)
            for node in ast.walk(ast.parse(source)):
                if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                    length = node.end_lineno - node.lineno + 1
                    if length > 60:
                        long_functions.append(f"{rel}:{node.name} ({length})")
    assert long_files == [] and long_functions == []


def test_the_layout_page_draws_the_imports_as_they_are():
    graph = _graph()
    with open(os.path.join(REPO, "docs", "layout.md"), encoding="utf-8") as f:
        page = f.read()
    assert graph.documented(page) == graph.table(REPO), (
        "docs/layout.md: run `python scripts/package_graph.py --write`")
