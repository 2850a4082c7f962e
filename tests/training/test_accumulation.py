"""Gradient accumulation: K micro-batches of B make the update of one batch of K * B, with
AdamW and LAMB, clipping on the accumulated gradient, one schedule step per update, loss
scaling (mixed_float16) and MirroredStrategy."""

from __future__ import annotations

import os
import subprocess
import sys

import keras
import numpy as np
import pytest
import tensorflow as tf

from keras_bert.models import BertPretrainer
from keras_bert.training import create_optimizer

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
K, B, SEQ, PRED = 4, 3, 12, 3


def batches(config, count: int, size: int = K * B, seed: int = 0) -> list[dict]:
    """`count` batches of `size` examples, every prediction real (weight 1): each
    micro-batch then holds equally many predictions, so the mean of the micro-batches' MLM
    losses is the large batch's."""
    rng = np.random.default_rng(seed)
    out = []
    for _ in range(count):
        ids = rng.integers(5, config.vocab_size, (size, SEQ)).astype(np.int32)
        out.append({
            "input_word_ids": ids, "input_mask": np.ones_like(ids),
            "input_type_ids": (np.arange(SEQ) >= SEQ // 2).astype(np.int32)[None].repeat(size, 0),
            "masked_lm_positions": rng.integers(1, SEQ, (size, PRED)).astype(np.int32),
            "masked_lm_ids": rng.integers(5, config.vocab_size, (size, PRED)).astype(np.int32),
            "masked_lm_weights": np.ones((size, PRED), np.float32),
            "next_sentence_labels": rng.integers(0, 2, size).astype(np.int32)})
    return out


def _dataset(items):
    return tf.data.Dataset.from_tensor_slices(
        {k: np.stack([b[k] for b in items]) for k in items[0]})


def _model(config, optimizer: str, accumulation_steps: int, dtype=None) -> BertPretrainer:
    keras.utils.set_random_seed(7)  # the same initial weights every time
    model = BertPretrainer.from_bert_config(config, dtype=dtype)
    model.compile(optimizer=create_optimizer(5e-3, total_steps=10, warmup_steps=0,
                                             optimizer=optimizer),
                  accumulation_steps=accumulation_steps)
    return model


def _train(config, items, optimizer: str, accumulation_steps: int, dtype=None):
    model = _model(config, optimizer, accumulation_steps, dtype)
    history = model.fit(_dataset(items), epochs=1, verbose=0)
    return model, history.history


def _global_norm(model, batch) -> float:
    with tf.GradientTape() as tape:
        loss = model.compute_loss(x=batch, y_pred=model(batch, training=True))
    grads = tape.gradient(loss, model.trainable_variables)
    return float(tf.linalg.global_norm([tf.convert_to_tensor(g) for g in grads]))


# LAMB's accumulation also runs through both pretraining phases
# (tests/pretraining/test_phases.py).
@pytest.mark.slow
@pytest.mark.parametrize("optimizer", ["adamw", "lamb"])
def test_k_micro_batches_equal_one_batch_of_k_times_b(tiny_config_no_dropout, optimizer):
    items = batches(tiny_config_no_dropout, count=2)
    big, big_logs = _train(tiny_config_no_dropout, items, optimizer, 1)
    small, small_logs = _train(tiny_config_no_dropout, items, optimizer, K)
    # One fit step per K micro-batches: the optimizer (and its schedule) counted 2 updates.
    assert int(small.optimizer.iterations.numpy()) == int(big.optimizer.iterations.numpy()) == 2
    assert float(small.optimizer.learning_rate) == pytest.approx(5e-3 * 0.8)
    for a, b in zip(big.trainable_variables, small.trainable_variables, strict=True):
        np.testing.assert_allclose(b.numpy(), a.numpy(), rtol=2e-5, atol=2e-6, err_msg=a.path)
    for key in ("loss", "mlm_loss", "nsp_accuracy"):
        assert small_logs[key][0] == pytest.approx(big_logs[key][0], rel=1e-5), key
    # Clipping (at 1.0) was active, so clipping each micro-batch would have differed.
    assert _global_norm(_model(tiny_config_no_dropout, optimizer, 1), items[0]) > 1.0


@pytest.mark.slow  # over 30 s in CI's durations log docs/runs/ci-durations-2026-11-26-8c1e29d.md
def test_mixed_float16_scales_and_skips_the_whole_update(tiny_config_no_dropout):
    items = batches(tiny_config_no_dropout, count=1)
    big, _ = _train(tiny_config_no_dropout, items, "adamw", 1, dtype="mixed_float16")
    small, _ = _train(tiny_config_no_dropout, items, "adamw", K, dtype="mixed_float16")
    assert type(small.optimizer).__name__ == "LossScaleOptimizer"
    assert int(small.optimizer.step_counter.numpy()) == 1  # one update, not K
    initial = _model(tiny_config_no_dropout, "adamw", 1, dtype="mixed_float16")
    for a, b, w in zip(big.trainable_variables, small.trainable_variables,
                       initial.trainable_variables, strict=True):
        # float16 rounding flips the sign of Adam's first step on a few near-zero gradient
        # elements, so the updates are compared as wholes.
        big_update, small_update = a.numpy() - w.numpy(), b.numpy() - w.numpy()
        assert np.linalg.norm(small_update - big_update) <= \
            0.02 * np.linalg.norm(big_update) + 1e-7, a.path
    # A loss scale that overflows float16: the accumulated gradient is not finite, the
    # update is skipped as a whole (weights, iterations) and the scale halved once.
    model = _model(tiny_config_no_dropout, "adamw", K, dtype="mixed_float16")
    model.optimizer.build(model.trainable_variables)
    model.optimizer.dynamic_scale.assign(2.0 ** 100)
    before = [v.numpy() for v in model.trainable_variables]
    model.fit(_dataset(items), epochs=1, verbose=0)
    assert int(model.optimizer.iterations.numpy()) == 0
    assert float(model.optimizer.dynamic_scale.numpy()) == 2.0 ** 99
    for a, v in zip(before, model.trainable_variables, strict=True):
        np.testing.assert_array_equal(a, v.numpy())


def test_batch_must_split_into_micro_batches(tiny_config_no_dropout):
    model = BertPretrainer.from_bert_config(tiny_config_no_dropout)
    model.compile(optimizer=create_optimizer(1e-3, 10), accumulation_steps=K)
    items = batches(tiny_config_no_dropout, count=1, size=K * B + 1)
    with pytest.raises(ValueError, match="micro-batches"):
        model.fit(_dataset(items), epochs=1, verbose=0)
    with pytest.raises(ValueError, match="accumulation_steps"):
        model.compile(optimizer="adam", accumulation_steps=0)


@pytest.mark.slow
def test_mirrored_strategy_accumulates_per_replica():
    """Two logical CPUs, each splitting its half of the batch into K micro-batches, end
    where one device does on the whole batch without accumulation (a subprocess: logical
    devices must be set before TensorFlow starts)."""
    env = dict(os.environ, PYTHONPATH=ROOT, TF_CPP_MIN_LOG_LEVEL="3")
    env.pop("TF_CONFIG", None)
    run = subprocess.run([sys.executable, "-m", "tests.training.accumulation_job"], cwd=ROOT,
                         env=env, capture_output=True, text=True, timeout=600)
    assert run.returncode == 0, (run.stdout + run.stderr)[-3000:]
    assert "replicas 2, same weights" in run.stdout, run.stdout[-2000:]
