"""Serving test helpers: tiny random model directories (2 layers, 32 wide, a small vocab)
and running a signature in a fresh TensorFlow-only process."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import keras

from keras_bert import BertConfig, BertEncoder
from keras_bert.checkpoints import save_model_dir
from keras_bert.environment import user_environment
from keras_bert.export.session_bundle import SessionBundle
from keras_bert.tasks.labels import LabelVocab
from keras_bert.tasks.registry import task_class
from tests.export.run_session_bundle import load_arrays, save_arrays

WORDS = ("the a cat dog sat on mat call me ishmael state of union is strong bert reads whole "
         "sentence at once in both directions . , ! ? - who where capital paris rome ahab "
         "smith sailed to sea what").split()


# The LiteRT classifier that `test_litert.py` and `test_litert_runtime.py` share
# (`tests/export/conftest.py`): its sequence length and labels.
LITERT_SEQ = 32
LITERT_LABELS = ["fresh", "plot", "rotten"]


def make_tiny_model_dir(path, seed: int = 0, max_position_embeddings: int = 64,
                        vocab_file: str | None = None, hidden_act: str = "gelu_exact") -> str:
    """A random encoder, as a keras_bert model dir (initialised from `seed`, so two seeds
    give two different models), with a small vocab or the uncased `vocab_file` given;
    `hidden_act="gelu_approximate"` computes the GELU of Google's releases."""
    keras.utils.set_random_seed(seed)
    os.makedirs(path, exist_ok=True)
    vocab = vocab_file or os.path.join(path, "vocab-source.txt")
    if vocab_file is None:
        with open(vocab, "w", encoding="utf-8") as f:
            f.write("\n".join(["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", *WORDS]) + "\n")
    with open(vocab, encoding="utf-8") as f:
        vocab_size = sum(1 for _ in f)
    config = BertConfig(vocab_size=vocab_size, hidden_size=32, num_layers=2, num_heads=4,
                        intermediate_size=64, max_position_embeddings=max_position_embeddings,
                        hidden_act=hidden_act)
    return save_model_dir(BertEncoder(config), os.path.join(path, "model"), vocab,
                          lower_case=True).path


def task_model(block: dict, encoder, preprocessor, labels: list[str] | None = None):
    """The task model a task block describes (read by its kind's config, as `load` reads
    it), with a new head on `encoder`, its preprocessor at the block's `seq_length`."""
    model_class = task_class(block["kind"])
    config = model_class.config_class.from_block(block)
    vocab = LabelVocab(labels) if labels else None
    network = model_class._build_network(encoder, config, vocab)
    length = block.get("seq_length")
    return model_class(network, preprocessor.with_length(length, length or None), vocab,
                       config)


def make_tiny_task_dir(path, task: dict, labels: list[str] | None = None, seed: int = 0,
                       vocab_file: str | None = None, hidden_act: str = "gelu_exact") -> str:
    """A tiny fine-tuned model directory of `task["kind"]` with a random head."""
    source = make_tiny_model_dir(os.path.join(path, "base"), seed, vocab_file=vocab_file,
                                 hidden_act=hidden_act)
    from keras_bert.checkpoints import load_model_dir

    base = load_model_dir(source)
    model = task_model(task, base.load_encoder(), base.preprocessor(), labels)
    return model.save(os.path.join(path, "task"))


HERE = os.path.dirname(os.path.abspath(__file__))


def run_session_jobs(python: str, jobs: list[dict], workdir) -> str:
    """Runs `jobs` (see tests/export/run_session_bundle.py) with the interpreter `python`;
    returns what the script printed."""
    manifest = os.path.join(str(workdir), "jobs.json")
    with open(manifest, "w", encoding="utf-8") as f:
        json.dump(jobs, f)
    env = user_environment(TF_CPP_MIN_LOG_LEVEL="3")
    env.pop("PYTHONPATH", None)
    done = subprocess.run([python, os.path.join(HERE, "run_session_bundle.py"), manifest],
                          cwd=str(workdir), env=env, capture_output=True, text=True,
                          timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    return done.stdout


def read_outputs(path: str) -> dict:
    """A job's outputs (name -> array), or `{"error": message}` if the signature refused."""
    if os.path.exists(path + ".error"):
        with open(path + ".error", encoding="utf-8") as f:
            return {"error": f.read()}
    return load_arrays(path)


def run_fresh(export_dir, signature, inputs, tmp_path):
    """Outputs of `signature` of `export_dir` loaded as TF Serving loads it (Session +
    SaverDef, TF Text as kernel libraries) in a fresh process without keras_bert."""
    [outputs] = run_fresh_many(export_dir, [(signature, inputs)], tmp_path)
    return outputs


def run_fresh_many(export_dir, requests, tmp_path) -> list[dict]:
    """`run_fresh` for several `(signature, inputs)` requests, in one fresh process."""
    jobs, paths = [], []
    for i, (signature, inputs) in enumerate(requests):
        inputs_path, out_path = tmp_path / f"in-{i}.npz", str(tmp_path / f"out-{i}.npz")
        save_arrays(str(inputs_path), inputs)
        jobs.append({"export": str(export_dir), "signature": signature,
                     "inputs": str(inputs_path), "outputs": out_path})
        paths.append(out_path)
    run_session_jobs(sys.executable, jobs, tmp_path)
    answers = [read_outputs(path) for path in paths]
    for outputs in answers:
        assert "error" not in outputs, outputs
    return answers


def run_in_session_many(export_dir, requests) -> list[dict]:
    """`run_fresh_many`'s answers through the same loader (`SessionBundle`: Session +
    SaverDef) in this process: no fresh TensorFlow (~10 s on 2 busy cores), so the README's
    tier reads an export's answers this way and the slow tier in a fresh process (which also
    proves that TF Text's kernel libraries alone serve it; the op audit is that proof's
    fast guard)."""
    with SessionBundle(str(export_dir)) as bundle:
        return [bundle.run(signature, inputs) for signature, inputs in requests]
