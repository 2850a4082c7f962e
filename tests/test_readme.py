"""Every command in the documentation's ```bash blocks works as printed.

The documentation is README.md and the pages under docs/ in the site's order
(`tests/support/docs_pages.py`, mkdocs.yml's nav); "README" below means all of it. The commands run
in that order, each in its own `bash -c`, in a temporary directory that
holds links to the repository's `.venv/` and `examples/` (what a user who pasted them after
the quick start's install has), offline. Each must exit 0, and the files and answers it
promises are checked. Nothing in a command is changed; a few long ones get arguments
APPENDED from `OVERRIDES` (argparse: the last value wins), and `keras-bert serve ... &` is
started in the background, polled until it answers, and stopped at the end.

Commands that run a whole example, the quick start, the test suite or the notebook are not
re-run here: the test asserts that the test which runs each of them exists (`COVERED`).
A README command that is neither executed nor covered fails the test.
"""

from __future__ import annotations

import base64
import csv
import json
import os
import re
import shlex
import signal
import subprocess
import textwrap

import pytest

from tests.support.docs_pages import documentation
from tests.support.hub_servers import HubServer, folder_files, hf_env
from tests.support.readme_commands import (
    BIN,
    QUICK_MODEL,
    bash_commands,
    overrides,
    run_printed,
    start_server,
    strip_comment,
    user_dir,
)
from tests.support.readme_coverage import check_covered, covering_tests
from tests.support.reference import minilm_dir

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _covered_by(test_file: str, *parts: str):
    """A check that a test of `test_file` runs a command with `parts` (`readme_coverage`)."""
    return lambda: check_covered(REPO, test_file, *parts)


def _example_covered(command: str):
    """`examples/NAME.py` lines: tests/examples/test_examples.py runs NAME.py with --quick."""
    name = re.search(r"examples/(\w+\.py)", command).group(1)
    return _covered_by("tests/examples/test_examples.py", name)


# README lines that other tests run (pattern -> check that a test runs them).
COVERED = [
    (r"^bash scripts/quickstart\.sh$", lambda c: _covered_by(
        "tests/jobs/test_quickstart.py", "keras-bert", "quickstart", "--quick")),
    (r"^bash scripts/test\.sh$", lambda c: _covered_by(".ci/run", "bash", "scripts/test.sh")),
    (r"jupyter execute examples/kaggle_bert\.ipynb", lambda c: _covered_by(
        "tests/examples/test_notebook.py", "examples", "kaggle_bert.ipynb")),
    (r"^\.venv/bin/python scripts/kaggle_wheelhouse\.py ", lambda c: _covered_by(
        "tests/test_kaggle_wheelhouse.py", "scripts", "kaggle_wheelhouse.py")),
    (r"^\.venv/bin/python examples/\w+\.py$", _example_covered),
    (r"^\.venv/bin/python bench/\w+\.py( --quick)?$", lambda c: _covered_by(
        "tests/bench/test_benchmarks.py", "bench", re.search(r"bench/(\w+\.py)", c).group(1))),
]


def _jsonl(path):
    with open(path, encoding="utf-8") as f:
        return [json.loads(line) for line in f if line.strip()]


def _paths(work):
    return lambda *parts: os.path.join(work, *parts)


def _check_convert_pretrain(work, queries, servers):
    """Conversions, vectors, tokenizer, vocabulary, pretraining data and runs."""
    p = _paths(work)
    assert not queries and not servers
    for model in ("minilm", "minilm-google", "minilm-keras-hub"):
        assert os.path.exists(p("models", model, "keras_bert.json"))
    assert os.path.exists(p("checkpoints", "minilm-google", "bert_model.ckpt.index"))
    vectors = _jsonl(p("vectors.jsonl"))
    assert len(vectors) == 2 and all(len(v) == 384 for v in vectors)
    with open(p("vocab.txt"), encoding="utf-8") as f:
        vocab = f.read().split("\n")
    assert {"[CLS]", "[SEP]", "[MASK]", "whale"} <= set(vocab)
    shards = sorted(f for f in os.listdir(p("data")) if f.startswith("train.tfrecord-"))
    assert len(shards) == 4
    for run in ("tiny", "phase1", "phase2"):
        assert "mlm_accuracy" in open(p("runs", run, "metrics.json")).read(), run


