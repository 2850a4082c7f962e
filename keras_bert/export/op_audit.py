"""Op audit: will a SavedModel load in a given TensorFlow Serving release?

TensorFlow Serving's model server refuses a SavedModel whose graph uses an op it does not
register (`Op type not registered 'TFText>RoundRobinTrim'`, serving issue #2267). The ops it
registers are those of the core TensorFlow it was built with plus the TF Text ops it links
(`@org_tensorflow_text//tensorflow_text:ops_lib`, every TF Text kernel). This module lists
every op a SavedModel (or a `tf.function`, before exporting) uses and compares it with the
op registries of real releases, stored in `oplists/` (see `oplists/SOURCE.md` and
`scripts/generate_oplists.py`, which lists them from the PyPI wheels):

- `tf-2.12-core.txt`, `tf-2.13-core.txt`, `tf-2.20-core.txt`: core TensorFlow's registry;
- `tf-text-2.12.1.txt`, `tf-text-2.20.0.txt`: the ops TF Text adds.

Targets (`TARGETS`) name the model servers an export must load in:

- `serving-2.13+` (default): every TF Serving release from 2.13 to 2.20. Serving 2.13-2.19
  build core TensorFlow of their own release with TF Text 2.12.1; serving 2.20 builds TF
  2.20 with TF Text 2.20.0. An op must be in both `tf-2.13-core + tf-text-2.12.1` and
  `tf-2.20-core + tf-text-2.20.0`. Core 2.13 is the oldest core of the range (ops are
  only added from one core release to the next, bar internal `_Mkl*`/TPU/TensorRT ops,
  which the 2.20 side catches); core 2.12 would wrongly refuse the 12 ops TF 2.13 added.
- `serving-2.20`: TF Serving 2.20 (core 2.20 + TF Text 2.20.0, which adds
  `TFText>RoundRobinTrim`, `TFText>RoundRobinGenerateMasks` and `TFText>Utf8Binarize`).
- `tf-2.12`: Python TensorFlow 2.12.1 with TF Text 2.12.1 (the oldest pairing that has
  every TF Text op of the default target), e.g. loading an export in an older trainer.

The audit compares op NAMES only. A kernel missing for an op's dtype or device, or a
variable the SaverDef does not restore, shows only when a runtime loads and runs the graph:
`keras_bert.export.runtime_check` (`keras-bert audit --runtime PYTHON`) does that.

A target may also be given as op-list file path(s) (their union is one release) or as a
`Target`. Ops that need the Python interpreter (`tf.py_function`, `tf.numpy_function`)
are registered by every core but no model server has their kernels: they always fail.

    report = audit("export/1")                 # AuditReport; report.ok, report.missing
    check("export/1", "serving-2.13+")         # raises UnsupportedOpError when not ok
    ops_in_concrete_function(fn)               # {op: [function, ...]} before exporting
"""

from __future__ import annotations

import dataclasses
import functools
import os
from collections.abc import Iterable, Mapping

OPLIST_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "oplists")

#: Op list files (without `.txt`) and what they are, in release order (used for hints).
OP_LISTS = {
    "tf-2.12-core": "core TensorFlow 2.12",
    "tf-2.13-core": "core TensorFlow 2.13",
    "tf-2.20-core": "core TensorFlow 2.20",
    "tf-text-2.12.1": "TF Text 2.12.1",
    "tf-text-2.20.0": "TF Text 2.20.0",
}

#: Registered in every core, but their kernels exist only inside a Python process.
PYTHON_ONLY_OPS = frozenset({"PyFunc", "PyFuncStateless", "EagerPyFunc"})

#: Where the ops found in no graph node but in `MetaInfoDef.stripped_op_list` are reported.
STRIPPED_OP_LIST = "stripped_op_list"


@dataclasses.dataclass(frozen=True)
class Target:
    """Model servers an export must load in.

    Attributes:
      name: the target's name.
      description: which releases, in words.
      releases: one entry per release (or group of releases with the same ops): the op
        list names (see `OP_LISTS`) or file paths whose union that release registers. An
        op is supported when every release registers it.
      excluded: ops never supported, whatever the lists say (default `PYTHON_ONLY_OPS`).
    """

    name: str
    description: str
    releases: tuple[tuple[str, ...], ...]
    excluded: frozenset[str] = PYTHON_ONLY_OPS

    @functools.cached_property
    def ops(self) -> frozenset[str]:
        """Every op all of the target's releases register."""
        supported = None
        for lists in self.releases:
            ops = frozenset().union(*(load_op_list(name) for name in lists))
            supported = ops if supported is None else supported & ops
        return (supported or frozenset()) - self.excluded


