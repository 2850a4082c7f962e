"""The development server picks up a new version: loaded, warmed up (its warmup file
replayed) and served in place of the old one, which ends; a broken version is reported and
never replaces the served one. The server binds 127.0.0.1 on free ports (port 0); every wait
is bounded in time."""

from __future__ import annotations

import os
import re
import shutil
import time

import numpy as np
import pytest

from keras_bert.client import GrpcClient, RestClient, ServerError
from keras_bert.tasks.task_dir import export_model
from tests.export.helpers import make_tiny_model_dir
from tests.support.devserver import TEXTS, assert_rows_match, model_server, reference_outputs
from tests.support.reference import require


def test_new_version_is_loaded_warmed_up_and_served(exported, tmp_path, caplog):
    base = tmp_path / "bert"
    shutil.copytree(exported.path, base / "1")  # the module's export as version 1
    caplog.set_level("INFO", logger="keras_bert.devserver")
    with model_server(str(base), "bert", grpc_port=0, rest_port=0, poll_seconds=0.2) as server, \
            GrpcClient(server.grpc_address, "bert", timeout=60) as client:
        rest = RestClient(server.rest_url, "bert")
        before = client.predict(TEXTS[:2])
        # A second, differently initialised model, exported next to version 1.
        new_model = make_tiny_model_dir(str(tmp_path / "second"), seed=1)
        second = export_model(new_model, str(base), target=None)
        assert second.version == 2
        deadline = time.monotonic() + 60
        while server.store.current.version != 2 and time.monotonic() < deadline:
            time.sleep(0.1)
        states = {s["version"]: s["state"] for s in client.status()["model_version_status"]}
        assert states == {"2": "AVAILABLE", "1": "END"}
        assert rest.status(2)["model_version_status"][0]["state"] == "AVAILABLE"
        assert server.store.warmup_counts == {1: 1, 2: 1}
        assert "warmup: replayed 1 request(s) for model 'bert' version 2" in caplog.text
        after = client.predict(TEXTS[:2])
        assert_rows_match(after, reference_outputs(second.path, TEXTS[:2]))
        assert not np.allclose(after[0]["embedding"], before[0]["embedding"], atol=1e-3)
        assert rest.metadata()["model_spec"]["version"] == "2"
        with pytest.raises(ServerError, match="version 1 of model 'bert' is not available"):
            client.predict(TEXTS[:1], version=1)
        # A broken version is reported and never replaces the served one.
        os.makedirs(base / "3")
        deadline = time.monotonic() + 30
        while (3 not in server.store.states or server.store.states[3].state != "END") \
                and time.monotonic() < deadline:
            time.sleep(0.1)
        assert client.status(3)["model_version_status"][0]["status"]["error_code"] == "UNKNOWN"
        assert_rows_match(client.predict(TEXTS[:2]), reference_outputs(second.path, TEXTS[:2]))
        rest.close()


def test_each_version_s_session_gets_the_thread_pools_asked_for(exported, tmp_path):
    """`--intra-op-threads` / `--inter-op-threads` reach the config of the Session every
    version is loaded into, as TF Serving's `--tensorflow_*_op_parallelism` do; it still
    answers as the export does. 0 and 0 leave the Session as TensorFlow builds it. (That the
    pools then answer faster is measured in a process of the server's own, where its Session
    is the first: bench/RESULTS.md; in this test process TensorFlow's pool already exists.)"""
    base = tmp_path / "bert"
    shutil.copytree(exported.path, base / "1")
    with model_server(str(base), "bert", grpc_port=0, rest_port=None, intra_op_threads=1,
                      inter_op_threads=3) as server, \
            GrpcClient(server.grpc_address, "bert", timeout=60) as client:
        config = server.store.current.bundle.session._config
        assert (config.intra_op_parallelism_threads, config.inter_op_parallelism_threads) \
            == (1, 3)
        assert_rows_match(client.predict(TEXTS[:2]), reference_outputs(exported.path, TEXTS[:2]))
    with model_server(str(base), "bert", grpc_port=0, rest_port=None) as server:
        assert server.store.session_config is None


@pytest.mark.parametrize("threads", [{"intra_op_threads": -1}, {"inter_op_threads": 1.5}])
def test_a_bad_thread_count_is_one_error_naming_it(exported, threads):
    name, value = next(iter(threads.items()))
    with pytest.raises(ValueError, match=rf"^{name} must be a whole number >= 0 .*got "
                                         rf"{re.escape(repr(value))}$"):
        model_server(exported.path, "bert", grpc_port=0, rest_port=None, **threads)


def test_merged_calls_that_would_leave_cores_idle_are_warned_of(caplog):
    """One intra-op thread and one batch thread: merged calls keep one core working, slower
    than TensorFlow's defaults on long texts (bench/RESULTS.md). The server says so once, with
    the flags that use every core; settings that use them all say nothing."""
    warn = require("keras_bert.devserver.server").warn_of_one_core
    caplog.set_level("WARNING", logger="keras_bert.devserver")
    assert warn(1, 1, cores=2)
    assert "about 1 of 2 cores work. Serve with --no-batching, or --batch-threads 2" \
        in caplog.text
    caplog.clear()
    assert warn(2, 1, cores=8) and "about 2 of 8 cores" in caplog.text \
        and "--batch-threads 4" in caplog.text
    caplog.clear()
    # TensorFlow's default pools, batch threads enough for the cores, or a single core.
    assert not any([warn(0, 1, cores=2), warn(1, 2, cores=2), warn(2, 1, cores=2),
                    warn(1, 1, cores=1)])
    assert caplog.text == ""
