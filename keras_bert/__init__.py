"""keras_bert: BERT in Keras 3 on TensorFlow, from raw text to TensorFlow Serving.

`BertConfig`, `PRESETS` and `BertEncoder` are loaded on first use (module `__getattr__`),
so that `import keras_bert.client` (or the server, REST and op-audit modules) does
not import Keras.
"""

import importlib
import importlib.util
import os

# TensorFlow is the package's backend (the text pipeline and the exports are TensorFlow's);
# where it is not installed (an accelerator image with JAX alone), the networks and the
# training loop on token ids run on JAX. KERAS_BACKEND, when set, wins.
if "KERAS_BACKEND" not in os.environ:
    os.environ["KERAS_BACKEND"] = (
        "tensorflow" if importlib.util.find_spec("tensorflow") is not None
        or importlib.util.find_spec("jax") is None else "jax")
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
# TensorFlow turns its oneDNN kernels on by itself only on x86 CPUs with AVX-512 VNNI/BF16
# or AMX; on the others (AVX2 alone: AMD EPYC Zen 3, older Xeons) it runs Eigen's, and an
# all-MiniLM-L6-v2 fine-tuning step took 1.26x as long (docs/backends.md, "CPU kernels").
# It reads the variable when its runtime starts, so this holds where keras_bert is imported
# before TensorFlow; TF_ENABLE_ONEDNN_OPTS, when set, wins.
os.environ.setdefault("TF_ENABLE_ONEDNN_OPTS", "1")

__version__ = "0.1.0"
__all__ = ["PRESETS", "BertConfig", "BertEncoder", "FitSchedule", "MultiLabelClassifier",
           "QuestionAnswerer", "TextClassifier", "TextEmbedder", "TextPretrainer",
           "TextRegressor", "TokenClassifier", "__version__"]

_LAZY = {"PRESETS": "keras_bert.config", "BertConfig": "keras_bert.config",
         "BertEncoder": "keras_bert.models", "FitSchedule": "keras_bert.training.fit_schedule",
         "TextClassifier": "keras_bert.tasks", "TextRegressor": "keras_bert.tasks",
         "TokenClassifier": "keras_bert.tasks", "MultiLabelClassifier": "keras_bert.tasks",
         "QuestionAnswerer": "keras_bert.tasks", "TextEmbedder": "keras_bert.tasks",
         "TextPretrainer": "keras_bert.pretraining"}


def __getattr__(name: str):
    """Imports a public name (`_LAZY`) from its module when first used."""
    if name in _LAZY:
        value = getattr(importlib.import_module(_LAZY[name]), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module 'keras_bert' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_LAZY))