TARGETS = {
    "serving-2.13+": Target(
        "serving-2.13+", "TensorFlow Serving 2.13 to 2.20",
        (("tf-2.13-core", "tf-text-2.12.1"), ("tf-2.20-core", "tf-text-2.20.0"))),
    "serving-2.20": Target(
        "serving-2.20", "TensorFlow Serving 2.20", (("tf-2.20-core", "tf-text-2.20.0"),)),
    "tf-2.12": Target(
        "tf-2.12", "TensorFlow 2.12.1 with TF Text 2.12.1 (Python)",
        (("tf-2.12-core", "tf-text-2.12.1"),)),
}
DEFAULT_TARGET = "serving-2.13+"


class UnsupportedOpError(ValueError):
    """A graph uses ops the target model servers do not register. `.report` tells all."""

    def __init__(self, report: AuditReport):
        super().__init__(report.message())
        self.report = report


@dataclasses.dataclass
class AuditReport:
    """The result of `audit`.

    Attributes:
      source: what was audited (a SavedModel path or a function's name).
      target: the `Target` audited against.
      ops: every op used -> where (function names, `graph` for a meta graph's own nodes).
      missing: the ops the target lacks -> where they are used.
      hints: for each missing op, which releases do register it (or that none we know does).
      reached_from: function name -> the signatures whose graph calls it (SavedModels only).
    """

    source: str
    target: Target
    ops: dict[str, list[str]]
    missing: dict[str, list[str]]
    hints: dict[str, str]
    reached_from: dict[str, list[str]] = dataclasses.field(default_factory=dict)

    @property
    def ok(self) -> bool:
        """True when every op is registered by every release of the target."""
        return not self.missing

    def message(self) -> str:
        """One line per missing op, naming its functions and where it is registered."""
        if self.ok:
            return (f"{self.source}: all {len(self.ops)} op names are in the op registries of "
                    f"{self.target.description} (target {self.target.name}; names only: "
                    "kernels and variable restore show only in a runtime load, --runtime)")
        lines = [f"{self.source} uses {len(self.missing)} op(s) that {self.target.description}"
                 f" (target {self.target.name}) cannot run; a model server refuses a graph "
                 "with an op it does not register (\"Op type not registered\"):"]
        for op in sorted(self.missing):
            lines.append(f"  {op}: used in {self._describe(self.missing[op])}; {self.hints[op]}")
        return "\n".join(lines)

    def _describe(self, wheres: list[str]) -> str:
        parts = []
        for where in wheres:
            signatures = self.reached_from.get(where)
            parts.append(f"{where} (signature {', '.join(signatures)})" if signatures else where)
        return ", ".join(parts)

    def __str__(self) -> str:
        return self.message()


@functools.cache
def load_op_list(name_or_path: str) -> frozenset[str]:
    """The op names of a list in `oplists/` (name without `.txt`) or of any such file.

    Files hold one op name per line; blank lines and lines starting with `#` are skipped.
    """
    path = name_or_path
    if not os.path.exists(path):
        path = os.path.join(OPLIST_DIR, name_or_path + ".txt")
        if not os.path.exists(path):
            raise ValueError(f"Unknown op list {name_or_path!r}: neither a file nor one of "
                             f"{sorted(OP_LISTS)}")
    with open(path, encoding="utf-8") as f:
        return frozenset(line.strip() for line in f
                         if line.strip() and not line.lstrip().startswith("#"))


def resolve_target(target: str | Target | Iterable[str] | None = None) -> Target:
    """A `Target` from a name in `TARGETS`, op-list file path(s), or a `Target` itself."""
    if target is None:
        target = DEFAULT_TARGET
    if isinstance(target, Target):
        return target
    if isinstance(target, (str, os.PathLike)):
        target = os.fspath(target)
        if target in TARGETS:
            return TARGETS[target]
        paths = tuple(p for p in target.split(",") if p)
    else:
        paths = tuple(os.fspath(p) for p in target)
    missing = [p for p in paths if not os.path.exists(p) and p not in OP_LISTS]
    if missing or not paths:
        raise ValueError(f"Unknown target {target!r}: use one of {sorted(TARGETS)} or paths "
                         f"of op-list files (one op name per line); not found: {missing}")
    return Target(",".join(paths), "the op lists " + ", ".join(paths), (paths,))


