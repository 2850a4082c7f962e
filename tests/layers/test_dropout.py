"""`BertDropout`'s 16-bit mask against what dropout must be: each element dropped
independently with the layer's rate, the kept ones scaled to keep the expectation, the mask
a function of the seed, nothing dropped outside training."""

from __future__ import annotations

import keras
import numpy as np
import pytest
import tensorflow as tf

from keras_bert.layers import BertDropout
from keras_bert.layers.dropout import LEVELS, drop_threshold

ELEMENTS = 1 << 20  # 4-sigma band of a dropped share: about +-0.0012 at rate 0.1


def mask_of(layer, shape=(ELEMENTS,), dtype="float32"):
    out = layer(keras.ops.ones(shape, dtype=dtype), training=True)
    return keras.ops.convert_to_numpy(keras.ops.cast(out, "float32"))


@pytest.mark.parametrize("rate", [0.1, 0.5, 0.01])
def test_elements_are_dropped_independently_at_the_layers_rate(rate):
    out = mask_of(BertDropout(rate, seed=3)).reshape(-1)
    dropped = out == 0
    p = drop_threshold(rate) / LEVELS
    assert abs(p - rate) <= 0.5 / LEVELS
    sigma = np.sqrt(p * (1 - p) / dropped.size)
    assert abs(dropped.mean() - p) < 4 * sigma
    # The two halves of one 32-bit draw, and neighbours across draws, are independent: the
    # share of pairs dropped together is p^2 (a shared draw would make it p).
    for first, second in ((dropped[0::2], dropped[1::2]), (dropped[1:-1:2], dropped[2::2])):
        both = np.mean(first & second)
        assert abs(both - p * p) < 4 * np.sqrt(p * p * (1 - p * p) / first.size)


def test_kept_elements_are_scaled_to_keep_the_expectation():
    layer = BertDropout(0.1, seed=5)
    out = mask_of(layer)
    kept = out[out != 0]
    threshold = drop_threshold(0.1)
    np.testing.assert_allclose(kept, LEVELS / (LEVELS - threshold), rtol=1e-6)
    x = np.random.default_rng(0).normal(size=(256, 384)).astype("float32")
    y = keras.ops.convert_to_numpy(layer(x, training=True))
    kept = y != 0
    np.testing.assert_allclose(y[kept], x[kept] * LEVELS / (LEVELS - threshold), rtol=1e-6)


def test_the_mask_is_a_function_of_the_seed_and_moves_on_each_call():
    first, second = BertDropout(0.1, seed=11), BertDropout(0.1, seed=11)
    a1, a2 = mask_of(first, (4096,)), mask_of(first, (4096,))
    b1, b2 = mask_of(second, (4096,)), mask_of(second, (4096,))
    np.testing.assert_array_equal(a1, b1)
    np.testing.assert_array_equal(a2, b2)
    assert not np.array_equal(a1, a2)
    assert not np.array_equal(a1, mask_of(BertDropout(0.1, seed=12), (4096,)))


def test_gradient_is_the_mask_and_xla_bfloat16_and_odd_sizes_run():
    layer = BertDropout(0.1, seed=2)
    x = tf.ones([7, 3, 5])  # 105 elements: an odd count, half a draw unused
    with tf.GradientTape() as tape:
        tape.watch(x)
        y = layer(x, training=True)
        total = tf.reduce_sum(y)
    grad = tape.gradient(total, x)
    np.testing.assert_allclose(grad.numpy(), y.numpy())

    @tf.function(jit_compile=True)
    def compiled(inputs):
        return layer(inputs, training=True)

    out = compiled(tf.ones([33, 9], tf.bfloat16)).numpy().astype("float32")
    assert out.shape == (33, 9) and 0 < np.mean(out == 0) < 0.5


def test_outside_training_and_at_the_edges_it_is_keras_dropout():
    x = np.ones((64, 8), "float32")
    np.testing.assert_array_equal(BertDropout(0.1)(x, training=False), x)
    np.testing.assert_array_equal(BertDropout(0.0)(x, training=True), x)
    np.testing.assert_array_equal(BertDropout(1.0)(x, training=True), np.zeros_like(x))
    shaped = BertDropout(0.5, noise_shape=(64, 1), seed=1)(x, training=True)
    assert np.all(np.ptp(keras.ops.convert_to_numpy(shaped), axis=1) == 0)  # Keras' own path


def test_it_is_a_keras_dropout_with_the_same_config_and_state():
    layer = BertDropout(0.1, seed=4)
    stock = keras.layers.Dropout(0.1, seed=4)
    assert isinstance(layer, keras.layers.Dropout)
    assert ({k: v for k, v in layer.get_config().items() if k != "name"}
            == {k: v for k, v in stock.get_config().items() if k != "name"})
    assert [w.shape for w in layer.weights] == [w.shape for w in stock.weights]
    restored = keras.layers.deserialize(keras.layers.serialize(layer))
    assert type(restored) is BertDropout and restored.rate == 0.1
