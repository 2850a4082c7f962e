"""MkDocs hook: repository files outside `docs/` that the pages link to, in the site.

A page links them by their path in the repository (`../bench/RESULTS.md` from
`docs/benchmarks.md`), which works on GitHub too. MkDocs resolves a link against the
source paths of its files, so each file here is added under its `../` path (what
`docs/X.md`'s `../bench/RESULTS.md` and `docs/runs/X.md`'s `../../bench/RESULTS.md`
both resolve to) and written to `repo/PATH` in the site; MkDocs then checks links and
anchors into them like any page's. A link to any other file outside `docs/` is not
found and fails the strict build: name such files as code (`tests/test_x.py`).
"""

from __future__ import annotations

import os

from mkdocs.structure.files import File, Files, InclusionLevel

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
OUTSIDE_DOCS = ("bench/RESULTS.md", "export/README.md", "export/batching_parameters_gpu.txt")


def on_files(files: Files, config) -> Files:
    for path in OUTSIDE_DOCS:
        site = File.generated(config, "repo/" + path, abs_src_path=os.path.join(REPO, path))
        linked = File.generated(config, "../" + path, abs_src_path=os.path.join(REPO, path),
                                inclusion=InclusionLevel.INCLUDED)
        linked.dest_uri = site.dest_uri
        files.append(linked)
    return files