def _func_names(attr_value) -> list[str]:
    """Function names referenced by one `AttrValue` (`func` or `list(func)`)."""
    names = []
    if attr_value.HasField("func"):
        names.append(attr_value.func.name)
        for nested in attr_value.func.attr.values():
            names += _func_names(nested)
    if attr_value.HasField("list"):
        for fn in attr_value.list.func:
            names.append(fn.name)
            for nested in fn.attr.values():
                names += _func_names(nested)
    return names


def _scan_nodes(nodes, where: str, functions: set[str], ops: dict[str, list[str]],
                calls: dict[str, set[str]]) -> None:
    """Records the ops of `nodes` under `where` and the functions they call in `calls`."""
    called = calls.setdefault(where, set())
    for node in nodes:
        if node.op in functions:  # a direct call of a library function
            called.add(node.op)
        else:
            wheres = ops.setdefault(node.op, [])
            if where not in wheres:
                wheres.append(where)
        for attr_value in node.attr.values():
            called.update(_func_names(attr_value))


def _scan_graph_def(graph_def, where: str, ops: dict[str, list[str]],
                    calls: dict[str, set[str]]) -> None:
    """Every node of a `GraphDef` and of every function of its library."""
    library = graph_def.library
    functions = {f.signature.name for f in library.function}
    _scan_nodes(graph_def.node, where, functions, ops, calls)
    for function in library.function:
        _scan_nodes(function.node_def, function.signature.name, functions, ops, calls)
    for gradient in library.gradient:  # registered gradient functions are in the library
        calls.setdefault(gradient.function_name, set()).add(gradient.gradient_func)


def _read_saved_model(path: str):
    """The `SavedModel` proto of a SavedModel directory (or of a `saved_model.pb` file)."""
    from tensorflow.core.protobuf import saved_model_pb2

    pb = path
    if os.path.isdir(path):
        pb = os.path.join(path, "saved_model.pb")
        if not os.path.exists(pb):
            if os.path.exists(os.path.join(path, "saved_model.pbtxt")):
                raise ValueError(f"{path}: only saved_model.pbtxt; re-save as saved_model.pb")
            raise FileNotFoundError(f"{path}: no saved_model.pb (not a SavedModel directory)")
    saved_model = saved_model_pb2.SavedModel()
    with open(pb, "rb") as f:
        saved_model.ParseFromString(f.read())
    return saved_model


def _graph_label(meta_graph, count: int) -> str:
    if count == 1:
        return "graph"
    return f"graph[{','.join(meta_graph.meta_info_def.tags) or 'untagged'}]"


def _saved_model_ops(path: str) -> tuple[dict[str, list[str]], dict[str, list[str]]]:
    """`(ops, reached_from)` of a SavedModel (see `ops_in_saved_model`)."""
    saved_model = _read_saved_model(os.fspath(path))
    ops: dict[str, list[str]] = {}
    reached_from: dict[str, set[str]] = {}
    for meta_graph in saved_model.meta_graphs:
        label = _graph_label(meta_graph, len(saved_model.meta_graphs))
        calls: dict[str, set[str]] = {}
        _scan_graph_def(meta_graph.graph_def, label, ops, calls)
        nodes = {node.name: node for node in meta_graph.graph_def.node}
        for signature_name, signature in meta_graph.signature_def.items():
            roots = set()
            for tensor in list(signature.outputs.values()) + list(signature.inputs.values()):
                node = nodes.get(tensor.name.split(":")[0].lstrip("^"))
                if node is not None:
                    for attr_value in node.attr.values():
                        roots.update(_func_names(attr_value))
            for function in _closure(roots, calls):
                reached_from.setdefault(function, set()).add(signature_name)
        for op in meta_graph.meta_info_def.stripped_op_list.op:
            ops.setdefault(op.name, [STRIPPED_OP_LIST])
    return ops, {fn: sorted(names) for fn, names in reached_from.items()}


def _closure(roots: Iterable[str], calls: Mapping[str, set[str]]) -> set[str]:
    """The functions reachable from `roots` (themselves included) through `calls`."""
    seen, stack = set(), list(roots)
    while stack:
        fn = stack.pop()
        if fn not in seen:
            seen.add(fn)
            stack.extend(calls.get(fn, ()))
    return seen


