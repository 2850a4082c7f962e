"""BERT's optimizer: the schedule's shape, decoupled weight decay and its exclusions."""

import keras
import numpy as np
import pytest
import tensorflow as tf

from keras_bert import BertConfig, BertEncoder
from keras_bert.training import WarmupPolynomialDecay, create_optimizer
from keras_bert.training.optimizer import build_optimizer


def test_schedule_warmup_then_linear_decay():
    schedule = WarmupPolynomialDecay(1e-3, decay_steps=100, warmup_steps=10)
    values = [float(schedule(s)) for s in (0, 5, 10, 55, 100, 150)]
    expected = [0.0, 5e-4, 1e-3 * 0.9, 1e-3 * 0.45, 0.0, 0.0]  # decay counts from step 0
    np.testing.assert_allclose(values, expected, rtol=1e-6, atol=1e-9)
    restored = WarmupPolynomialDecay.from_config(schedule.get_config())
    assert float(restored(37)) == pytest.approx(float(schedule(37)))
    with pytest.raises(ValueError, match="warmup_steps"):
        WarmupPolynomialDecay(1e-3, decay_steps=10, warmup_steps=11)


def test_weight_decay_spares_layer_norm_and_biases():
    """With zero gradients Adam's update is zero, so what changes is the decay alone."""
    config = BertConfig(vocab_size=30, hidden_size=8, num_layers=1, num_heads=2,
                        intermediate_size=16, max_position_embeddings=16)
    encoder = BertEncoder(config)
    for v in encoder.trainable_variables:
        v.assign(np.full(v.shape, 0.5, np.float32))
    optimizer = create_optimizer(learning_rate=0.1, total_steps=10, warmup_steps=0,
                                 weight_decay=0.01)
    optimizer.apply_gradients([(keras.ops.zeros(v.shape), v)
                               for v in encoder.trainable_variables])
    decayed, kept = [], []
    for v in encoder.trainable_variables:
        value = float(np.unique(v.numpy())[0])
        (kept if v.name in ("gamma", "beta", "bias") else decayed).append((v.path, value))
    assert kept and decayed
    assert all(value == 0.5 for _, value in kept), kept
    # lr at step 0 = 0.1 (no warmup), decay = lr * wd * value.
    assert all(value == pytest.approx(0.5 * (1 - 0.1 * 0.01)) for _, value in decayed), decayed
    names = {p.rsplit("/", 1)[1] for p, _ in decayed}
    assert names == {"kernel", "embeddings"}


def test_gradients_are_clipped_at_global_norm_one():
    v = keras.Variable(np.zeros(4, np.float32))
    optimizer = create_optimizer(learning_rate=1.0, total_steps=10, warmup_steps=0,
                                 weight_decay=0.0)
    assert optimizer.global_clipnorm == 1.0
    big = keras.ops.convert_to_tensor(np.array([30.0, 40.0, 0.0, 0.0], np.float32))
    clipped = optimizer._clip_gradients([big])[0]
    np.testing.assert_allclose(np.asarray(clipped), [0.6, 0.8, 0, 0], rtol=1e-6)
    optimizer.apply_gradients([(big, v)])


def test_schedule_start_step_shifts_it():
    """A second phase's schedule starts at the optimizer step the first phase ended on."""
    plain = WarmupPolynomialDecay(1e-3, decay_steps=100, warmup_steps=10)
    shifted = WarmupPolynomialDecay(1e-3, decay_steps=100, warmup_steps=10, start_step=700)
    for step in (0, 5, 10, 55, 100, 150):
        assert float(shifted(700 + step)) == pytest.approx(float(plain(step)), abs=1e-12)
    assert float(shifted(3)) == 0.0  # before its start: the start
    assert WarmupPolynomialDecay.from_config(shifted.get_config()).start_step == 700


@pytest.mark.parametrize("clip", [1.0, None])
@pytest.mark.parametrize("kind", ["adamw", "lamb"])
def test_lookup_gradients_with_repeated_rows_count_as_their_sum(kind, clip):
    """An embedding lookup's IndexedSlices gradient repeats rows; the update (the clipping
    norm, and Adam's second moment) must be that of its dense sum. Keras' own AdamW squares
    the slices one by one (keras_bert/training/dense_gradients.py)."""
    slices = np.array([[3.0, 0.0], [1.0, 2.0], [3.0, 0.0], [0.5, 0.5]], np.float32)
    indices = np.array([0, 1, 0, 2])
    dense = np.zeros((4, 2), np.float32)
    np.add.at(dense, indices, slices)
    results = []
    for gradient in (tf.IndexedSlices(tf.constant(slices), tf.constant(indices),
                                      tf.constant([4, 2])), tf.constant(dense)):
        v = keras.Variable(np.full((4, 2), 0.5, np.float32), name="embeddings")
        optimizer = create_optimizer(0.1, total_steps=10, warmup_steps=0, optimizer=kind,
                                     clip_global_norm=clip)
        for _ in range(2):
            optimizer.apply_gradients([(gradient, v)])
        results.append(v.numpy())
    np.testing.assert_allclose(results[0], results[1], rtol=1e-6)
    if kind == "adamw":  # Adam moves each weight by at most lr a step
        assert np.all(np.abs(results[0] - 0.5) <= 2 * 0.1 * (1 + 1e-6))


class StepTraceCounter(keras.Sequential):
    """Counts the traces of its training step (Python runs only while tracing)."""

    traces = 0

    def train_step(self, data):
        self.traces += 1
        return super().train_step(data)


@pytest.mark.parametrize("built_first", [False, True])
def test_build_optimizer_before_fit_traces_the_step_once(built_first):
    model = StepTraceCounter([keras.Input((4,)), keras.layers.Dense(2)])
    model.compile(optimizer=create_optimizer(1e-3, 10, 1), loss="mse")
    if built_first:
        build_optimizer(model)
        assert model.optimizer.built
    model.fit(np.ones((8, 4)), np.ones((8, 2)), batch_size=4, epochs=2, verbose=0)
    # Keras alone creates the optimizer's variables in the first trace, then traces again.
    assert model.traces == (1 if built_first else 2)
