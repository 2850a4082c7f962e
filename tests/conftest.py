"""Shared fixtures: tiny BERT configs, a seeded RNG, and a clean Keras state per test."""

from __future__ import annotations

import os

os.environ.setdefault("KERAS_BACKEND", "tensorflow")
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

# No Keras here, only in the fixtures: xdist's controller process loads this file and runs
# no test, and importing Keras (TensorFlow with it) took it ~7 s on a Zen 5 before it
# started the workers, in every run. The workers import it as they collect.
import numpy as np  # noqa: E402
import pytest  # noqa: E402

from keras_bert import BertConfig  # noqa: E402
from tests.support.schedule import (  # noqa: E402
    longest_files_first,
    read_durations,
    select,
    work_unit,
)

# `ci_rules`: no test skips under CI=true; `resource_log`: CPU and threads per test in the
# durations log; `pytester`: the tests of those run a suite.
pytest_plugins = ["tests.support.ci_rules", "tests.support.resource_log", "pytester"]

# The tiny encoder the unit tests use: builds and runs in well under a second on a CPU.
TINY_CONFIG_KWARGS = dict(vocab_size=101, hidden_size=32, num_layers=2, num_heads=4,
                          intermediate_size=64, max_position_embeddings=64)


@pytest.fixture(scope="session")
def tiny_config() -> BertConfig:
    """A 2-layer, 32-wide BERT config (with BERT's default dropout of 0.1)."""
    return BertConfig(**TINY_CONFIG_KWARGS)


@pytest.fixture(scope="session")
def tiny_config_no_dropout(tiny_config) -> BertConfig:
    """`tiny_config` without dropout (deterministic training steps)."""
    return tiny_config.replace(hidden_dropout=0.0, attention_dropout=0.0)


@pytest.fixture
def rng() -> np.random.Generator:
    """A NumPy generator seeded per test."""
    return np.random.default_rng(1234)


@pytest.fixture(autouse=True)
def _keras_state():
    """Seeds Keras/TF and restores the global dtype policy after each test."""
    import keras

    keras.utils.set_random_seed(0)
    policy = keras.config.dtype_policy()
    yield
    keras.config.set_dtype_policy(policy)


# ----- shared models: built once per test process (per xdist worker), read-only for tests ---


@pytest.fixture(scope="session")
def tiny_model_dir(tmp_path_factory) -> str:
    """A tiny random encoder's model directory (`tests/export/helpers.make_tiny_model_dir`,
    seed 0). Tests must not write into it: copy it first."""
    from tests.export.helpers import make_tiny_model_dir

    return make_tiny_model_dir(str(tmp_path_factory.mktemp("tiny")))


@pytest.fixture(scope="session")
def tiny_export(tiny_model_dir, tmp_path_factory):
    """Its export as `BASE/1/` (an `ExportResult`; no op audit: that is tested in
    tests/export/test_op_audit.py). Shared by the serving, fuzz and abuse tests: copy the
    version directory before adding versions next to it."""
    from keras_bert.tasks.task_dir import export_model

    return export_model(tiny_model_dir, str(tmp_path_factory.mktemp("serving") / "bert"),
                        target=None)


# The learning thresholds of the tests that train the tiny model were measured over the
# starting models of seeds 0-4 (`KERAS_BERT_TINY_SEED`); a run uses seed 0.
TINY_SEED = int(os.environ.get("KERAS_BERT_TINY_SEED", "0"))


@pytest.fixture(scope="module")
def model_dir(tmp_path_factory) -> str:
    """A tiny random BERT over the test vocabulary (`tests/support/tiny_data.py`, seed
    `TINY_SEED`), as a model directory; one per test module."""
    import keras

    from tests.support.tiny_data import write_tiny_model_dir

    keras.utils.set_random_seed(TINY_SEED)
    return write_tiny_model_dir(tmp_path_factory.mktemp("tiny_bert"))


@pytest.fixture(scope="module")
def corpus(tmp_path_factory) -> str:
    """The first 12 chapters of the embedded Moby Dick, as a corpus file."""
    from tests.support.tiny_data import moby_chapters

    return moby_chapters(tmp_path_factory.mktemp("corpus"), 12)


@pytest.fixture(scope="session")
def minilm_model_dir(tmp_path_factory) -> str:
    """The real all-MiniLM-L6-v2 weights converted once (`convert`, the library call; the
    `keras-bert convert` command itself is tested in tests/cli/test_cli_convert_encode.py)."""
    from keras_bert.checkpoints import convert
    from tests.support.reference import minilm_dir

    return convert(minilm_dir(), str(tmp_path_factory.mktemp("minilm") / "minilm")).path


# ----- CI's rules: what this Python and this landing run, the longest files first ----------


@pytest.hookimpl(wrapper=True, tryfirst=True)  # before `-m` deselects: the pick is `ci_pick`
def pytest_collection_modifyitems(config, items):
    """Leaves out the tests this Python cannot run, marks this run's exhaustive test and
    keeps this CI landing's slow tests (`tests/support/schedule.py: select`); once `-m` has
    deselected, starts the longest files first, so that two xdist workers end together."""
    select(config, items)
    result = yield
    longest_files_first(items, read_durations(str(config.rootpath)), str(config.rootpath))
    return result


@pytest.hookimpl(optionalhook=True)  # a run without xdist (`-p no:xdist`) lacks the hook
def pytest_xdist_make_scheduler(config, log):
    """`--dist loadfile` with the files of needs_torch tests as one unit
    (`tests/support/schedule.py: work_unit`); any other `--dist` as xdist has it."""
    if config.getoption("dist") != "loadfile":
        return None
    from xdist.scheduler import LoadFileScheduling

    marks_torch: dict[str, bool] = {}

    class TorchFilesTogether(LoadFileScheduling):
        # `_split_scope` is the hook xdist's own schedulers override to say what one unit
        # of work is (LoadFileScheduling: the file).
        def _split_scope(self, nodeid: str) -> str:
            return work_unit(nodeid, str(config.rootpath), marks_torch)

    return TorchFilesTogether(config, log)
