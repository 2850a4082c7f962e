"""`BertSelfAttention` on Keras' JAX backend: the fused path (`jax.nn.dot_product_attention`
with the padding as key lengths; XLA's implementation on a CPU) against the layer's own
attention, on one batch of right-padded rows (lengths 1, 3, 5, full and 0: a row of padding
only) and one whose mask is not right padding. Prints one JSON line:

    KERAS_BACKEND=jax python -m tests.layers.fused_attention_job

`fused_vs_own`: the largest difference of the outputs (and of their gradients with respect
to the inputs, at the real positions); `padding_weight`: the largest change of a real
position's output when the padded positions' inputs change; `route`: which batches took
the fused path, seen by marking its output (x 1.5).
"""

from __future__ import annotations

import json

import jax
import jax.numpy as jnp
import keras
import numpy as np

from keras_bert.layers import BertSelfAttention, fused_attention

SEQ, HIDDEN, HEADS = 8, 32, 4
LENGTHS = [1, 3, 5, SEQ, 0]


def masks() -> dict[str, np.ndarray]:
    right = (np.arange(SEQ)[None, :] < np.asarray(LENGTHS)[:, None]).astype("int32")
    holes = right.copy()
    holes[3, 2] = 0  # a full row with a hole: not right padding
    return {"right_padded": right, "not_right_padded": holes}


def main() -> None:
    assert keras.backend.backend() == "jax"
    layer = BertSelfAttention(HIDDEN, HEADS, dropout=0.1, dtype="float32")
    x = np.random.default_rng(0).normal(size=(len(LENGTHS), SEQ, HIDDEN)).astype("float32")
    layer(x)
    # Seeded weights drawn by NumPy (the layer's initializer range), not by
    # `keras.utils.set_random_seed`, which imports TensorFlow to seed it too: most of a
    # second process' start on a CPU, and nothing here runs on TensorFlow.
    weights = np.random.default_rng(2)
    layer.set_weights([weights.normal(scale=0.02, size=w.shape).astype("float32")
                       for w in layer.weights])

    def own(x, mask):  # the layer's own attention, forced (probabilities asked for)
        return layer(x, padding_mask=mask, return_attention_scores=True)[0]

    def fused(x, mask):
        assert fused_attention.applies(mask, False, layer.dropout_rate, False)
        return layer(x, padding_mask=mask)

    result = {"fused_vs_own": {}, "gradient_vs_own": {}, "padding_weight": {}, "route": {}}
    for name, mask in masks().items():
        real = mask[:, :, None].astype("float32")
        a, b = np.asarray(jax.jit(fused)(x, mask)), np.asarray(jax.jit(own)(x, mask))
        result["fused_vs_own"][name] = float(np.max(np.abs(a - b)))

        def loss(x, attend, mask=mask, real=real):
            return jnp.sum(attend(x, mask) * real * jnp.arange(1, HIDDEN + 1))

        # Each gradient as one compiled program: op by op, JAX compiles ~60 small ones.
        grads = [np.asarray(jax.jit(jax.grad(loss), static_argnums=1)(x, f)) * real
                 for f in (fused, own)]
        result["gradient_vs_own"][name] = float(np.max(np.abs(grads[0] - grads[1])))
        noise = np.random.default_rng(1).normal(size=x.shape).astype("float32")
        moved = np.asarray(jax.jit(fused)(x + noise * (1 - real), mask))
        result["padding_weight"][name] = float(np.max(np.abs((moved - a) * real)))
    real_attention = jax.nn.dot_product_attention
    jax.nn.dot_product_attention = lambda *args, **kw: 1.5 * real_attention(*args, **kw)
    try:
        for name, mask in masks().items():
            # A new function: jit's cache holds the traces made before the patch.
            marked = np.asarray(jax.jit(lambda x, mask: fused(x, mask))(x, mask))
            own_out = np.asarray(jax.jit(own)(x, mask))
            result["route"][name] = "fused" if not np.allclose(marked, own_out, atol=1e-3) \
                else "own"
    finally:
        jax.nn.dot_product_attention = real_attention
    result["training_with_dropout_fuses"] = fused_attention.applies(
        masks()["right_padded"], True, layer.dropout_rate, False)
    result["implementation"] = fused_attention.implementation("float32")
    print(json.dumps(result))


if __name__ == "__main__":
    main()
