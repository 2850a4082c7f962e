"""Knowledge distillation: the loss against a NumPy computation, a student that learns, and
`keras-bert distill` end to end (teacher vs student accuracy and speed in metrics.json)."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import keras
import numpy as np
import pytest

from keras_bert import BertConfig, BertEncoder, TextClassifier
from keras_bert.checkpoints.model_dir import load_model_dir
from keras_bert.jobs.distill import forward_throughput
from keras_bert.tasks.batches import Batching, length_buckets
from keras_bert.tasks.task_model import TextTaskModel
from keras_bert.tasks.text_classification.distillation import (
    Distiller,
    distillation_loss,
    teacher_targets_stream,
)
from keras_bert.tasks.text_classification.network import BertClassifier
from tests.conftest import TINY_CONFIG_KWARGS
from tests.export.helpers import task_model
from tests.jobs.test_finetune import _classify_files, _run
from tests.support.callbacks import StepLosses
from tests.support.step_shapes import _texts

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def _numpy_loss(labels, student, teacher, t, alpha):
    """alpha * CE(labels, student) +
    (1 - alpha) * t^2 * KL(softmax(teacher/t) || softmax(student/t))."""
    def log_softmax(z):
        z = z - z.max(axis=-1, keepdims=True)
        return z - np.log(np.exp(z).sum(axis=-1, keepdims=True))

    hard = -log_softmax(student)[np.arange(len(labels)), labels].mean()
    p_teacher = np.exp(log_softmax(teacher / t))
    kl = (p_teacher * (log_softmax(teacher / t) - log_softmax(student / t))).sum(-1).mean()
    return alpha * hard + (1 - alpha) * t * t * kl


@pytest.mark.parametrize("temperature,alpha", [(1.0, 0.5), (2.0, 0.5), (4.0, 0.1), (3.0, 1.0),
                                               (2.0, 0.0)])
def test_distillation_loss_matches_numpy(rng, temperature, alpha):
    student = rng.normal(size=(6, 3)) * 3
    teacher = rng.normal(size=(6, 3)) * 3
    labels = rng.integers(0, 3, size=6)
    got = float(distillation_loss(labels, student.astype("float32"), teacher.astype("float32"),
                                  temperature, alpha))
    expected = _numpy_loss(labels, student, teacher, temperature, alpha)
    np.testing.assert_allclose(got, expected, rtol=1e-5)


def test_distillation_loss_is_zero_soft_term_when_student_equals_teacher(rng):
    logits = rng.normal(size=(4, 5)).astype("float32")
    labels = rng.integers(0, 5, size=4)
    only_soft = float(distillation_loss(labels, logits, logits, 2.0, 0.0))
    assert abs(only_soft) < 1e-6


def _inputs(rng, n=32, seq=10):
    ids = rng.integers(5, 101, size=(n, seq)).astype("int32")
    ids[:, 0] = 2
    return {"input_word_ids": ids, "input_mask": np.ones_like(ids),
            "input_type_ids": np.zeros_like(ids)}


def test_distiller_loss_uses_the_teacher_and_the_student_learns(rng):
    config = BertConfig(**TINY_CONFIG_KWARGS, hidden_dropout=0.0, attention_dropout=0.0)
    teacher = BertClassifier(BertEncoder(config), 3)
    student = BertClassifier(BertEncoder(config.replace(num_layers=1)), 3)
    x = _inputs(rng)
    y = rng.integers(0, 3, size=32)
    x["input_word_ids"][:, 1] = 5 + y  # a learnable rule for the hard labels
    distiller = Distiller(teacher, student, temperature=2.0, alpha=0.5)
    y_pred = distiller(x)
    np.testing.assert_allclose(np.asarray(y_pred), np.asarray(student(x)), atol=1e-6)
    expected = _numpy_loss(y, np.asarray(student(x), np.float64),
                           np.asarray(teacher(x), np.float64), 2.0, 0.5)
    np.testing.assert_allclose(float(distiller.compute_loss(x, y, y_pred)), expected,
                               rtol=1e-5)
    # The random teacher above knows nothing: train on a confident teacher's precomputed
    # logits (the rule's one-hot, scaled) so that soft and hard targets agree.
    targets = {"labels": y, "teacher_logits": (4.0 * np.eye(3)[y]).astype("float32")}
    teacher_weights = [w.copy() for w in teacher.get_weights()]
    distiller.compile(optimizer=keras.optimizers.Adam(3e-3), jit_compile=False)
    before = distiller.evaluate(x, targets, batch_size=32, verbose=0, return_dict=True)["loss"]
    history = distiller.fit(x, targets, batch_size=32, epochs=20, verbose=0, shuffle=False)
    after = distiller.evaluate(x, targets, batch_size=32, verbose=0, return_dict=True)["loss"]
    assert after < 0.8 * before
    assert "accuracy" in history.history
    for w, w0 in zip(teacher.get_weights(), teacher_weights, strict=True):
        np.testing.assert_array_equal(w, w0)  # the teacher is frozen
    assert forward_throughput(student, x, repeats=2) > 0


def test_the_students_batches_are_cut_to_their_length_with_the_teachers_logits(model_dir):
    """The independent reference: the teacher network on the full-length features of the
    same rows. Every batch is cut to the first length bucket that holds its longest row,
    one epoch holds every example once, and each example's teacher logits are the
    teacher's answer to it."""
    seq = 64
    reader = TextClassifier.from_pretrained(model_dir, labels=["long", "short"],
                                            seq_length=seq, precision="float32")
    texts, labels = _texts(40, seed=3)
    rows = reader._rows(texts, labels)
    buckets = length_buckets(seq)
    stream, count = teacher_targets_stream(reader, reader.network, rows, 8, seed=1,
                                           batching=Batching(length_buckets=buckets))
    features, _ = reader._examples(rows)
    full = np.asarray(reader.network.predict(features, verbose=0))
    index = {row.tobytes(): i for i, row in enumerate(features["input_word_ids"])}
    seen, widths = [], set()
    for x, y in stream.take(count // 8):
        ids = x["input_word_ids"].numpy()
        longest = int(x["input_mask"].numpy().sum(axis=1).max())
        assert ids.shape[1] == min(b for b in buckets if b >= longest)
        widths.add(ids.shape[1])
        padded = np.pad(ids, ((0, 0), (0, seq - ids.shape[1])))
        rows_in = [index[row.tobytes()] for row in padded]  # equal texts: equal logits
        np.testing.assert_allclose(y["teacher_logits"].numpy(), full[rows_in], atol=1e-5)
        seen += [row.tobytes() for row in padded]
    everything = [row.tobytes() for row in features["input_word_ids"]]
    assert sorted(seen) == sorted(everything) and count == len(rows)
    assert len(widths) > 1 and max(widths) <= seq


def _teacher(model_dir, tmp_path):
    """A classify model directory (seq 24) on the tiny BERT: the teacher."""
    source = load_model_dir(model_dir)
    teacher_dir = tmp_path / "teacher"
    task_model({"kind": "classify", "seq_length": 24, "text_column": "text",
                "pooling": "pooled"}, source.load_encoder(), source.preprocessor(),
               ["other", "whale"]).save(str(teacher_dir))
    return teacher_dir


@pytest.mark.slow
def test_distill_cli_compares_teacher_and_student(model_dir, tmp_path, rng,  # noqa: F811
                                                  capsys):
    train, evaluation = _classify_files(tmp_path, rng)
    teacher_dir = _teacher(model_dir, tmp_path)
    out = tmp_path / "distilled"
    code, stdout, err = _run(["distill", "--teacher", str(teacher_dir), "--student-preset",
                              "tiny", "--train", train, "--eval", evaluation, "--out", str(out),
                              "--epochs", "1", "--batch-size", "16", "--quiet"], capsys)
    assert code == 0, err
    metrics = json.loads((out / "metrics.json").read_text())
    for name in ("teacher", "student"):
        assert metrics[name]["sequences_per_second"] > 0
    assert metrics["speed_batch"] == [32, 24]  # 32 sequences (all of eval), the teacher seq_length
    assert metrics["temperature"] == 2.0 and metrics["alpha"] == 0.5
    assert metrics["speedup"] == pytest.approx(metrics["student"]["sequences_per_second"]
                                               / metrics["teacher"]["sequences_per_second"])
    assert "seq/s" in stdout and "student" in stdout
    student = TextTaskModel.load(str(out / "model"))
    assert student.kind == "classify" and student.labels.names == ["other", "whale"]
    assert student.network.encoder.config.hidden_size == 128  # BERT-Tiny
    assert metrics["student"]["parameters"] == student.network.count_params()
    # the reported accuracies are those of the saved student and of the teacher on the eval
    # file, as `keras-bert predict` sees them
    with open(evaluation, encoding="utf-8") as f:
        gold = [row.split(",")[1] for row in f.read().splitlines()[1:]]
    for name, directory in (("student", out / "model"), ("teacher", teacher_dir)):
        code, stdout, err = _run(["predict", str(directory), "--input", evaluation], capsys)
        assert code == 0, err
        labels = [json.loads(line)["label"] for line in stdout.splitlines()]
        assert metrics[name]["accuracy"] == pytest.approx(
            np.mean([p == g for p, g in zip(labels, gold, strict=True)]))


def test_distillation_steps_compile_with_xla(rng):
    """The distiller's step (teacher forward, student forward and update) XLA-compiled
    computes what the eager step computes: the same losses over 4 steps from the same
    weights, within 1e-5 relative (GPUs and TPUs compile it by default:
    `keras_bert.training.backends.XLA_BY_DEVICE`). Eager, not the graph step: 4 eager steps
    cost less than tracing one (the graph step is test_distiller_loss_uses_the_teacher_...)."""
    config = BertConfig(**TINY_CONFIG_KWARGS, hidden_dropout=0.0, attention_dropout=0.0)
    x = _inputs(rng)
    y = rng.integers(0, 3, size=32)
    weights, losses = None, {}
    for jit in (False, True):
        distiller = Distiller(BertClassifier(BertEncoder(config), 3),
                              BertClassifier(BertEncoder(config.replace(num_layers=1)), 3))
        if weights is None:
            weights = distiller.get_weights()
        distiller.set_weights(weights)
        distiller.compile(optimizer=keras.optimizers.Adam(3e-3), jit_compile=jit,
                          run_eagerly=not jit)
        steps = StepLosses()
        distiller.fit(x, y, batch_size=8, epochs=1, verbose=0, shuffle=False, callbacks=[steps])
        assert distiller.jit_compile is jit
        losses[jit] = np.array(steps.losses)
    assert losses[True].shape == (4,) and not np.allclose(losses[False], losses[False][0])
    np.testing.assert_allclose(losses[True], losses[False], rtol=1e-5)


@pytest.mark.slow
@pytest.mark.needs_jax
def test_distill_runs_on_jax(model_dir, tmp_path, rng):
    """`keras-bert distill` under Keras' JAX backend trains, measures and saves a student
    that TensorFlow loads."""
    train, evaluation = _classify_files(tmp_path, rng)
    teacher_dir, out = _teacher(model_dir, tmp_path), tmp_path / "distilled"
    env = dict(os.environ, KERAS_BACKEND="jax", TF_CPP_MIN_LOG_LEVEL="3", PYTHONPATH=ROOT)
    done = subprocess.run(
        [sys.executable, "-m", "keras_bert.cli", "distill", "--teacher", str(teacher_dir),
         "--train", train, "--eval", evaluation, "--out", str(out), "--epochs", "1",
         "--batch-size", "16", "--quiet"], cwd=ROOT, env=env, capture_output=True, text=True,
        timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    metrics = json.loads((out / "metrics.json").read_text())
    assert all(metrics[name]["sequences_per_second"] > 0 for name in ("teacher", "student"))
    student = TextTaskModel.load(str(out / "model"))
    assert student.predict(["a whale"])["probabilities"].shape == (1, 2)
