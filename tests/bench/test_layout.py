"""bench/ reads as a folder of benchmarks: each `bench/*.py` is a script that imports helpers
from `bench/support/`, never another benchmark, with no import circle among them; each is
listed in docs/benchmarks.md; and bench/RESULTS.md opens with an index, one row per
benchmark, whose figures are in the section the row links.

The import graph is `scripts/package_graph.py`'s, the walker `tests/test_imports.py` reads
`keras_bert` with.
"""

from __future__ import annotations

import os
import re
import sys

from tests.test_readme_figures import FIGURE, results_sections

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(REPO, "scripts"))
import package_graph  # noqa: E402  (scripts/package_graph.py)

# The figures a row quotes: those with a unit (`FIGURE`), decimals, and thousands.
NUMBER = re.compile(r"\d+\.\d+|\d{1,3}(?:,\d{3})+")


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


def index_rows(results: str) -> list[tuple[str, str, list[str]]]:
    """`(benchmark, its figure cell, the anchors of its last cell)` of each row of RESULTS.md's
    index (the section after its title)."""
    rows = []
    for line in results.split("\n## ", 2)[1].splitlines():
        if match := re.match(r"\| `bench/(\w+\.py)` \|", line):
            cells = line.split(" | ")
            rows.append((match.group(1), cells[1], re.findall(r"\]\(#([\w-]+)\)", cells[-1])))
    return rows


def index_problems(results: str) -> list[str]:
    """What is wrong with RESULTS.md's index: a benchmark without a row (or with two), a row
    linking no section, a figure not in the section its row links last (the run's own)."""
    rows = index_rows(results)
    named = [name for name, _, _ in rows]
    found = [f"no index row for {n}" for n in sorted(benchmarks() - set(named))]
    found += [f"two index rows for {n}" for n in sorted({n for n in named if named.count(n) > 1})]
    sections = results_sections(results)
    for name, figure, anchors in rows:
        found += [f"{name}: no section #{a}" for a in anchors if a not in sections]
        if not anchors or anchors[-1] not in sections:
            continue
        quoted = {m.group(1) for m in FIGURE.finditer(figure)} | set(NUMBER.findall(figure))
        if not quoted:
            found.append(f"{name}: the row quotes no figure")
        found += [f"{name}: {q} is not in #{anchors[-1]}" for q in sorted(quoted)
                  if not re.search(rf"(?<![\d.,]){re.escape(q)}(?![\d,]|\.\d)",
                                   sections[anchors[-1]])]
    return found


def test_results_open_with_an_index_whose_figures_are_in_their_sections():
    with open(os.path.join(REPO, "bench", "RESULTS.md"), encoding="utf-8") as f:
        results = f.read()
    assert results.split("\n## ", 2)[1].startswith("Index\n")
    assert index_problems(results) == []


def test_the_index_check_catches_a_missing_row_and_an_edited_figure():
    sections = "\n".join(f"| `bench/{n}` | 1.50x | h | d | [s](#s) |" for n in sorted(benchmarks()))
    results = f"# R\n\n## Index\n\n{sections}\n\n## S\n\n1.50x\n"
    assert index_problems(results) == []
    first = sorted(benchmarks())[0]
    assert index_problems(results.replace(f"| `bench/{first}` | 1.50x", "| `x` | 1.50x")) == [
        f"no index row for {first}"]
    edited = results.replace(f"| `bench/{first}` | 1.50x", f"| `bench/{first}` | 1.55x")
    assert index_problems(edited) == [f"{first}: 1.55 is not in #s"]
