"""Checkpoint import/export: Google TF1, Hugging Face safetensors, keras_bert model dirs."""

from keras_bert.checkpoints.conversion import convert, detect_format, with_approximate_gelu
from keras_bert.checkpoints.google import load_google_dir, save_google_dir
from keras_bert.checkpoints.huggingface import load_hf_dir, save_hf_dir
from keras_bert.checkpoints.mapping import CheckpointMismatchError
from keras_bert.checkpoints.model_dir import ModelDir, load_encoder, load_model_dir, save_model_dir

__all__ = ["CheckpointMismatchError", "ModelDir", "convert", "detect_format", "load_encoder",
           "load_google_dir", "load_hf_dir", "load_model_dir", "save_google_dir", "save_hf_dir",
           "save_model_dir", "with_approximate_gelu"]
