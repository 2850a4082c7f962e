"""The documentation site (mkdocs.yml, docs/) builds with warnings as errors.

`mkdocs build --strict` fails on a link to a page or file that is not there, an anchor that
no heading of the target makes (mkdocs.yml's `validation`), a page left out of the nav, a
`::: keras_bert.X` reference that names nothing (mkdocstrings), a docstring documenting a
parameter the signature lacks, and a README.md part that a page includes and that is gone
(pymdownx.snippets). A test breaks a copy of the docs each of those ways and checks that
the build fails. README.md, which GitHub shows and the site does not build, has its links
checked here too, and the "What is verified where" table the test files it names.
"""

from __future__ import annotations

import glob
import os
import re
import shutil
import subprocess
import sys

import pytest

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CONFIG = os.path.join(REPO, "mkdocs.yml")


def build(config: str, site: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "-f", config,
                           "-d", site], cwd=REPO, capture_output=True, text=True, timeout=300)


def test_docs_site_builds_strictly(tmp_path):
    done = build(CONFIG, str(tmp_path / "site"))
    assert done.returncode == 0, done.stderr[-3000:]
    assert "WARNING" not in done.stderr, done.stderr[-3000:]
    site = tmp_path / "site"
    for page in ("index.html", "quickstart/index.html", "reference/task-models/index.html",
                 "repo/bench/RESULTS/index.html"):
        assert (site / page).is_file(), page
    reference = (site / "reference" / "task-models" / "index.html").read_text(encoding="utf-8")
    assert "TextClassifier" in reference and "from_pretrained" in reference


def _copy(tmp_path) -> tuple[str, str]:
    """A copy of docs/ and a config that builds it with this repository's code and files."""
    docs = tmp_path / "docs"
    shutil.copytree(os.path.join(REPO, "docs"), docs)
    with open(CONFIG, encoding="utf-8") as f:
        text = f.read()
    for old, new in (("docs_dir: docs\n", f"docs_dir: {docs}\n"),
                     ("  - docs/hooks.py\n", f"  - {os.path.join(REPO, 'docs', 'hooks.py')}\n"),
                     ('paths: [".", "client"]',
                      f'paths: ["{REPO}", "{os.path.join(REPO, "client")}"]'),
                     ('base_path: ["."]', f'base_path: ["{REPO}"]')):
        assert text.count(old) == 1, old
        text = text.replace(old, new)
    config = tmp_path / "mkdocs.yml"
    config.write_text(text, encoding="utf-8")
    return str(docs), str(config)


def _edit(path: str, old: str, new: str) -> None:
    with open(path, encoding="utf-8") as f:
        text = f.read()
    assert old in text, (path, old)
    with open(path, "w", encoding="utf-8") as f:
        f.write(text.replace(old, new, 1))


# (file in docs/, text, its replacement, what the build says)
BREAKAGES = {
    "link": ("index.md", "](verified.md)", "](no-such-page.md)", "no-such-page.md"),
    "anchor": ("benchmarks.md", "#fine-tuning-step-benchfinetune_steppy)", "#no-such-step)",
               "no-such-step"),
    "reference": ("reference/task-models.md", "::: keras_bert.config.LongTextReading\n",
                  "::: keras_bert.config.LongTextReading\n\n"
                  "::: keras_bert.config.NoSuchThing\n", "NoSuchThing"),
    "snippet": ("quickstart.md", '"README.md:quickstart"', '"README.md:no-such-part"',
                "no-such-part"),
}


# ~3 s (a whole build). The tier's guards of the copy: the build of the docs themselves
# (above) and `_copy`'s check that each of its four edits of mkdocs.yml happens once; the
# link breakage's failure names the broken link, not some other fault of the copy.
@pytest.mark.slow
def test_the_copy_builds(tmp_path):
    """The copy that the next test breaks builds as it is."""
    _, config = _copy(tmp_path)
    done = build(config, str(tmp_path / "site"))
    assert done.returncode == 0, done.stderr[-3000:]


# One build each (2-3.5 s on a busy 2-core Zen 4): the README's tier breaks a link (the build's
# warnings as errors at work); the anchor, reference and snippet breakages are slow, each
# guarded in the tier by the setting that makes it fail (the next test).
SLOW_BREAKAGES = ("anchor", "reference", "snippet")


def test_the_settings_that_fail_each_breakage_are_on():
    """What turns each breakage into a failed build, read from mkdocs.yml (the slow
    breakages' guard): warnings as errors, anchors checked (`validation`), snippets' paths
    and parts checked, and mkdocstrings reading the `::: keras_bert.X` references."""
    with open(CONFIG, encoding="utf-8") as f:
        text = f.read()
    for setting in ("\nstrict: true\n", "\nvalidation:\n", "\n  anchors: warn\n",
                    "\n  unrecognized_links: warn\n", "\n  - pymdownx.snippets:\n",
                    "\n      check_paths: true\n", "\n  - mkdocstrings:\n"):
        assert setting in text, setting


@pytest.mark.parametrize("breakage", [
    pytest.param(name, marks=[pytest.mark.slow] if name in SLOW_BREAKAGES else [])
    for name in sorted(BREAKAGES)])
def test_broken_docs_fail_the_build(tmp_path, breakage):
    docs, config = _copy(tmp_path)
    page, old, new, named = BREAKAGES[breakage]
    _edit(os.path.join(docs, page), old, new)
    done = build(config, str(tmp_path / "site"))
    assert done.returncode != 0
    assert named in done.stdout + done.stderr


def test_readme_links_reach_files_and_headings():
    """README.md is not a page of the site (GitHub shows it): its relative links must reach
    a file, and an anchor into a Markdown file one of its headings (GitHub's anchors)."""
    from tests.test_readme_figures import results_sections

    with open(os.path.join(REPO, "README.md"), encoding="utf-8") as f:
        links = re.findall(r"\]\(([^)\s]+)\)", f.read())
    local = [link for link in links if not re.match(r"[a-z]+:", link)]
    assert len(local) >= 10
    for link in local:
        path, _, anchor = link.partition("#")
        target = os.path.join(REPO, path)
        assert os.path.exists(target), link
        if anchor:
            with open(target, encoding="utf-8") as f:
                assert anchor in results_sections(f.read()), link


def test_verified_table_names_tests_that_exist():
    """Each row of "What is verified where" (docs/verified.md) names its tests in its last
    cell: `tests/...` paths, or bare file names found under tests/; each must exist."""
    with open(os.path.join(REPO, "docs", "verified.md"), encoding="utf-8") as f:
        rows = [line for line in f if line.startswith("| ") and not line.startswith("| ---")]
    assert rows[0].startswith("| claim |") and len(rows) > 20
    for row in rows[1:]:
        named = re.findall(r"`([^`]+)`", row.rstrip().rstrip("|").rsplit("|", 1)[1])
        assert named, row
        for name in named:
            found = (os.path.exists(os.path.join(REPO, name)) if name.startswith("tests/")
                     else glob.glob(os.path.join(REPO, "tests", "**", name), recursive=True))
            assert found, (name, row[:80])