def _check_classify_serve(work, queries, servers):
    """The classifier, its predictions, the student, the export served and queried, the
    Hugging Face round trip and the attention plot."""
    p = _paths(work)
    assert len(servers) == 1
    with open(p("data", "dev.csv"), encoding="utf-8") as f:
        n_dev = sum(1 for _ in f) - 1
    predictions = _jsonl(p("predictions.jsonl"))
    assert len(predictions) == n_dev
    assert {row["label"] for row in predictions} <= {"moby_dick", "sotu"}
    for run in ("cls", "student"):
        assert os.path.isdir(p("runs", run, "model")), run
    for base in ("bert", "hf-cls"):
        assert os.path.exists(p("models", base, "1", "saved_model.pb")), base
    with open(p("attention.png"), "rb") as f:
        assert f.read(8) == b"\x89PNG\r\n\x1a\n"
    [[classified]] = queries
    assert classified["label"] in ("moby_dick", "sotu")


def _check_tag_multilabel(work, queries, servers):
    """The tagger and its export, the multi-label predictions."""
    p = _paths(work)
    assert not queries and not servers
    with open(p("data", "ml-dev.csv"), encoding="utf-8") as f:
        n_dev = sum(1 for _ in csv.DictReader(f))
    answers = _jsonl(p("ml-predictions.jsonl"))
    assert len(answers) == n_dev == 300
    topics = {"government", "money", "sea", "ship", "war", "whale"}
    assert all(set(a["scores"]) == topics and set(a["labels"]) <= topics for a in answers)
    for run in ("ner", "ml"):
        assert os.path.isdir(p("runs", run, "model")), run
    assert os.path.exists(p("models", "ner", "1", "saved_model.pb"))


def _check_squad_serve(work, queries, servers):
    """The span-QA model, its export served and queried."""
    p = _paths(work)
    assert len(servers) == 1
    assert os.path.isdir(p("runs", "qa", "model"))
    assert os.path.exists(p("models", "qa", "1", "saved_model.pb"))
    [[answered]] = queries
    answer = answered["answer"]
    if isinstance(answer, dict):  # bytes come back base64-encoded
        answer = base64.b64decode(answer["b64"]).decode("utf-8")
    assert answer in "Ahab sailed from Nantucket."  # a span of the context, or "" (no answer)


CHECKS = {"convert_pretrain": _check_convert_pretrain,
          "classify_serve": _check_classify_serve,
          "tag_multilabel": _check_tag_multilabel, "squad_serve": _check_squad_serve}


# The documentation's commands in four parts, each with what it needs of the others (the
# MiniLM conversion), so that CI can spread them over its landings (tests/support/schedule.py).
# `readme_part` names a command's part by the files it reads or writes.
README_PARTS = ("convert_pretrain", "classify_serve", "tag_multilabel", "squad_serve")
_SHARED = (r"^MINILM=", r'^\.venv/bin/keras-bert convert "\$MINILM" models/minilm$')
_PART_PATTERNS = {
    "classify_serve": r"runs/cls|data/(train|dev)\.csv|runs/student|models/bert\b"
                      r"|--model-name bert\b|cls-hf|cls-from-hf|models/hf-cls"
                      r"|artifacts/quickstart",
    "tag_multilabel": r"\bner\b|\bml-|runs/ml",
    "squad_serve": r"squad|runs/qa|models/qa|--model-name qa",
}


def readme_part(command: str) -> str | None:
    """The part of the README's commands that `command` belongs to; None for the shared
    prerequisites every part runs first."""
    if any(re.search(pattern, command) for pattern in _SHARED):
        return None
    parts = [part for part, pattern in _PART_PATTERNS.items() if re.search(pattern, command)]
    assert len(parts) <= 1, f"README command in two parts {parts}: {command}"
    return parts[0] if parts else "convert_pretrain"


@pytest.mark.slow  # 12-15 processes that each start TensorFlow, per part
@pytest.mark.timeout(1800)
@pytest.mark.parametrize("part", README_PARTS)
def test_readme_commands_run_as_printed(tmp_path, part):
    commands = [strip_comment(c) for c in bash_commands(documentation())]
    assert len(commands) > 20
    work = user_dir(tmp_path)
    env = {**os.environ, "TF_CPP_MIN_LOG_LEVEL": "3", "CUDA_VISIBLE_DEVICES": "",
           "PYTHONUNBUFFERED": "1"}
    # The line that reads the stand-in classifier runs last, after runs/cls exists.
    ordered = ([c for c in commands if QUICK_MODEL not in c]
               + [c for c in commands if QUICK_MODEL in c])
    assignments, ports, servers, queries, covered = [], {}, [], [], []
    try:
        for command in ordered:
            rule = next((make for pattern, make in COVERED if re.search(pattern, command)),
                        None)
            if rule is not None:
                rule(command)()
                covered.append(command)
                continue
            if readme_part(command) not in (None, part):
                continue
            if re.match(r"^[A-Z_][A-Z0-9_]*=", command):
                assignments.append(command)
                continue
            background = command.endswith("&")
            line = command.rstrip("&").rstrip()
            extra = overrides(line, ports)
            if extra:
                line += " " + shlex.join(extra)
            script = "; ".join([*assignments, "set -eo pipefail",
                                "exec " + line if background else line])
            if background:
                servers.append(start_server(script, line, command, work, env, ports))
            else:
                run_printed(script, line, command, work, env, queries)
    finally:
        for server in servers:
            if server.poll() is None:
                os.killpg(server.pid, signal.SIGTERM)
                server.wait(timeout=30)

    assert len(covered) >= 10
    CHECKS[part](str(work), queries, servers)


