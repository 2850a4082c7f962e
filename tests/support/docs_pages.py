"""The documentation's Markdown in site order: README.md, then the pages of `mkdocs.yml`'s
nav that live under `docs/`, in nav order.

The tests that hold the documentation to what it says (`tests/test_readme.py` runs every
```bash command and ```python block, in this order; `tests/test_readme_figures.py` checks
the benchmark table) read it from here. Pages the nav takes from outside `docs/`
(`../bench/RESULTS.md`, `../export/README.md`, via `docs/hooks.py`) are not part of it:
they are records and a kit with tests of their own; nor are the run logs under `docs/runs/`
(`RECORDS`), records of commands as they were run then, with the flags of that day. A
`--8<--` line includes a part of README.md (pymdownx.snippets) that is already read with
README.md, so it is not expanded.
"""

from __future__ import annotations

import os

from tests.support.reference import require

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
CONFIG = os.path.join(REPO, "mkdocs.yml")
RECORDS = "runs/"  # the nav's folder of run logs (docs/runs/)


def _read_config(path: str) -> dict:
    """mkdocs.yml, whose `!!python/...` tags (the toc's slugify) stay unbuilt. PyYAML is a
    test extra: imported here, its absence skips the tests that read the documentation
    (fails them under CI) instead of stopping the whole collection."""
    yaml = require("yaml")

    class Loader(yaml.SafeLoader):
        """PyYAML's safe loader, and no Python objects built."""

    Loader.add_multi_constructor("tag:yaml.org,2002:python/",
                                 lambda loader, suffix, node: None)
    with open(path, encoding="utf-8") as f:
        return yaml.load(f, Loader=Loader)


def _paths(nav) -> list[str]:
    """The page paths of a nav (nested lists of `{title: path or [...]}` and paths)."""
    if isinstance(nav, str):
        return [nav]
    if isinstance(nav, dict):
        return [p for value in nav.values() for p in _paths(value)]
    return [p for item in nav for p in _paths(item)]


def nav_pages(config: str = CONFIG) -> list[str]:
    """The nav's pages under its docs directory, as paths relative to that directory."""
    settings = _read_config(config)
    assert settings["docs_dir"] == "docs", settings["docs_dir"]
    return [p for p in _paths(settings["nav"]) if not p.startswith("../")]


def site_markdown() -> list[tuple[str, str]]:
    """`(path from the repository root, text)` of README.md and each docs page but the run
    logs, in order."""
    paths = ["README.md", *(os.path.join("docs", p) for p in nav_pages()
                            if not p.startswith(RECORDS))]
    texts = []
    for path in paths:
        with open(os.path.join(REPO, path), encoding="utf-8") as f:
            texts.append((path, f.read()))
        includes = [line for line in texts[-1][1].splitlines() if line.startswith("--8<--")]
        assert all(line.startswith('--8<-- "README.md:') for line in includes), (path, includes)
    return texts


def documentation() -> str:
    """The whole documentation as one Markdown text, README.md first."""
    return "\n".join(text for _, text in site_markdown())
