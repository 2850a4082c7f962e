"""bench/ reads as a folder of benchmarks: each `bench/*.py` is a script that imports helpers
from `bench/support/`, never another benchmark, with no import circle among them; each is
listed in docs/benchmarks.md.

The import graph is `scripts/package_graph.py`'s, the walker `tests/test_imports.py` reads
`keras_bert` with.
"""

from __future__ import annotations

import os
import sys

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(REPO, "scripts"))
import package_graph  # noqa: E402  (scripts/package_graph.py)


def benchmarks() -> set[str]:
    """The benchmarks: every `.py` file directly in bench/."""
    return {name for name in os.listdir(os.path.join(REPO, "bench")) if name.endswith(".py")}


def import_problems(edges: dict[str, set[str]]) -> list[str]:
    """What breaks bench/'s rules in an import graph of bench/ (`module_edges`): a circle, a
    benchmark (`bench.X`) importing another, a helper (`bench.support.X`) importing one."""
    found = []
    if cycle := package_graph.find_cycle(edges):
        found.append("import circle: " + " -> ".join(cycle))
    scripts = {m for m in edges if m.count(".") == 1}
    for module, targets in sorted(edges.items()):
        found += [f"{module} imports the benchmark {t}" for t in sorted(targets & scripts)]
    return found


def test_benchmarks_import_helpers_only_and_no_circle():
    edges = package_graph.module_edges(REPO, "bench", bare=True)
    assert {f"bench.{name[:-3]}" for name in benchmarks()} <= set(edges)
    assert "bench.support.common" in edges and len(edges) > 25
    assert import_problems(edges) == []


def test_the_rules_catch_a_circle_and_a_benchmark_imported_as_a_library():
    edges = {"bench.a": {"bench.support.x"}, "bench.b": {"bench.a"},
             "bench.support.x": {"bench.support.y"}, "bench.support.y": {"bench.support.x"}}
    assert import_problems(edges) == [
        "import circle: bench.support.x -> bench.support.y -> bench.support.x",
        "bench.b imports the benchmark bench.a"]


def test_every_benchmark_is_on_the_benchmarks_page():
    with open(os.path.join(REPO, "docs", "benchmarks.md"), encoding="utf-8") as f:
        page = f.read()
    missing = sorted(name for name in benchmarks() if f"bench/{name}" not in page)
    assert missing == [], f"docs/benchmarks.md does not name {missing}"
