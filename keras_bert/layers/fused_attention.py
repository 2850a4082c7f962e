"""Attention through JAX's fused kernel, on Keras' JAX backend.

`jax.nn.dot_product_attention` runs cuDNN's fused (flash) attention on NVIDIA GPUs in
bfloat16 and float16, and XLA's implementation elsewhere. cuDNN refuses a `[batch, 1, 1,
seq]` padding mask as a bias (jax-ml/jax#28974); what it takes is the padding as key
lengths (`key_value_seq_lengths`), which says the same of a right-padded mask: every
packer of this package pads on the right. So a mask is handed over as lengths only where
it is such a prefix of ones; any other mask (and, for cuDNN, a row with no real token) is
computed by the layer's own attention, chosen inside the compiled step (`lax.cond`).

The public API has no attention dropout: the fused path runs where attention dropout does
not (inference, or a model built with `attention_dropout=0`, MosaicBERT's choice);
training with attention dropout keeps the layer's own attention.
"""

from __future__ import annotations

from collections.abc import Callable

from keras_bert.backend import is_jax

HALF_PRECISION = ("bfloat16", "float16")


def applies(padding_mask, training, dropout_rate: float, want_probabilities: bool) -> bool:
    """Whether a call of `BertSelfAttention` takes the fused path: on JAX, with a padding
    mask, no attention probabilities asked for, and no attention dropout to apply."""
    return (is_jax() and padding_mask is not None and not want_probabilities
            and (not training or dropout_rate == 0))


def implementation(dtype) -> str:
    """`cudnn` for half-precision inputs on a GPU (the only ones its kernel takes), else
    `xla`."""
    import jax

    on_gpu = jax.default_backend() == "gpu"
    return "cudnn" if on_gpu and str(dtype) in HALF_PRECISION else "xla"


def attend(query, key, value, padding_mask, scale: float, unfused: Callable):
    """The attention output `[batch, seq, heads, head_size]` of `query`, `key`, `value` (each
    `[batch, seq, heads, head_size]`) over the keys `padding_mask` keeps: fused where the
    mask is right padding, else `unfused()` (the layer's own attention, same layout)."""
    import jax
    import jax.numpy as jnp

    keep = jnp.not_equal(padding_mask, 0)
    lengths = jnp.sum(keep, axis=1, dtype=jnp.int32)
    positions = jnp.arange(keep.shape[1], dtype=jnp.int32)
    right_padded = jnp.all(keep == (positions[None, :] < lengths[:, None]))
    chosen = implementation(query.dtype)
    if chosen == "cudnn":  # its padded softmax over zero keys is undefined
        right_padded = jnp.logical_and(right_padded, jnp.all(lengths > 0))

    def fused():
        return jax.nn.dot_product_attention(query, key, value, scale=scale,
                                            key_value_seq_lengths=lengths,
                                            implementation=chosen).astype(value.dtype)

    return jax.lax.cond(right_padded, fused, unfused)