def ops_in_saved_model(path: str | os.PathLike) -> dict[str, list[str]]:
    """Every op of every graph of a SavedModel -> the places that use it.

    Reads `saved_model.pb` with the protobuf classes (nothing is loaded or run). Covers each
    meta graph's nodes (reported as `graph`, or `graph[tags]` when there are several) and
    every function of its function library (reported by function name), including
    functions reached only through attributes (`If`, `While`, `PartitionedCall`, ...) and
    gradient functions. Ops named only in `MetaInfoDef.stripped_op_list` are reported as
    `stripped_op_list`. Nodes calling a library function by name are calls, not ops.
    """
    return _saved_model_ops(path)[0]


def ops_in_concrete_function(fn) -> dict[str, list[str]]:
    """Every op of a `tf.function` (or a `ConcreteFunction`) -> the functions that use it.

    For auditing before exporting. A `tf.function` needs an `input_signature` (or exactly
    one traced concrete function). The function's own graph is reported under its name;
    nested functions (including those called through attributes) under theirs.
    """
    concrete = _concrete(fn)
    graph_def = concrete.graph.as_graph_def()
    ops: dict[str, list[str]] = {}
    calls: dict[str, set[str]] = {}
    _scan_graph_def(graph_def, concrete.name.decode() if isinstance(concrete.name, bytes)
                    else str(concrete.name), ops, calls)
    return ops


def _concrete(fn):
    """A `ConcreteFunction` from a `tf.function` (or the concrete function itself)."""
    if hasattr(fn, "graph") and hasattr(fn, "structured_input_signature"):
        return fn
    if hasattr(fn, "get_concrete_function"):
        try:
            return fn.get_concrete_function()
        except (TypeError, ValueError) as e:
            traced = fn._list_all_concrete_functions_for_serialization()  # noqa: SLF001
            if len(traced) == 1:
                return traced[0]
            raise ValueError("ops_in_concrete_function needs a ConcreteFunction, or a "
                             "tf.function with an input_signature or exactly one trace; "
                             f"this one has {len(traced)} traces") from e
    raise TypeError(f"Not a tf.function or ConcreteFunction: {fn!r}")


def _hint(op: str, target: Target) -> str:
    """Which releases register `op`, and a target that has it."""
    if op in PYTHON_ONLY_OPS:
        return ("needs the Python interpreter (tf.py_function / tf.numpy_function): no model "
                "server runs it; use TensorFlow ops instead")
    present = [name for name in OP_LISTS if op in load_op_list(name)]
    if not present:
        return (f"registered by none of {', '.join(OP_LISTS.values())}: a custom op, or one "
                "newer than TF 2.20 / TF Text 2.20.0 (no TF Serving release we know has it)")
    family = "tf-text" if any(name.startswith("tf-text") for name in present) else "tf-2"
    absent = [name for name in OP_LISTS if name.startswith(family) and name not in present]
    text = "in " + " and ".join(OP_LISTS[name] for name in present)
    if absent:
        text += ", not in " + " or ".join(OP_LISTS[name] for name in absent)
    others = [name for name, t in TARGETS.items() if name != target.name and op in t.ops]
    if others:
        text += f" (target {' / '.join(others)} has it)"
    return text


def audit(source, target: str | Target | Iterable[str] | None = DEFAULT_TARGET) -> AuditReport:
    """Compares the ops of `source` with those `target` registers.

    Args:
      source: a SavedModel directory (or its `saved_model.pb`), a `tf.function` /
        `ConcreteFunction`, or a mapping `{op: [where, ...]}` from `ops_in_*`.
      target: a name in `TARGETS` (default `serving-2.13+`), op-list file path(s), or a
        `Target`.
    """
    resolved = resolve_target(target)
    reached_from: dict[str, list[str]] = {}
    if isinstance(source, Mapping):
        ops, name = {op: list(w) for op, w in source.items()}, "the graph"
    elif isinstance(source, (str, os.PathLike)):
        ops, reached_from = _saved_model_ops(source)
        name = os.fspath(source)
    else:
        concrete = _concrete(source)
        ops = ops_in_concrete_function(concrete)
        name = getattr(source, "__name__", None) or str(concrete.name)
    supported = resolved.ops
    missing = {op: wheres for op, wheres in sorted(ops.items()) if op not in supported}
    hints = {op: _hint(op, resolved) for op in missing}
    return AuditReport(name, resolved, dict(sorted(ops.items())), missing, hints,
                       reached_from)


def check(source, target: str | Target | Iterable[str] | None = DEFAULT_TARGET
          ) -> AuditReport:
    """`audit`, raising `UnsupportedOpError` (naming each op and function) when not ok."""
    report = audit(source, target)
    if not report.ok:
        raise UnsupportedOpError(report)
    return report
