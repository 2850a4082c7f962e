"""`LiteRTModel`'s interpreter threads: every CPU the process may use unless told, as
ONNX Runtime does (LiteRT's own default is one thread)."""

import os
import subprocess
import sys

import pytest

from keras_bert.export.litert_runtime import LiteRTModel
from keras_bert.tasks.task_dir import export_model
from tests.export.helpers import make_tiny_task_dir
from tests.text.test_tokenizer import uncased_vocab_path

pytest.importorskip("ai_edge_litert")

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
# Counts the threads a LiteRTModel adds once it has answered. The process is told it may run
# on three CPUs whatever the host has: XNNPACK's thread pool starts its workers all the
# same, so the count does not depend on the host.
COUNT = """
import os, sys
from keras_bert.export import litert_runtime
litert_runtime.available_cpus = lambda: 3
threads = lambda: len(os.listdir("/proc/self/task"))
before = threads()
kwargs = {} if sys.argv[2] == "default" else {"num_threads": int(sys.argv[2])}
model = litert_runtime.LiteRTModel(sys.argv[1], **kwargs)
model(["a short text", "another"])
print(threads() - before)
"""


@pytest.fixture(scope="module")
def lite(tmp_path_factory):
    root = tmp_path_factory.mktemp("litert_runtime")
    task_dir = make_tiny_task_dir(root, {"kind": "classify", "seq_length": 16}, ["a", "b"],
                                  vocab_file=uncased_vocab_path())
    return export_model(task_dir, str(root / "lite"), format="litert",
                        tokenizer="fast-bert").path


def _added_threads(path: str, num_threads: str) -> int:
    done = subprocess.run([sys.executable, "-c", COUNT, path, num_threads], cwd=REPO,
                          capture_output=True, text=True, timeout=300,
                          env={**os.environ, "PYTHONPATH": REPO})
    assert done.returncode == 0, done.stderr[-2000:]
    return int(done.stdout.split()[-1])


@pytest.mark.skipif(not os.path.isdir("/proc/self/task"), reason="counts threads in /proc")
def test_interpreter_runs_on_every_available_cpu_unless_told(lite):
    one, default, two = (_added_threads(lite, n) for n in ("1", "default", "2"))
    assert two == one + 1  # a thread pool of two: the caller and one worker
    assert default == one + 2  # three CPUs: the caller and two workers


@pytest.mark.parametrize("bad", [0, -2, 1.5, True, "2"])
def test_a_thread_count_that_is_not_one_or_more_is_one_error(lite, bad):
    with pytest.raises(ValueError, match="num_threads must be a whole number of threads"):
        LiteRTModel(lite, num_threads=bad)