def test_every_readme_command_has_one_part():
    """Each part runs something, the serving lines sit with the models they serve, and
    every command outside the shared prerequisites belongs to exactly one part."""
    commands = [strip_comment(c) for c in bash_commands(documentation())]
    run = [c for c in commands if not any(re.search(p, c) for p, _ in COVERED)]
    parts = {part: [c for c in run if readme_part(c) == part] for part in README_PARTS}
    assert all(len(lines) >= 4 for lines in parts.values()), parts
    assert sum(map(len, parts.values())) + sum(readme_part(c) is None for c in run) == len(run)
    assert any("serve models/bert" in c for c in parts["classify_serve"])
    assert any("serve models/qa" in c for c in parts["squad_serve"])
    assert any(c.startswith(f"{BIN} pretrain ") for c in parts["convert_pretrain"])


def test_readme_first_screen_has_the_commands_and_the_example():
    """README.md is read in one screen: under 150 lines, and within its first 60 the two
    commands, exactly, and the Python example by hub id (which
    `test_readme_python_blocks_run_as_printed` runs)."""
    with open(os.path.join(REPO, "README.md"), encoding="utf-8") as f:
        lines = f.read().splitlines()
    assert len(lines) < 150, len(lines)
    first = "\n".join(lines[:60])
    assert [strip_comment(c) for c in bash_commands(first)] == [
        "bash scripts/quickstart.sh", "bash scripts/test.sh"]
    examples = python_blocks(first + "\n")
    assert len(examples) == 1, "README.md's first 60 lines hold no Python example"
    assert "from_pretrained(\"hf://" in examples[0] and len(examples[0].splitlines()) <= 7


def test_bash_commands_parser():
    markdown = "\n".join([
        "text", "```bash", "# a comment", "a --x 1 \\", "    --y 2   # why", "", "b", "```",
        "1. item", "   ```bash", "   c 'd # not a comment'", "   ```", "```python", "e", "```"])
    commands = bash_commands(markdown)
    assert commands == ["a --x 1 --y 2   # why", "b", "c 'd # not a comment'"]
    assert [strip_comment(c) for c in commands] == ["a --x 1 --y 2", "b",
                                                    "c 'd # not a comment'"]


def test_uncovered_example_fails_the_coverage_rule():
    _example_covered(".venv/bin/python examples/ner.py")()
    with pytest.raises(AssertionError, match="no test in"):
        _example_covered(".venv/bin/python examples/no_such_example.py")()


def test_every_covered_readme_line_has_a_test_that_runs_it():
    """Fast: the coverage rule for every README line that another test runs."""
    commands = [strip_comment(c) for c in bash_commands(documentation())]
    covered = 0
    for command in commands:
        for pattern, make in COVERED:
            if re.search(pattern, command):
                make(command)()
                covered += 1
    assert covered >= 10


def test_coverage_rule_needs_a_test_that_runs_the_command(tmp_path):
    """A mention in a docstring, a comment, a skipped test or a test that launches nothing
    covers nothing; a test that runs the script through a module constant does."""
    path = tmp_path / "test_fake.py"
    path.write_text(textwrap.dedent('''
        """Runs examples/quickstart.py."""  # examples quickstart.py
        import subprocess, os, pytest
        SCRIPT = os.path.join("examples", "quickstart.py")
        UNUSED = "kaggle_bert.ipynb"

        def test_mentions_only():
            """examples quickstart.py kaggle_bert.ipynb"""
            assert SCRIPT

        @pytest.mark.skip(reason="off")
        def test_skipped():
            subprocess.run(["python", "examples/ner.py"])

        def _launch(path):
            return subprocess.run(["python", path])

        def test_runs():
            _launch(SCRIPT)
    '''))
    assert covering_tests(str(path), "examples", "quickstart.py") == ["test_runs"]
    assert covering_tests(str(path), "kaggle_bert.ipynb") == []
    assert covering_tests(str(path), "examples/ner.py") == []
    for spec in (".ci/run", "tests/jobs/test_quickstart.py", "tests/examples/test_notebook.py",
                 "tests/bench/test_benchmarks.py"):
        assert os.path.exists(os.path.join(REPO, spec))
    with pytest.raises(AssertionError, match="does not run"):
        check_covered(REPO, ".ci/run", "bash", "scripts/quickstart.sh")


