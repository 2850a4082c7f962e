"""Many hosts on JAX (`keras_bert.training.distribution.initialize_hosts`, the jobs'
`--coordinator`, `--num-processes`, `--process-id`): real processes on 127.0.0.1.

Two processes of 4 simulated CPU devices each (`XLA_FLAGS=--xla_force_host_platform_
device_count=4 KERAS_BACKEND=jax`), joined by `keras.distribution.initialize`, run
`keras-bert finetune`'s job (`tests/support/multihost_fit.py`) with `data_parallel` over
the 8 devices: killed after step 5, then resumed from process 0's step-4 checkpoint, their
losses and weights equal one process on one device (the tolerances of
`test_distribution_jax.py`). Process 1 gets an output directory of its own, so that what it
writes shows: nothing; before the resumed run it gets a copy of process 0's, as a shared
file system would give it. With `model_parallel:2` (a 4 x 2 mesh over both processes'
devices) the same fit equals one device too, each attention kernel in halves; a model axis
across the processes is refused. `keras-bert
pretrain`'s job (`--job pretrain`: `TextPretrainer.fit`
on TFRecords, validated on their first batches) runs the same way, killed in its third epoch
and resumed from its step-4 checkpoint, with and without gradient accumulation (2
micro-batches an update), and on a corpus of documents; each process must have fed its
half of every global batch (which equal losses cannot show: a whole batch fed by each
process counts every example twice, and gives the same mean). The in-process tests
(pytest's TensorFlow backend) check the settings' messages; a coordinator that never
answers ends in a `TimeoutError` within the bound, in a JAX process.
"""

from __future__ import annotations

import csv
import json
import os
import shutil
import socket
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from keras_bert.training.distribution import initialize_hosts
from tests.support.multihost_fit import BATCH
from tests.training.test_distribution_jax import LOSS_RTOL, ROOT, WEIGHTS_ATOL

PROCESSES = 2
LOCAL_DEVICES = 4
# Seconds, each process: a few on an idle 2-core host; a niced process on a shared, busy one
# was seen to get 5% of a core.
PROCESS_TIMEOUT = 900
KILL_AT = 5  # of 8 steps (2 epochs of 4); process 0 checkpoints every 2
EVAL_ROWS = 2 * BATCH


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _env() -> dict:
    return dict(os.environ, KERAS_BACKEND="jax", TF_CPP_MIN_LOG_LEVEL="3",
                XLA_FLAGS=f"--xla_force_host_platform_device_count={LOCAL_DEVICES}")


# ----- in process: the settings' messages -------------------------------------------------

@pytest.mark.parametrize("settings, message", [
    ({"num_processes": 2, "process_id": 2}, r"^process_id must be in 0\.\.1 for 2 processes, "
                                            r"got 2$"),
    ({"num_processes": 2, "process_id": -1}, r"^process_id must be in 0\.\.1 for 2 "
                                             r"processes, got -1$"),
    ({"num_processes": 0}, r"^num_processes must be at least 1, got 0$"),
    ({"coordinator": "10.0.0.1", "num_processes": 2, "process_id": 0},
     r"^coordinator must be HOST:PORT \(process 0's address and a port free there\), got "
     r"'10\.0\.0\.1'$"),
    ({"num_processes": 2, "process_id": 0, "timeout": 0}, r"^timeout must be a positive"),
])
def test_bad_host_settings_name_the_problem(settings, message):
    with pytest.raises(ValueError, match=message):
        initialize_hosts(**settings)


def test_the_environment_is_read_and_checked_as_the_arguments(monkeypatch):
    monkeypatch.setenv("KERAS_DISTRIBUTION_NUM_PROCESSES", "2")
    monkeypatch.setenv("KERAS_DISTRIBUTION_PROCESS_ID", "5")
    with pytest.raises(ValueError, match=r"process_id must be in 0\.\.1 for 2 processes"):
        initialize_hosts()
    monkeypatch.setenv("KERAS_DISTRIBUTION_PROCESS_ID", "one")
    with pytest.raises(ValueError, match="process_id must be a whole number, got 'one' "
                                         r"\(argument or KERAS_DISTRIBUTION_PROCESS_ID\)"):
        initialize_hosts()


