"""The documentation's performance table (docs/benchmarks.md) quotes bench/RESULTS.md,
nothing else.

Every row of the table between the `<!-- figures -->` markers links the RESULTS.md section
its figures come from (`../bench/RESULTS.md#anchor` from docs/, which the docs site serves
too: docs/hooks.py); every figure of the row (a ratio like `1.13x`, a time like `6.1 ms`,
a rate) must appear in that section's text, so a figure cannot be edited in the docs alone
or outlive the measurement it quotes.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tests.support.docs_pages import documentation

REPO = Path(__file__).resolve().parents[1]
FIGURE = re.compile(r"(?<![\w.#-])(\d[\d,]*(?:\.\d+)?)(?=x\b| ms\b| s\b| seq/s\b|%)")
LINK = re.compile(r"\((?:\.\./)?bench/RESULTS\.md#([\w-]+)\)")


def github_anchor(heading: str) -> str:
    """The anchor GitHub gives a Markdown heading (lower case, punctuation dropped)."""
    text = heading.strip().lower()
    text = re.sub(r"[^\w\- ]", "", text)
    return text.replace(" ", "-")


def results_sections(markdown: str) -> dict[str, str]:
    """Anchor -> the section's text, up to the next heading of the same or a higher level."""
    lines, headings, fenced = markdown.splitlines(), [], False
    for i, line in enumerate(lines):
        fenced ^= line.startswith("```")
        if not fenced and (m := re.match(r"(#{1,6}) (.+)", line)):
            headings.append((i, len(m.group(1)), m.group(2)))
    sections = {}
    for n, (start, level, title) in enumerate(headings):
        end = next((i for i, lv, _ in headings[n + 1:] if lv <= level), len(lines))
        sections.setdefault(github_anchor(title), "\n".join(lines[start:end]))
    return sections


def table_rows(docs: str) -> list[str]:
    match = re.search(r"<!-- figures -->(.*?)<!-- /figures -->", docs, re.S)
    assert match, "the documentation has no <!-- figures --> table"
    assert docs.count("<!-- figures -->") == 1, "two <!-- figures --> tables"
    rows = [line for line in match.group(1).splitlines()
            if line.startswith("|") and not set(line) <= set("|- :")]
    return rows[1:]  # the first is the header


def figures(row: str) -> list[str]:
    cells = row.split("|")[1:-1]
    body = "|".join(cells[1:])  # the first cell names the measurement
    return [m.group(1) for m in FIGURE.finditer(LINK.sub("", body))]


def figures_missing(row: str, sections: dict[str, str]) -> list[str]:
    """The row's figures that are not in the RESULTS.md sections it links."""
    anchors = LINK.findall(row)
    assert anchors, f"row links no RESULTS.md section: {row}"
    missing = [a for a in anchors if a not in sections]
    assert not missing, f"RESULTS.md has no section {missing} (row: {row})"
    text = "\n".join(sections[a] for a in anchors)
    quoted = figures(row)
    assert quoted, f"row quotes no figure: {row}"
    return [f for f in quoted
            if not re.search(rf"(?<![\d.,]){re.escape(f)}(?![\d,]|\.\d)", text)]


def test_parsers_on_hand_made_text():
    assert github_anchor("## Serving latency against ONNX Runtime and PyTorch "
                         "(`bench/serving_latency.py`)".lstrip("# ")) == (
        "serving-latency-against-onnx-runtime-and-pytorch-benchserving_latencypy")
    sections = results_sections("# A\nx 1.5x\n## B c\n```\n# not a heading\n```\ny 2 ms\n# D\n")
    assert sections["a"] == "# A\nx 1.5x\n## B c\n```\n# not a heading\n```\ny 2 ms"
    assert sections["b-c"].endswith("y 2 ms") and "not-a-heading" not in sections
    row = "| MiniLM, 16 tokens | 6.1 ms | 0.48x | 1,703 s | [run](bench/RESULTS.md#a-b) |"
    assert figures(row) == ["6.1", "0.48", "1,703"]


def test_every_readme_figure_is_in_the_results_section_it_links():
    sections = results_sections((REPO / "bench" / "RESULTS.md").read_text(encoding="utf-8"))
    rows = table_rows(documentation())
    assert len(rows) >= 5
    for row in rows:
        absent = figures_missing(row, sections)
        assert not absent, f"{absent} not in the RESULTS.md section the row links: {row}"


@pytest.mark.parametrize("figure", ["9.99", "1.17"])
def test_a_figure_edited_in_the_readme_alone_fails(figure):
    sections = results_sections("## S\n| x | 1.13x | 6.1 ms |\n")
    assert figures_missing("| m | 1.13x | 6.1 ms | [s](bench/RESULTS.md#s) |", sections) == []
    row = f"| m | {figure}x | [s](bench/RESULTS.md#s) |"
    assert figures_missing(row, sections) == [figure]
