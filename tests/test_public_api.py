"""Packages talk through public names; a task kind implements the hooks `TaskHooks` lists.

The rule, read off the source (no import; `keras_bert/**/*.py`): a module's package is the
folder under `keras_bert/` it lives in (`keras_bert/tasks/token_classification/model.py`:
`tasks`; `keras_bert/config.py`: `keras_bert` itself). An attribute `x._name` (not a
dunder), read or written, on anything but `self`, `cls` or `super()`, must name something
defined in the calling module's own package: a function, method or class named `_name`,
or a `_name = ...` assignment (module or class level, or on `self` / `cls`). So must a
`_name` imported from a keras_bert module. A name defined elsewhere, in another package or
only in a library, is a reach into private parts: a failure unless `LIBRARY_PRIVATE` lists
it with the reason no public way exists.

The check goes by names (it infers no types): a name defined in both packages passes, and
`getattr(x, "_name")` is not seen. It catches what it is for: a job, an exporter or the
command line calling a task kind's hook instead of `TextTaskModel`'s public methods.
"""

from __future__ import annotations

import ast
import inspect
import os

import pytest

PACKAGE_DIR = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                           "keras_bert")

# (module, attribute): a library's private name used on purpose, and why it must be.
LIBRARY_PRIVATE = {
    **{("export/litert_runtime.py", name): "LiteRT's SignatureRunner resizes and allocates "
       "on every call; its interpreter wrapper (ai-edge-litert's and tf.lite's) is the only "
       "way to allocate when a shape changes, and a runner without it is called publicly"
       for name in ("_interpreter_wrapper", "_subgraph_index", "_inputs", "_outputs")},
    ("export/op_audit.py", "_list_all_concrete_functions_for_serialization"):
        "a tf.function traced for several signatures has no public list of its concrete "
        "functions, and its op audit needs the one it holds",
    ("cli/options.py", "_MutuallyExclusiveGroup"):
        "a type hint only: argparse names the class of its mutually exclusive groups no "
        "other way",
    ("models/accumulation.py", "_loss_tracker"):
        "gradient accumulation logs the loss as Keras' own train_step does, in the model's "
        "loss tracker, which Keras does not expose",
    ("models/accumulation.py", "_update_metrics_variables"):
        "Keras' JAX trainer updates metrics statelessly only through this method",
}


def is_private(name: str) -> bool:
    return name.startswith("_") and not (name.startswith("__") and name.endswith("__"))


def modules() -> dict[str, ast.Module]:
    """Every module of keras_bert by its path under `keras_bert/`, parsed."""
    found = {}
    for folder, _, files in os.walk(PACKAGE_DIR):
        for name in files:
            if name.endswith(".py"):
                path = os.path.join(folder, name)
                with open(path, encoding="utf-8") as f:
                    found[os.path.relpath(path, PACKAGE_DIR).replace(os.sep, "/")] = (
                        ast.parse(f.read(), path))
    return found


def package_of(module: str) -> str:
    """`tasks` for `tasks/token_classification/model.py`; `keras_bert` for `config.py`."""
    return module.split("/")[0] if "/" in module else "keras_bert"


def module_package(dotted: str) -> str:
    """The package of the keras_bert module `dotted` (`keras_bert.tasks.x`: `tasks`)."""
    parts = dotted.split(".")
    inner = os.path.join(PACKAGE_DIR, *parts[1:2])
    return parts[1] if len(parts) > 2 or os.path.isdir(inner) else "keras_bert"


def on_self(node: ast.expr) -> bool:
    """`self`, `cls` or `super()`: the object's own attributes."""
    if isinstance(node, ast.Name):
        return node.id in ("self", "cls")
    return (isinstance(node, ast.Call) and isinstance(node.func, ast.Name)
            and node.func.id == "super")


def definitions(tree: ast.Module) -> set[str]:
    """The private names a module defines."""
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(node.name)
        targets = (node.targets if isinstance(node, ast.Assign) else
                   [node.target] if isinstance(node, (ast.AnnAssign, ast.AugAssign)) else [])
        for target in targets:
            for part in ast.walk(target):
                if isinstance(part, ast.Name):
                    names.add(part.id)
                elif isinstance(part, ast.Attribute) and on_self(part.value):
                    names.add(part.attr)
    return {name for name in names if is_private(name)}