def test_many_hosts_need_jax():
    with pytest.raises(ValueError, match="many hosts are Keras' JAX distribution .* this "
                                         "process runs 'tensorflow'"):
        initialize_hosts("127.0.0.1:1234", 2, 0)


@pytest.mark.parametrize("command", ["finetune", "pretrain"])
def test_the_jobs_join_through_their_host_flags_and_resume_without_them(command, tmp_path,
                                                                        capsys):
    from keras_bert.cli import main
    from keras_bert.jobs.finetune import _NOT_ARGUMENTS as FINETUNE_IGNORED
    from keras_bert.jobs.options import HOST_FIELDS
    from keras_bert.jobs.pretrain import _NOT_ARGUMENTS as PRETRAIN_IGNORED

    # The flags reach initialize_hosts: its one line, before any file is read.
    own = (["--task", "classify", "--model", "random-tiny", "--train",
            str(tmp_path / "absent.csv")] if command == "finetune" else [])
    code = main([command, *own, "--out", str(tmp_path / "out"), "--coordinator",
                 "127.0.0.1:1234", "--num-processes", "2", "--process-id", "3"])
    assert code == 2
    assert capsys.readouterr().err.strip() == (
        f"keras-bert {command}: error: process_id must be in 0..1 for 2 processes, got 3")
    assert not (tmp_path / "out").exists()
    assert HOST_FIELDS == ("coordinator", "num_processes", "process_id")
    assert set(HOST_FIELDS) <= set(FINETUNE_IGNORED) & set(PRETRAIN_IGNORED)


@pytest.mark.needs_jax
def test_a_coordinator_that_never_answers_ends_in_a_timeout_error():
    port = _free_port()  # nothing listens there
    code = ("import sys, time\n"
            "from keras_bert.training.distribution import initialize_hosts\n"
            "start = time.monotonic()\n"
            "try:\n"
            f"    initialize_hosts('127.0.0.1:{port}', 2, 1, timeout=1)\n"
            "finally:\n"
            "    print(f'waited {time.monotonic() - start:.1f} s', file=sys.stderr)\n")
    done = subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=_env(),
                          capture_output=True, text=True, timeout=PROCESS_TIMEOUT)
    assert done.returncode == 1, done.stderr[-3000:]
    assert (f"TimeoutError: no coordinator answered at 127.0.0.1:{port} (process 1 waited "
            "until its timeout)") in done.stderr
    # The wait itself (the imports before it take what a busy host gives them).
    waited = float(done.stderr.split("waited ")[1].split(" s")[0])
    assert 1 <= waited < 30, waited  # a 1 s timeout: the test waits no longer than it must


# ----- two processes of 4 devices, against one process of one device -----------------------

