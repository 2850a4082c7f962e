"""BERT's AdamW updates each variable with TensorFlow's fused Adam kernel, and ends where
Keras' own AdamW (the reference: its `keras.ops` update) ends."""

import keras
import numpy as np
import pytest
import tensorflow as tf

from keras_bert import BertConfig, BertEncoder
from keras_bert.training import WarmupPolynomialDecay, create_optimizer

CONFIG = BertConfig(vocab_size=40, hidden_size=16, num_layers=2, num_heads=2,
                    intermediate_size=32, max_position_embeddings=16)


def _encoder(seed: int = 0):
    encoder = BertEncoder(CONFIG)
    rng = np.random.default_rng(seed)
    for v in encoder.trainable_variables:
        v.assign(rng.normal(0, 0.1, v.shape).astype("float32"))
    return encoder


def _gradients(encoder, steps: int):
    """Per step, one gradient per variable; their global norm is above 1 in some steps, so
    that the clipping acts."""
    rng = np.random.default_rng(1)
    return [[rng.normal(0, 0.5 * (1 + s), v.shape).astype("float32")
             for v in encoder.trainable_variables] for s in range(steps)]


def _keras_adamw(**settings):
    """Keras' AdamW with the settings `create_optimizer` gives ours."""
    reference = keras.optimizers.AdamW(**settings)
    reference.exclude_from_weight_decay(var_names=["gamma", "beta", "bias"])
    return reference


def test_fused_update_ends_where_keras_adamw_ends():
    ours_encoder, keras_encoder = _encoder(), _encoder()
    schedule = dict(learning_rate=1e-2, total_steps=20, warmup_steps=2, weight_decay=0.01)
    ours = create_optimizer(**schedule)
    reference = _keras_adamw(learning_rate=WarmupPolynomialDecay(1e-2, 20, 2), weight_decay=0.01,
                             beta_1=0.9, beta_2=0.999, epsilon=1e-6, global_clipnorm=1.0)
    for grads in _gradients(ours_encoder, steps=6):
        ours.apply([tf.constant(g) for g in grads], ours_encoder.trainable_variables)
        reference.apply([tf.constant(g) for g in grads], keras_encoder.trainable_variables)
    # The kernel computes 1 - beta_2 in float32 (0.999 is 0.99900001 there), Keras from the
    # Python float: the second moments differ by 1.3e-5 relative, each update by half that,
    # so six steps of at most the learning rate (1e-2) part the weights by under 1e-6.
    for a, b in zip(ours_encoder.trainable_variables, keras_encoder.trainable_variables,
                    strict=True):
        np.testing.assert_allclose(a.numpy(), b.numpy(), rtol=0, atol=1e-6, err_msg=a.path)
    for a, b in zip(ours.variables, reference.variables, strict=True):
        np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=2e-5, atol=1e-9,
                                   err_msg=a.path)
    assert int(ours.iterations) == 6


@pytest.mark.parametrize("amsgrad", [False, True])
def test_the_step_runs_the_fused_kernel_unless_amsgrad(amsgrad):
    encoder = _encoder()
    optimizer = create_optimizer(learning_rate=1e-3, total_steps=10)
    optimizer.amsgrad = amsgrad
    optimizer.build(encoder.trainable_variables)
    grads = [tf.constant(g) for g in _gradients(encoder, steps=1)[0]]
    step = tf.function(lambda: optimizer.apply(grads, encoder.trainable_variables))
    graph = step.get_concrete_function().graph
    kernels = [op for op in graph.get_operations() if op.type == "ResourceApplyAdam"]
    assert len(kernels) == (0 if amsgrad else len(encoder.trainable_variables))
