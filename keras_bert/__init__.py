"""keras_bert: BERT in Keras 3 on TensorFlow, from raw text to TensorFlow Serving."""

import os

os.environ.setdefault("KERAS_BACKEND", "tensorflow")
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

from keras_bert.config import PRESETS, BertConfig  # noqa: E402
from keras_bert.models import BertEncoder  # noqa: E402

__version__ = "0.1.0"
__all__ = ["PRESETS", "BertConfig", "BertEncoder", "__version__"]
