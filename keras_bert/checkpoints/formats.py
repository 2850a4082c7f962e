"""Which checkpoint layout a directory holds (`detect_format`): Google's, Hugging Face's, a
keras-hub preset or a keras_bert model directory."""

from __future__ import annotations

import os

from keras_bert.checkpoints import huggingface, keras_hub
from keras_bert.checkpoints.model_dir import MANIFEST

# The file that marks a directory as holding a checkpoint of that layout.
CHECKPOINT_MARKERS = {"google": "bert_config.json", "huggingface": "config.json",
                      "keras_hub": keras_hub.METADATA_FILE}


def detect_format(path: str) -> str:
    """`google`, `huggingface`, `keras_hub` or `keras_bert`, from the files in `path`."""
    if not os.path.isdir(path):
        raise FileNotFoundError(f"Not a directory: {path}")
    files = set(os.listdir(path))
    if MANIFEST in files:
        return "keras_bert"
    if "bert_config.json" in files:
        return "google"
    if keras_hub.is_keras_hub_preset(path):  # also has a config.json: before Hugging Face
        return "keras_hub"
    if "config.json" in files and files & set(huggingface.WEIGHT_FILES):
        return "huggingface"
    raise ValueError(f"{path} holds neither a Google BERT checkpoint (bert_config.json + "
                     f"bert_model.ckpt.*), Hugging Face weights (config.json + one of "
                     f"{huggingface.WEIGHT_FILES}) nor a keras-hub preset (config.json + "
                     f"{keras_hub.WEIGHTS_FILE} + {keras_hub.METADATA_FILE})")