def test_readme_keras_bert_commands_parse_with_their_overrides():
    """Fast check (the full run is slow): every `keras-bert` line of the README, with the
    test's overrides appended, is accepted by the real argument parser."""
    from keras_bert.cli import build_parser

    commands = [strip_comment(c) for c in bash_commands(documentation())]
    parser, ports, parsed = build_parser(), {}, set()
    for command in commands:
        lexer = shlex.shlex(command, posix=True, punctuation_chars="|&<>;")
        lexer.whitespace_split = True
        words = list(lexer)
        if BIN not in words:
            continue
        words = words[words.index(BIN) + 1:]
        end = next((i for i, w in enumerate(words) if w in "|&<>;"), len(words))
        line = shlex.join([BIN, *words[:end]])
        args = parser.parse_args(words[:end] + overrides(line, ports))
        parsed.add(args.command)
    assert {"convert", "encode", "tokenize", "build-vocab", "create-pretraining-data",
            "pretrain", "finetune", "predict", "distill", "export", "audit", "serve", "query",
            "attention"} <= parsed


def python_blocks(markdown: str) -> list[str]:
    """The code of every ```python block. A ```py block is a fragment this test does not
    run: one that needs what is absent here (many hosts, a Kaggle notebook's files) or one
    run by a test of its own on the files it reads (the LiteRT page's tagger and QA)."""
    return re.findall(r"^```python\n(.*?)^```", markdown, flags=re.S | re.M)


def _litert_export(base_dir) -> None:
    """A classifier's LiteRT export as version 1 of `base_dir`, where the LiteRT page's
    blocks read it (`keras-bert export ... --format litert`, which the page shows, writes
    the same files; a random BERT-tiny keeps it to seconds: the blocks' point is the
    runtime's API, tests/export/test_litert.py checks the answers)."""
    import keras_bert

    clf = keras_bert.TextClassifier.from_pretrained(
        "random-tiny", labels=["rotten", "fresh"], seq_length=32, seed=0)
    clf.export(str(base_dir), format="litert", tokenizer="fast-bert")


# The hub id of README.md's example, served from the installed copy of its weights.
HUB_REPO = "sentence-transformers/all-MiniLM-L6-v2"


@pytest.mark.slow  # fits the real MiniLM: ~120 s in a fresh-clone CI run of 2026-11-26
# The README's tier fits, predicts, saves and exports the same class on a tiny model
# (tests/tasks/text_classification/test_text_classifier.py).
@pytest.mark.needs_jax  # the Backends page's block trains on Keras' JAX backend
def test_readme_python_blocks_run_as_printed(tmp_path):
    """The Python blocks (README.md's example and the pages' blocks) run as printed, each
    alone as a user pasting it would run it, with real MiniLM weights, offline: the README's
    `hf://` id is answered by a local Hugging Face endpoint serving the installed copy of
    those weights (`tests/support/hub_servers.py`). Each prints what its comments promise."""
    blocks = python_blocks(documentation())
    assert any(f"hf://{HUB_REPO}" in block for block in blocks)
    with HubServer(HUB_REPO, folder_files(minilm_dir())) as hub:
        env = {**hf_env(str(tmp_path / "hf"), hub.url), "PYTHONPATH": REPO}
        for number, block in enumerate(blocks):
            work = tmp_path / f"block{number}"
            work.mkdir()
            script = work / "block.py"
            script.write_text(block, encoding="utf-8")
            if "BASE_DIR" in block:  # the LiteRT page's blocks read an export from BASE_DIR/1
                _litert_export(work / "BASE_DIR")
            result = subprocess.run([os.path.join(REPO, ".venv", "bin", "python"),
                                     str(script)], cwd=work, env=env, capture_output=True,
                                    text=True, timeout=600)
            assert result.returncode == 0, result.stderr[-3000:]
            for promised in re.findall(r"print\(.*\)\s+#\s*(.+)$", block, flags=re.M):
                shown = promised.split(":")[0].strip()
                assert shown in result.stdout, (promised, result.stdout)
    assert "model.safetensors" in hub.downloads()  # the weights came by hub id
