"""keras_bert: BERT in Keras 3 on TensorFlow, from raw text to TensorFlow Serving.

`BertConfig`, `PRESETS` and `BertEncoder` are loaded on first use (module `__getattr__`),
so that `import keras_bert.client` (or the server, REST and op-audit modules) does
not import Keras.
"""

import importlib

from keras_bert import environment

# Before Keras or TensorFlow is imported: they read these variables when they start.
environment.choose_defaults()

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
