"""LAMB against a NumPy transcription of the paper's Algorithm 2, and its exclusions by name."""

import keras
import numpy as np
import pytest
import tensorflow as tf

from keras_bert import BertConfig
from keras_bert.models import BertPretrainer
from keras_bert.training import Lamb, WarmupPolynomialDecay, create_optimizer

LR, WD, STEPS = 0.05, 0.1, 6
BETA_1, BETA_2, EPS = 0.9, 0.999, 1e-6
EXCLUDED = ("gamma", "beta", "bias")


def _reference(weights: dict, gradients: list[dict], schedule) -> dict:
    """You et al. 2019, Algorithm 2 (LAMB), float64, after clipping the gradients at global
    norm 1 (as `create_optimizer` does): decay and trust ratio for every variable but the
    excluded ones, phi = identity, ratio 1 where ||w|| or ||r + lambda w|| is 0."""
    w = {k: v.astype(np.float64) for k, v in weights.items()}
    m = {k: np.zeros_like(v) for k, v in w.items()}
    v = {k: np.zeros_like(x) for k, x in w.items()}
    for t, grads in enumerate(gradients, start=1):
        norm = np.sqrt(sum(np.sum(g.astype(np.float64) ** 2) for g in grads.values()))
        scale = 1.0 / max(norm, 1.0)
        lr = float(schedule(t - 1))
        for name in w:
            g = grads[name].astype(np.float64) * scale
            m[name] = BETA_1 * m[name] + (1 - BETA_1) * g
            v[name] = BETA_2 * v[name] + (1 - BETA_2) * g * g
            r = (m[name] / (1 - BETA_1 ** t)) / (np.sqrt(v[name] / (1 - BETA_2 ** t)) + EPS)
            excluded = any(e in name for e in EXCLUDED)
            if excluded:
                w[name] = w[name] - lr * r
                continue
            u = r + WD * w[name]
            w_norm, u_norm = np.linalg.norm(w[name]), np.linalg.norm(u)
            ratio = w_norm / u_norm if w_norm > 0 and u_norm > 0 else 1.0
            w[name] = w[name] - lr * ratio * u
    return w


def _as_lookup_gradient(dense: np.ndarray) -> tf.IndexedSlices:
    """`dense` as an IndexedSlices with every row split over 3 slices (indices repeated)."""
    parts = [dense * 0.5, dense * 0.25, dense * 0.25]
    rows = np.arange(len(dense))
    return tf.IndexedSlices(tf.constant(np.concatenate(parts)),
                            tf.constant(np.concatenate([rows] * 3)), tf.constant(dense.shape))


def test_lamb_matches_the_papers_algorithm(rng):
    shapes = {"dense/kernel": (4, 3), "dense/bias": (3,), "layer_norm/gamma": (3,),
              "layer_norm/beta": (3,), "word/embeddings": (6, 3), "zero/kernel": (2, 2)}
    weights = {name: rng.normal(0, 1, shape).astype(np.float32) for name, shape in shapes.items()}
    weights["layer_norm/gamma"] += 1.0
    weights["zero/kernel"][:] = 0.0  # ||w|| = 0: trust ratio 1
    variables = {name: keras.Variable(value, name=name.split("/")[1])
                 for name, value in weights.items()}
    gradients = [{name: rng.normal(0, 0.6, shape).astype(np.float32)
                  for name, shape in shapes.items()} for _ in range(STEPS)]
    optimizer = create_optimizer(LR, total_steps=10, warmup_steps=2, weight_decay=WD,
                                 optimizer="lamb")
    assert isinstance(optimizer, Lamb) and optimizer.global_clipnorm == 1.0
    for grads in gradients:
        given = dict(grads)  # the embeddings' as a lookup gives it: rows repeated
        given["word/embeddings"] = _as_lookup_gradient(grads["word/embeddings"])
        optimizer.apply_gradients([(given[name], variables[name]) for name in shapes])
    want = _reference(weights, gradients, WarmupPolynomialDecay(LR, 10, 2))
    assert int(optimizer.iterations.numpy()) == STEPS
    for name in shapes:
        np.testing.assert_allclose(variables[name].numpy(), want[name], rtol=1e-6, atol=1e-7,
                                   err_msg=name)
        assert not np.allclose(variables[name].numpy(), weights[name]), name  # it moved


def test_create_optimizer_lamb_excludes_layer_norm_and_biases_by_name():
    """With a constant gradient c > 0 the first step's Adam direction is r = c / (c + eps) in
    every element; a variable filled with one value w then moves by lr * r when excluded and
    by lr * w (the trust ratio ||w|| / ||r + wd w|| times r + wd w) when not."""
    config = BertConfig(vocab_size=30, hidden_size=8, num_layers=1, num_heads=2,
                        intermediate_size=16, max_position_embeddings=16)
    pretrainer = BertPretrainer.from_bert_config(config)
    variables = pretrainer.trainable_variables
    for v in variables:
        v.assign(np.full(v.shape, 0.5, np.float32))
    lr, c = 0.1, 1e-3
    optimizer = create_optimizer(lr, total_steps=10, warmup_steps=0, optimizer="lamb",
                                 clip_global_norm=None)
    optimizer.apply_gradients([(keras.ops.full(v.shape, c), v) for v in variables])
    r = c / (c + EPS)
    moved = {"excluded": set(), "adapted": set()}
    for v in variables:
        value = float(np.unique(v.numpy())[0])
        if value == pytest.approx(0.5 - lr * r, rel=1e-6):
            moved["excluded"].add(v.name)
        elif value == pytest.approx(0.5 - lr * 0.5, rel=1e-6):
            moved["adapted"].add(v.name)
        else:
            raise AssertionError(f"{v.path}: {value}")
    assert moved == {"excluded": {"gamma", "beta", "bias", "output_bias"},
                     "adapted": {"kernel", "embeddings"}}


def test_layer_adaptation_exclusions_can_differ_from_decay_exclusions():
    w = keras.Variable(np.full((2, 2), 0.5, np.float32), name="kernel")
    optimizer = Lamb(0.1, weight_decay=0.0)
    optimizer.exclude_from_layer_adaptation(var_names=["kernel"])
    optimizer.apply_gradients([(keras.ops.full((2, 2), 1.0), w)])
    np.testing.assert_allclose(w.numpy(), 0.5 - 0.1 / (1 + EPS), rtol=1e-6)  # no ratio
    with pytest.raises(ValueError, match="before"):
        optimizer.exclude_from_layer_adaptation(var_names=["bias"])
    restored = Lamb.from_config(optimizer.get_config())
    assert (restored.beta_1, restored.epsilon, restored.weight_decay) == (0.9, 1e-6, 0.0)


def test_unknown_optimizer_is_refused():
    with pytest.raises(ValueError, match="adamw"):
        create_optimizer(optimizer="sgd")