@pytest.fixture(scope="module")
def root(tmp_path_factory) -> Path:
    """The zero-dropout encoder, 32 training rows of the classify rule and 16 of them
    to evaluate on, written before any of the processes starts. Two whole batches: many
    processes validate each epoch on whole batches only (`fit_rows`), so that the epochs'
    validation logs can equal one device's."""
    from tests.support import backend_fit

    root = tmp_path_factory.mktemp("multihost")
    backend_fit.init(root, kinds=[])
    texts, labels = backend_fit.sentences(32, seed=1)
    with open(root / "train.csv", "w", newline="", encoding="utf-8") as f:
        writer = csv.writer(f)
        writer.writerow(["text", "label"])
        writer.writerows(zip(texts, labels, strict=True))
    # Each batch's first half of one label and its second half of the other: a process
    # that scored only its own half of a batch would log an accuracy and a loss of its own.
    pairs = list(zip(texts, labels, strict=True))
    first, second = ([row for row in pairs if row[1] == label] for label in sorted(set(labels)))
    half = BATCH // PROCESSES
    rows = [row for b in range(EVAL_ROWS // BATCH)
            for row in first[b * half:(b + 1) * half] + second[b * half:(b + 1) * half]]
    assert len(rows) == EVAL_ROWS
    with open(root / "eval.csv", "w", newline="", encoding="utf-8") as f:
        csv.writer(f).writerows([("text", "label"), *rows])
    return root


@pytest.fixture(scope="module")
def one_device(root) -> dict:
    """The fine-tuning's run in one process on one device (`--distribution none`)."""
    (one,) = _results(root, _start(root, "one", 1, "--distribution", "none"))
    assert int(one["devices"]) == LOCAL_DEVICES and len(one["losses"]) == 8
    assert not np.allclose(one["losses"], one["losses"][0])  # the fit moved
    return one


def _start(root: Path, name: str, processes: int, *arguments: str) -> list:
    """`multihost_fit --eval` in `processes` processes (1: alone, no distribution), each
    writing under `root/name-p<i>`; the processes and their logs."""
    port = _free_port()
    runs = []
    for i in range(processes):
        hosts = ["--distribution", "data_parallel", "--coordinator", f"127.0.0.1:{port}",
                 "--num-processes", str(processes), "--process-id", str(i)]
        log = open(root / f"{name}-p{i}.log", "w", encoding="utf-8")  # noqa: SIM115
        command = [sys.executable, "-m", "tests.support.multihost_fit", str(root),
                   str(root / f"{name}-p{i}"), str(root / f"{name}-p{i}.npz"), "--eval",
                   *(hosts if processes > 1 else []), *arguments]
        runs.append((name, subprocess.Popen(command, cwd=ROOT, env=_env(), stdout=log,
                                            stderr=subprocess.STDOUT), log))
    return runs


def _results(root: Path, runs: list) -> list[dict]:
    """The results of `_start`'s processes, in process order, each waited for at most
    `PROCESS_TIMEOUT` (then all are killed)."""
    try:
        for _, process, log in runs:
            process.wait(timeout=PROCESS_TIMEOUT)
            log.close()
    finally:
        for _, process, _ in runs:
            if process.poll() is None:
                process.kill()
    for i, (name, process, _) in enumerate(runs):
        text = (root / f"{name}-p{i}.log").read_text(encoding="utf-8")
        assert process.returncode == 0, text[-3000:]
    return [dict(np.load(root / f"{name}-p{i}.npz")) for i, (name, _, _) in enumerate(runs)]


def _weights(result: dict) -> list:
    return [result[k] for k in sorted(result) if k.startswith("w")]


def _files(directory: Path) -> dict:
    return {str(p.relative_to(directory)): p.stat().st_mtime_ns
            for p in sorted(directory.rglob("*"))}


def _assert_same(found, expected, what: str) -> None:
    expected = np.asarray(expected)
    assert found.shape == expected.shape, what
    assert np.max(np.abs(found - expected) / np.abs(expected)) <= LOSS_RTOL, (what, found,
                                                                               expected)


@pytest.mark.slow
@pytest.mark.needs_jax
@pytest.mark.timeout(3 * PROCESS_TIMEOUT + 300)
def test_two_processes_fit_and_resume_as_one_device_and_only_process_0_writes(root,
                                                                            one_device):
    one = one_device
    for i, found in enumerate(_results(root, _start(root, "killed", PROCESSES,
                                                    "--kill-at", str(KILL_AT)))):
        assert (int(found["process"]), int(found["processes"])) == (i, PROCESSES)
        assert int(found["devices"]) == PROCESSES * LOCAL_DEVICES and bool(found["killed"])
        _assert_same(found["losses"], one["losses"][:KILL_AT], f"process {i}, killed")
    assert sorted(os.listdir(root / "killed-p0" / "checkpoints")) == [
        "ckpt-000000002.npz", "ckpt-000000004.npz"]
    assert not (root / "killed-p1").exists()  # process 1 wrote nothing

    # A shared file system's view: process 1 reads what process 0 wrote.
    shutil.copytree(root / "killed-p0", root / "killed-p1")
    before = _files(root / "killed-p1")
    for i, found in enumerate(_results(root, _start(root, "killed", PROCESSES))):
        # Resumed at step 4, the second epoch from its start: its running losses.
        _assert_same(found["losses"], one["losses"][4:], f"process {i}, resumed")
        for a, b in zip(_weights(one), _weights(found), strict=True):
            assert np.max(np.abs(a - b)) <= WEIGHTS_ATOL
    assert _files(root / "killed-p1") == before  # read, not written
    written = set(os.listdir(root / "killed-p0"))
    assert {"model", "metrics.json", "history.json", "curves.png"} <= written
    assert "complete.json" in os.listdir(root / "killed-p0" / "checkpoints")
    # The final evaluation of every row (outside the distribution), as one device's.
    metrics = [json.loads((root / f"{run}-p0" / "metrics.json").read_text())
               for run in ("one", "killed")]
    assert metrics[1]["eval_examples"] == EVAL_ROWS
    assert metrics[1]["eval"] == pytest.approx(metrics[0]["eval"], abs=1e-6)
    # Each epoch's validation (under the distribution: each process scores its half of every
    # batch, joined), the epoch before the kill included, as one device's.
    logs = [json.loads((root / f"{run}-p0" / "history.json").read_text())
            for run in ("one", "killed")]
    assert sorted(logs[1]) == sorted(logs[0]) and "val_loss" in logs[1]
    for key, values in logs[0].items():
        _assert_same(np.array(logs[1][key]), values, key)


@pytest.mark.slow
@pytest.mark.needs_jax
@pytest.mark.timeout(2 * PROCESS_TIMEOUT + 300)
def test_two_processes_fit_model_parallel_as_one_device(root, one_device):
    # model_parallel:2 over the 8 devices: a 4 x 2 (batch x model) mesh whose model axis
    # pairs two devices of one process, its batch axis spanning both processes.
    runs = _start(root, "model-parallel", PROCESSES, "--distribution", "model_parallel:2")
    for i, found in enumerate(_results(root, runs)):
        assert int(found["devices"]) == PROCESSES * LOCAL_DEVICES
        _assert_same(found["losses"], one_device["losses"], f"process {i}")
        for a, b in zip(_weights(one_device), _weights(found), strict=True):
            assert np.max(np.abs(a - b)) <= WEIGHTS_ATOL
        # The attention kernels lie in halves (columns of query, rows of output), each
        # device holding one.
        shards = json.loads(str(found["shards"]))
        query = next(k for k in shards if k.endswith("query/kernel"))
        output = next(k for k in shards if k.endswith("attention/output/kernel"))
        (hidden, width), = {tuple(s) for s in shards[query]}
        assert len(shards[query]) == LOCAL_DEVICES and hidden == 2 * width
        assert {tuple(s) for s in shards[output]} == {(width, hidden)}
    metrics = [json.loads((root / f"{run}-p0" / "metrics.json").read_text())
               for run in ("one", "model-parallel")]
    assert metrics[1]["eval"] == pytest.approx(metrics[0]["eval"], abs=1e-6)

    # A model axis across the processes (1 x 8) is refused in one line by every process,
    # before anything is written: process 0 could not hold the shards it has to write.
    runs = _start(root, "across", PROCESSES, "--distribution", "model_parallel:8")
    with pytest.raises(AssertionError) as failed:
        _results(root, runs)
    assert "ValueError: model_parallel:8 would split weights across processes" in str(
        failed.value)
    for i in range(PROCESSES):
        log = (root / f"across-p{i}.log").read_text(encoding="utf-8")
        assert ("ValueError: model_parallel:8 would split weights across processes: each of "
                "the 2 processes has 4 devices; choose a model axis that divides 4 (data "
                "parallel spans the processes)") in log, log[-2000:]
        assert not (root / f"across-p{i}").exists()


# ----- pretraining: keras-bert pretrain's job on TFRecords ---------------------------------

@pytest.fixture(scope="module")
def records(root) -> Path:
    """`root` with the zero-dropout pretrainer, its TFRecords and a corpus of 12 chapters
    (`multihost_fit`'s: 10 documents at least, so that the job holds 2 out)."""
    from tests.support.multihost_fit import write_records
    from tests.support.tiny_data import moby_chapters

    write_records(root)
    (root / "corpus").mkdir()
    moby_chapters(root / "corpus", 12)
    return root


@pytest.mark.slow
@pytest.mark.needs_jax
@pytest.mark.timeout(3 * PROCESS_TIMEOUT + 300)
@pytest.mark.parametrize(("source", "accumulation"), [("records", 1), ("records", 2),
                                                      ("corpus", 1)])
def test_two_processes_pretrain_and_resume_as_one_device_and_only_process_0_writes(
        records, source, accumulation):
    from tests.support.multihost_fit import PRETRAIN_EVAL_STEPS, PRETRAIN_STEPS

    # Accumulated: each update averages 2 micro-batches of 8, split in the compiled step
    # after Keras has joined the processes' halves into the global batch of 16. The corpus:
    # each process makes the same NSP pairs and masks of the documents (from the seed), and
    # feeds its half of each batch of them; held out, 2 of its documents.
    root, job = records, ("--job", "pretrain", "--accumulation-steps", str(accumulation),
                          *(["--corpus"] if source == "corpus" else []))
    name = f"pre-{source}{accumulation}"
    alone = _start(root, f"{name}-one", 1, *job, "--distribution", "none")
    killed = _start(root, f"{name}-killed", PROCESSES, *job, "--kill-at", str(KILL_AT))
    (one,) = _results(root, alone)
    assert len(one["losses"]) == PRETRAIN_STEPS and one["batches"].size == 0
    assert not np.allclose(one["losses"], one["losses"][0])  # the fit moved

    for i, found in enumerate(_results(root, killed)):
        assert (int(found["process"]), int(found["processes"])) == (i, PROCESSES)
        assert int(found["devices"]) == PROCESSES * LOCAL_DEVICES and bool(found["killed"])
        # Each process fed its half of every global batch: training's (8, or 16 when
        # accumulated) and validation's (8).
        fed = sorted({(n // PROCESSES, n) for n in (BATCH, accumulation * BATCH)})
        assert found["batches"].tolist() == [list(f) for f in fed], found["batches"]
        _assert_same(found["losses"], one["losses"][:KILL_AT], f"process {i}, killed")
    # Checkpoints at epoch ends (2 steps each): the kill in the third epoch leaves two.
    assert sorted(os.listdir(root / f"{name}-killed-p0" / "checkpoints")) == [
        "ckpt-000000002.npz", "ckpt-000000004.npz"]
    assert not (root / f"{name}-killed-p1").exists()  # process 1 wrote nothing

    # A shared file system's view, as above.
    shutil.copytree(root / f"{name}-killed-p0", root / f"{name}-killed-p1")
    before = _files(root / f"{name}-killed-p1")
    for i, found in enumerate(_results(root, _start(root, f"{name}-killed", PROCESSES, *job))):
        _assert_same(found["losses"], one["losses"][4:], f"process {i}, resumed")
        for a, b in zip(_weights(one), _weights(found), strict=True):
            assert np.max(np.abs(a - b)) <= WEIGHTS_ATOL
    assert _files(root / f"{name}-killed-p1") == before  # read, not written
    written = set(os.listdir(root / f"{name}-killed-p0"))
    assert {"model", "pretrainer.weights.h5", "metrics.json", "history.json",
            "curves.png"} <= written
    assert "complete.json" in os.listdir(root / f"{name}-killed-p0" / "checkpoints")
    # The final held-out scores (outside the distribution) are one device's.
    metrics = [json.loads((root / f"{run}-p0" / "metrics.json").read_text())
               for run in (f"{name}-one", f"{name}-killed")]
    assert metrics[1]["eval"]["examples"] == PRETRAIN_EVAL_STEPS * BATCH
    # Each epoch's validation on the records' first batches too (under the distribution).
    logs = [json.loads((root / f"{run}-p0" / "history.json").read_text())
            for run in (f"{name}-one", f"{name}-killed")]
    assert sorted(logs[1]) == sorted(logs[0]) and "val_loss" in logs[1]
    for key, values in logs[0].items():
        _assert_same(np.array(logs[1][key]), values, key)
    assert metrics[1]["eval"] == pytest.approx(metrics[0]["eval"], abs=1e-6)
