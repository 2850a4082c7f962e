"""Draws the house from its imports: each package of `keras_bert` and the packages it imports
(imports inside functions included), bottom-up, as the Markdown table of docs/layout.md.

    python scripts/package_graph.py [REPO]     # the table for the checkout at REPO (default .)
    python scripts/package_graph.py --write    # ... written into docs/layout.md

`tests/test_imports.py` checks that docs/layout.md holds the table of this checkout.
"""

from __future__ import annotations

import ast
import os
import sys


def package_edges(repo: str) -> dict[str, set[str]]:
    """`{package: packages of keras_bert it imports}`; a top-level module is its own
    package."""
    edges: dict[str, set[str]] = {}
    source = os.path.join(repo, "keras_bert")
    for root, _, files in os.walk(source):
        for name in files:
            if not name.endswith(".py"):
                continue
            path = os.path.join(root, name)
            package = os.path.relpath(path, source).split(os.sep)[0].removesuffix(".py")
            if package == "__init__":
                continue
            edges.setdefault(package, set())
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
                        edges[package].add(parts[1])
    return edges


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