def reaches(parsed: dict[str, ast.Module]) -> list[str]:
    """`module:line: what` for every access the rule refuses."""
    defined: dict[str, set[str]] = {}
    for module, tree in parsed.items():
        defined.setdefault(package_of(module), set()).update(definitions(tree))
    found = []
    for module, tree in sorted(parsed.items()):
        own = defined[package_of(module)]
        for node in ast.walk(tree):
            if (isinstance(node, ast.Attribute) and is_private(node.attr)
                    and not on_self(node.value) and node.attr not in own
                    and (module, node.attr) not in LIBRARY_PRIVATE):
                found.append(f"{module}:{node.lineno}: {ast.unparse(node)}")
            elif (isinstance(node, ast.ImportFrom) and node.level == 0
                  and (node.module or "").startswith("keras_bert.")
                  and module_package(node.module) != package_of(module)):
                found += [f"{module}:{node.lineno}: from {node.module} import {alias.name}"
                          for alias in node.names if is_private(alias.name)]
    return found


def test_no_package_reaches_into_another_packages_private_names():
    found = reaches(modules())
    assert not found, ("private names used across packages (call the public API, e.g. "
                       "TextTaskModel's, or list a library's in LIBRARY_PRIVATE with the "
                       "reason):\n" + "\n".join(found))


def test_the_rule_sees_a_cross_package_call_and_lets_a_package_use_its_own():
    parsed = {
        "tasks/model.py": ast.parse("class M:\n    def _hook(self):\n        self._state = 1\n"),
        "tasks/user.py": ast.parse("def f(m):\n    return m._hook(), m._state\n"),
        "jobs/run.py": ast.parse("def g(m):\n    m._state = 2\n    return m._hook()\n"),
        "cli/main.py": ast.parse("from keras_bert.tasks.model import _helper\n"
                                 "def h(m):\n    return m.__class__, super()._x, cls_._y\n"),
    }
    assert reaches(parsed) == [
        "cli/main.py:1: from keras_bert.tasks.model import _helper",
        "cli/main.py:3: cls_._y",
        "jobs/run.py:2: m._state", "jobs/run.py:3: m._hook"]


def test_every_library_private_name_listed_is_still_used():
    used = {(module, node.attr) for module, tree in modules().items()
            for node in ast.walk(tree) if isinstance(node, ast.Attribute)}
    assert set(LIBRARY_PRIVATE) <= used, set(LIBRARY_PRIVATE) - used


def test_every_kind_implements_the_hooks_it_must_and_finetune_kinds_the_job_hooks():
    from keras_bert.tasks.registry import KINDS
    from keras_bert.tasks.task_hooks import TaskHooks

    assert {"_build_network", "_rows", "_score"} <= TaskHooks.__abstractmethods__
    for kind in KINDS.values():
        model_class = kind.model_class()
        assert not inspect.isabstract(model_class), (kind.name,
                                                     model_class.__abstractmethods__)
        for hook in ("_from_settings", "_read_rows"):
            overridden = getattr(model_class, hook).__func__ is not getattr(
                TaskHooks, hook).__func__
            assert overridden == kind.finetune, (kind.name, hook)


def test_the_hook_list_names_every_hook_once_in_one_place():
    from keras_bert.tasks.task_hooks import TaskHooks

    hooks = {name for name in vars(TaskHooks)
             if is_private(name) and name != "_abc_impl"}  # ABC's own bookkeeping
    listed = {name for name in hooks if TaskHooks.__doc__.count(f"`{name}(") == 1}
    assert listed == hooks and len(hooks) == 11


@pytest.mark.parametrize("name", ["from_settings", "read_rows", "fit_rows", "score_rows",
                                  "tune_on", "serving_functions", "in_precision",
                                  "answer_file"])
def test_the_public_methods_are_documented_where_the_model_is(name):
    from keras_bert.tasks.task_model import TextTaskModel

    assert callable(getattr(TextTaskModel, name)) and getattr(TextTaskModel, name).__doc__
    assert f"`{name}`" in TextTaskModel.__doc__
