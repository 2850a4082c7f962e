"""Running the README's shell commands as a user would: its ```bash blocks read, each
command's sizes cut to minutes (`OVERRIDES`), servers started on free ports and waited for,
and each command run in a user's directory beside the checkout (`tests/test_readme.py`)."""

from __future__ import annotations

import json
import os
import shlex
import socket
import subprocess
import time
import urllib.request
from pathlib import Path

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BIN = ".venv/bin/keras-bert"

# Appended to a command that starts with the key, to keep the test to minutes on 2 CPU cores
# (the README's sizes train for many minutes); only sizes, never the data or the outputs.
OVERRIDES = {
    "create-pretraining-data": ["--dupe-factor", "1"],  # 10 passes over the corpus -> 1
    "pretrain": ["--steps", "4", "--steps-per-epoch", "2", "--batch-size", "8",
                 "--seq-length", "32"],
    "finetune --task classify": ["--epochs", "1", "--seq-length", "32", "--quiet"],
    "finetune --task tag": ["--epochs", "1", "--seq-length", "32", "--quiet"],
    "finetune --task multilabel": ["--epochs", "1", "--seq-length", "32", "--quiet"],
    "finetune --task squad": ["--epochs", "1", "--seq-length", "64", "--quiet"],
    "distill": ["--epochs", "1", "--quiet"],
}


# The quick start's attention line draws the quick start's classifier; the README test lets
# the README's own classifier (runs/cls, fine-tuned by an earlier command) stand in.
QUICK_MODEL = "artifacts/quickstart/finetune/model"


def bash_commands(markdown: str) -> list[str]:
    """The commands of every ```bash block (indented ones too), continuation lines joined,
    comment lines dropped, trailing comments kept (bash ignores them)."""
    commands, block, indent, pending = [], False, 0, ""
    for line in markdown.splitlines():
        stripped = line.strip()
        if not block and stripped.startswith("```bash"):
            block, indent = True, len(line) - len(line.lstrip())
            continue
        if block and stripped == "```":
            block = False
            continue
        if not block:
            continue
        text = line[indent:].rstrip()
        if not pending and (not text or text.startswith("#")):
            continue
        if text.endswith("\\"):
            pending += text[:-1].rstrip() + " "
            continue
        commands.append(pending + text.strip())
        pending = ""
    assert not block and not pending, "unterminated ```bash block or continuation"
    return commands


def strip_comment(command: str) -> str:
    """`command` without a trailing `# ...` comment (a `#` outside quotes after a space)."""
    quote = None
    for i, ch in enumerate(command):
        if quote:
            quote = None if ch == quote else quote
        elif ch in "'\"":
            quote = ch
        elif ch == "#" and i and command[i - 1].isspace():
            return command[:i].rstrip()
    return command


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nothing listens on now."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def subcommand(command: str) -> str | None:
    """What follows `keras-bert` in `command`; None for any other command."""
    return command[len(BIN):].strip() if command.startswith(BIN + " ") else None


def overrides(command: str, ports: dict[str, str]) -> list[str]:
    """The arguments appended to `command`: its `OVERRIDES`, and free ports for a server
    (remembered in `ports`, the README's port -> ours) and for the queries to it."""
    sub = subcommand(command)
    if sub is None:
        return []
    extra = [arg for key, args in OVERRIDES.items() if sub.startswith(key + " ")
             for arg in args]
    words = shlex.split(sub)
    if words[0] == "serve":  # free ports: the README's may be taken on a shared machine
        grpc = words[words.index("--grpc-port") + 1]
        rest = words[words.index("--rest-port") + 1]
        ports.setdefault(grpc, str(free_port()))
        ports.setdefault(rest, str(free_port()))
        extra += ["--grpc-port", ports[grpc], "--rest-port", ports[rest]]
    if words[0] == "query":
        host, port = words[words.index("--server") + 1].rsplit(":", 1)
        extra += ["--server", f"{host}:{ports[port]}"]
    return extra


def wait_rest(port: str, model: str, server: subprocess.Popen, timeout: float = 120.0):
    """Waits until `server` answers that `model` is available on REST `port`."""
    url = f"http://127.0.0.1:{port}/v1/models/{model}"
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        assert server.poll() is None, f"keras-bert serve exited with {server.returncode}"
        try:
            with urllib.request.urlopen(url, timeout=2) as response:
                states = [v["state"] for v in json.load(response)["model_version_status"]]
            if "AVAILABLE" in states:
                return
        except OSError:
            pass
        time.sleep(0.5)
    raise AssertionError(f"keras-bert serve did not answer on {url} in {timeout:.0f} s")


def user_dir(tmp_path) -> Path:
    """A user's directory: the checkout's `.venv`, `examples` and `bench` linked in (the
    benchmarks run from the clone), the quick start's classifier path pointing at the
    README's own, and an empty `data/` (in README order `create-pretraining-data`, the
    first part, fills it)."""
    work = tmp_path / "user"
    work.mkdir()
    for name in (".venv", "examples", "bench"):
        os.symlink(os.path.join(REPO, name), work / name)
    (work / "artifacts" / "quickstart" / "finetune").mkdir(parents=True)
    os.symlink(work / "runs" / "cls" / "model", work / QUICK_MODEL)
    (work / "data").mkdir()
    return work


def start_server(script, line, command, work, env, ports) -> subprocess.Popen:
    """A README command that ends in `&` (a server), started and waited for until its
    REST port answers for its model."""
    started = time.monotonic()
    server = subprocess.Popen(["bash", "-c", script], cwd=work, env=env,
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                              start_new_session=True)
    words = shlex.split(subcommand(line))
    wait_rest(ports[words[words.index("--rest-port") + 1]],
              words[words.index("--model-name") + 1], server)
    print(f"{time.monotonic() - started:6.1f} s  {command[:90]}")
    return server


def run_printed(script, line, command, work, env, queries) -> None:
    """A README command run to its end, which must succeed; a `query` command's rows are
    appended to `queries`, a `tokenize` command's ids or tokens checked."""
    started = time.monotonic()
    done = subprocess.run(["bash", "-c", script], cwd=work, env=env, text=True,
                          capture_output=True, timeout=600)
    print(f"{time.monotonic() - started:6.1f} s  {command[:90]}")
    assert done.returncode == 0, (
        f"README command failed ({done.returncode}): {command}\n{done.stderr[-3000:]}")
    if (subcommand(line) or "").startswith("query "):
        queries.append([json.loads(row) for row in done.stdout.splitlines()])
    if (subcommand(line) or "").startswith("tokenize "):
        rows = [row.split() for row in done.stdout.splitlines()]
        want = ["call", "me"] if "--tokens" in line else ["2655", "2033"]
        assert len(rows) == 2 and rows[0][:2] == want  # BERT uncased ids
