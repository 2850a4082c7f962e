"""Draws the house from its imports: each package of `keras_bert` and the packages it imports
(imports inside functions included), bottom-up, as the Markdown table of docs/layout.md.

    python scripts/package_graph.py [REPO]     # the table for the checkout at REPO (default .)
    python scripts/package_graph.py --write    # ... written into docs/layout.md

The one import-graph walker of the repository: `tests/test_imports.py` checks with it that
docs/layout.md holds the table of this checkout and that `keras_bert`'s packages and modules
import each other without a cycle; `tests/bench/test_layout.py` that `bench/` has no
cycle and no benchmark imports another.
"""

from __future__ import annotations

import ast
import os
import sys


def module_files(repo: str, folder: str) -> dict[str, str]:
    """`{dotted module name: path}` of every `.py` file under `repo/folder` (a package's
    `__init__.py` named as the package)."""
    modules = {}
    for root, _, files in os.walk(os.path.join(repo, folder)):
        for name in files:
            if name.endswith(".py"):
                path = os.path.join(root, name)
                dotted = os.path.relpath(path, repo)[:-3].replace(os.sep, ".")
                modules[dotted.removesuffix(".__init__")] = path
    return modules


def imported(path: str, modules=(), at_import: bool = False) -> set[str]:
    """The dotted names the imports of the module at `path` name, those inside functions
    too unless `at_import` (then only what runs when the module is imported: function
    bodies left out, class bodies and module-level `if`/`try` kept): `import a.b` names
    `a.b`; `from a import b` names `a.b` where that is one of `modules`, else `a`."""
    with open(path, encoding="utf-8") as f:
        tree = ast.parse(f.read())
    names: set[str] = set()
    for node in _walk(tree, skip_functions=at_import):
        if isinstance(node, ast.ImportFrom) and node.module:
            names.update(f"{node.module}.{alias.name}" if f"{node.module}.{alias.name}"
                         in modules else node.module for alias in node.names)
        elif isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
    return names


def _walk(tree, skip_functions: bool):
    """`ast.walk(tree)`, without the bodies of functions where `skip_functions`."""
    todo = [tree]
    while todo:
        node = todo.pop()
        yield node
        for child in ast.iter_child_nodes(node):
            if not (skip_functions and isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef,
                                                          ast.Lambda))):
                todo.append(child)


def imported_at_import(repo: str, module: str) -> set[str]:
    """Every dotted name importing `module` (a `keras_bert` module) imports, following
    `keras_bert`'s own modules and their parent packages' `__init__`s transitively, as
    `imported(..., at_import=True)` reads them (imports inside functions left out)."""
    modules = module_files(repo, "keras_bert")
    seen: set[str] = set()
    names: set[str] = set()
    todo = [module]
    while todo:
        current = todo.pop()
        parts = current.split(".")
        for name in [".".join(parts[:i]) for i in range(1, len(parts) + 1)]:
            if name in modules and name not in seen:
                seen.add(name)
                found = imported(modules[name], modules, at_import=True)
                names |= found
                todo.extend(n for n in found if n.split(".")[0] == "keras_bert")
    return names


def module_edges(repo: str, folder: str, bare: bool = False) -> dict[str, set[str]]:
    """`{module: the modules under folder it imports}` for every module under `repo/folder`.
    `bare`: `import x` also counts as `folder.x` (a script run as `python folder/s.py` has
    its folder first on the import path)."""
    modules = module_files(repo, folder)
    edges: dict[str, set[str]] = {}
    for module, path in modules.items():
        names = imported(path, modules)
        if bare:
            names |= {f"{folder}.{n}" for n in names if f"{folder}.{n}" in modules}
        edges[module] = {n for n in names if n in modules and n != module}
    return edges


def package_edges(repo: str) -> dict[str, set[str]]:
    """`{package: packages of keras_bert it imports}`; a top-level module is its own
    package."""
    edges: dict[str, set[str]] = {}
    source = os.path.join(repo, "keras_bert")
    for path in module_files(repo, "keras_bert").values():
        package = os.path.relpath(path, source).split(os.sep)[0].removesuffix(".py")
        if package == "__init__":
            continue
        edges.setdefault(package, set())
        for name in imported(path):
            parts = name.split(".")
            if parts[0] == "keras_bert" and len(parts) > 1 and parts[1] != package:
                edges[package].add(parts[1])
    return edges


def find_cycle(edges: dict[str, set[str]]) -> list[str]:
    """The first import cycle in `edges` (depth-first from each node, by name), as the path
    that closes it (`[a, b, a]`); `[]` when there is none."""
    done: set[str] = set()

    def visit(node: str, path: list[str]) -> list[str]:
        if node in path:
            return [*path[path.index(node):], node]
        if node in done:
            return []
        for target in sorted(edges.get(node, ())):
            if found := visit(target, [*path, node]):
                return found
        done.add(node)
        return []

    for node in sorted(edges):
        if found := visit(node, []):
            return found
    return []


def bottom_up(edges: dict[str, set[str]]) -> list[str]:
    """The packages in an order where each comes after those it imports (ties by name)."""
    order: list[str] = []
    while len(order) < len(edges):
        ready = sorted(p for p in edges if p not in order
                       and all(d in order or d not in edges for d in edges[p]))
        if not ready:
            raise ValueError(f"import cycle among {sorted(set(edges) - set(order))}")
        order.append(ready[0])
    return order


def table(repo: str) -> str:
    """The Markdown table: package, the packages it imports."""
    edges = package_edges(repo)
    rows = ["| package | imports from keras_bert |", "| --- | --- |"]
    for package in bottom_up(edges):
        rows.append(f"| `{package}` | {', '.join(sorted(edges[package])) or '-'} |")
    return "\n".join(rows)


START, END = "<!-- package-graph:start -->", "<!-- package-graph:end -->"


def documented(text: str) -> str:
    """The table between the markers of a page."""
    return text.split(START, 1)[1].split(END, 1)[0].strip()


def write(page: str, repo: str = ".") -> None:
    """Writes this checkout's table between the markers of `page`."""
    with open(page, encoding="utf-8") as f:
        text = f.read()
    before, rest = text.split(START, 1)
    after = rest.split(END, 1)[1]
    with open(page, "w", encoding="utf-8") as f:
        f.write(f"{before}{START}\n{table(repo)}\n{END}{after}")


if __name__ == "__main__":
    if sys.argv[1:] == ["--write"]:
        write(os.path.join("docs", "layout.md"))
    else:
        print(table(sys.argv[1] if len(sys.argv) > 1 else "."))
