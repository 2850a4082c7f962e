"""`LiteRTModel`'s interpreter threads: every CPU the process may use unless told, as
ONNX Runtime does (LiteRT's own default is one thread)."""

import os
import subprocess
import sys

import numpy as np
import pytest

from keras_bert.export.litert_runtime import LiteRTModel

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
def lite(litert_classifier_file):
    """A tiny classifier's LiteRT file: `test_litert.py`'s (`tests/export/conftest.py`)."""
    return litert_classifier_file.path


def _added_threads(path: str, num_threads: str) -> int:
    done = subprocess.run([sys.executable, "-c", COUNT, path, num_threads], cwd=REPO,
                          capture_output=True, text=True, timeout=300,
                          env={**os.environ, "PYTHONPATH": REPO})
    assert done.returncode == 0, done.stderr[-2000:]
    return int(done.stdout.split()[-1])


# 31 s in CI's table, 105 s on a busy 2-core Zen 3: three interpreters in fresh processes
@pytest.mark.slow
@pytest.mark.skipif(not os.path.isdir("/proc/self/task"), reason="counts threads in /proc")
def test_interpreter_runs_on_every_available_cpu_unless_told(lite):
    one, default, two = (_added_threads(lite, n) for n in ("1", "default", "2"))
    assert two == one + 1  # a thread pool of two: the caller and one worker
    assert default == one + 2  # three CPUs: the caller and two workers


@pytest.mark.parametrize("bad", [0, -2, 1.5, True, "2"])
def test_a_thread_count_that_is_not_one_or_more_is_one_error(lite, bad):
    with pytest.raises(ValueError, match="num_threads must be a whole number of threads"):
        LiteRTModel(lite, num_threads=bad)


class _CountingWrapper:
    """The interpreter's wrapper, counting `AllocateTensors` calls."""

    def __init__(self, wrapper):
        self.wrapper, self.allocations = wrapper, 0

    def AllocateTensors(self, *args):  # noqa: N802 (the wrapper's name)
        self.allocations += 1
        return self.wrapper.AllocateTensors(*args)

    def __getattr__(self, name):
        return getattr(self.wrapper, name)


def _reference(path: str, signature: str, inputs: dict) -> dict:
    """What LiteRT's own `SignatureRunner` answers, in an interpreter of its own."""
    from keras_bert.export.litert_runtime import make_interpreter

    with open(os.path.join(path, "model.tflite"), "rb") as f:
        runner = make_interpreter(f.read(), 1).get_signature_runner(signature)
    return runner(**inputs)


def _ids(length: int, rows: int = 1) -> dict:
    ids = np.full([rows, length], 7, np.int32)
    ids[:, 0], ids[:, -1] = 2, 3  # [CLS] ... [SEP] of the test vocabulary
    return {"input_word_ids": ids, "input_mask": np.ones_like(ids),
            "input_type_ids": np.zeros_like(ids)}


def test_answers_as_litert_own_runner_as_batches_and_lengths_change(lite):
    model = LiteRTModel(lite, num_threads=1)
    texts = [["a short text"], ["three texts here", "", "a much longer text " * 4],
             ["another short one"], ["two", "texts of other lengths"], ["a short text"]]
    for batch in texts:
        got = model(batch)
        want = _reference(lite, "serving_default", {"text": np.array(
            [t.encode() for t in batch], dtype=object)})
        np.testing.assert_allclose(got["logits"], want["logits"], rtol=0, atol=1e-6)
        np.testing.assert_array_equal(got["label"], want["label"])
    for length, rows in ((5, 1), (9, 1), (9, 3), (5, 1)):
        got = model.run("serve_ids", **_ids(length, rows))
        want = _reference(lite, "serve_ids", _ids(length, rows))
        np.testing.assert_allclose(got["logits"], want["logits"], rtol=0, atol=1e-6)


def test_allocates_only_when_an_input_shape_changes(lite):
    model = LiteRTModel(lite, num_threads=1)
    model(["warm up"])
    call = model._runners["serving_default"]
    counter = _CountingWrapper(call.runner._interpreter_wrapper)
    call.runner._interpreter_wrapper = counter
    for text in ["a", "a longer text than the first", "", "text"]:
        model([text])  # the string tensor keeps its shape [1], whatever the text
    assert counter.allocations == 0
    model(["two", "texts"])
    model(["two", "more"])
    assert counter.allocations == 1
    model(["one again"])
    assert counter.allocations == 2


def test_a_failed_call_allocates_afresh_and_the_next_answers(lite):
    model = LiteRTModel(lite, num_threads=1)
    first = model(["Call me Ishmael."])
    with pytest.raises((ValueError, RuntimeError)):
        model.run("serving_default", text=np.zeros([1], np.float32))  # the shape it has
    assert model._runners["serving_default"].shapes == {}
    np.testing.assert_array_equal(model(["Call me Ishmael."])["logits"], first["logits"])
