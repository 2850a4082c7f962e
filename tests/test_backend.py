"""The backend boundary (`keras_bert.backend`): the networks, the layers and the optimizers
import no TensorFlow when they are imported, so that an image with Keras and JAX alone runs
them (tests/models/test_without_tensorflow.py proves it in such an environment, slowly;
this reads the imports, in the README's tier)."""

from __future__ import annotations

import glob
import os
import sys

import pytest

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(REPO, "scripts"))
import package_graph  # noqa: E402  (scripts/ is not a package: the one import walker)

# Globs of the modules that must stay backend-neutral: every layer and model, every kind's
# network and config, and what training on ids needs (optimizers, schedules, precision,
# distribution, accumulation). A module added under these folders is covered as it lands.
NEUTRAL = ("keras_bert/backend.py", "keras_bert/config.py", "keras_bert/layers/*.py",
           "keras_bert/models/*.py", "keras_bert/tasks/*/network.py",
           "keras_bert/tasks/*/config.py", "keras_bert/training/optimizer.py",
           "keras_bert/training/lamb.py", "keras_bert/training/schedules.py",
           "keras_bert/training/fused_adam.py", "keras_bert/training/dense_gradients.py",
           "keras_bert/training/precision.py", "keras_bert/training/distribution.py",
           "keras_bert/training/fit_schedule.py")
TENSORFLOW = ("tensorflow", "tensorflow_text", "tf_keras")


def _neutral_modules() -> list[str]:
    paths = sorted({p for pattern in NEUTRAL for p in glob.glob(os.path.join(REPO, pattern))})
    return [os.path.relpath(p, REPO)[:-3].replace(os.sep, ".").removesuffix(".__init__")
            for p in paths]


def test_the_neutral_list_names_the_four_kinds_networks():
    modules = _neutral_modules()
    assert len([m for m in modules if m.endswith(".network")]) == 4
    assert "keras_bert.layers.self_attention" in modules
    assert "keras_bert.models.encoder" in modules


@pytest.mark.parametrize("module", _neutral_modules())
def test_a_neutral_module_imports_no_tensorflow_when_imported(module):
    names = package_graph.imported_at_import(REPO, module)
    found = sorted(n for n in names if n.split(".")[0] in TENSORFLOW)
    assert found == [], (f"importing {module} imports {found} (through keras_bert's own "
                         "modules or their packages' __init__): import it inside the "
                         "function that needs it, behind keras_bert.backend.is_tensorflow()")
