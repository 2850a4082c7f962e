"""Serving test helpers: tiny random model directories (2 layers, 32 wide, a small vocab)
and running a signature in a fresh TensorFlow-only process."""

from __future__ import annotations

import os
import subprocess
import sys

import keras
import numpy as np

from keras_bert import BertConfig, BertEncoder
from keras_bert.checkpoints import save_model_dir
from keras_bert.checkpoints.task_dir import build_task_model, save_task_model
from keras_bert.tasks.labels import LabelVocab

WORDS = ("the a cat dog sat on mat call me ishmael state of union is strong bert reads whole "
         "sentence at once in both directions . , ! ? - who where capital paris rome ahab "
         "smith sailed to sea what").split()


def make_tiny_model_dir(path, seed: int = 0, max_position_embeddings: int = 64) -> str:
    """A random encoder with a small vocab, as a keras_bert model dir (initialised from
    `seed`, so two seeds give two different models)."""
    keras.utils.set_random_seed(seed)
    os.makedirs(path, exist_ok=True)
    vocab = os.path.join(path, "vocab-source.txt")
    with open(vocab, "w", encoding="utf-8") as f:
        f.write("\n".join(["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", *WORDS]) + "\n")
    config = BertConfig(vocab_size=5 + len(WORDS), hidden_size=32, num_layers=2, num_heads=4,
                        intermediate_size=64, max_position_embeddings=max_position_embeddings)
    return save_model_dir(BertEncoder(config), os.path.join(path, "model"), vocab,
                          lower_case=True).path


def make_tiny_task_dir(path, task: dict, labels: list[str] | None = None, seed: int = 0) -> str:
    """A tiny fine-tuned model directory of `task["kind"]` with a random head."""
    source = make_tiny_model_dir(os.path.join(path, "base"), seed)
    from keras_bert.checkpoints import load_model_dir

    base = load_model_dir(source)
    vocab = LabelVocab(labels) if labels else None
    model = build_task_model(task["kind"], base.load_encoder(), task, vocab)
    return save_task_model(model, os.path.join(path, "task"), base.vocab_file, base.lower_case,
                           task, vocab).path


HERE = os.path.dirname(os.path.abspath(__file__))


def run_fresh(export_dir, signature, inputs, tmp_path):
    """Outputs of `signature` computed by tests/serving/load_in_fresh_process.py (a process
    that imports only TensorFlow and TF Text)."""
    inputs_path, out_path = tmp_path / "in.npz", tmp_path / "out.npz"
    np.savez(inputs_path, **inputs)
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3")
    env.pop("PYTHONPATH", None)
    done = subprocess.run([sys.executable, os.path.join(HERE, "load_in_fresh_process.py"),
                           export_dir, signature, str(inputs_path), str(out_path)],
                          cwd=str(tmp_path), env=env, capture_output=True, text=True,
                          timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    with np.load(out_path, allow_pickle=True) as data:  # string outputs: object arrays
        return {name: data[name] for name in data.files}
