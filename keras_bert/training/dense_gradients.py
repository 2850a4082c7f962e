"""Embedding-lookup gradients (`tf.IndexedSlices`) summed per row before an optimizer sees
them.

A lookup's gradient holds one slice per token, so a row looked up several times in a batch
(each token-type row, every frequent word) appears several times. Keras 3.15's optimizers
do not sum them first: `global_norm` (for `global_clipnorm`) squares the slices one by one,
so the clipping norm counted the sum of their squares instead of the square of their sum;
without clipping, Adam's second moment did the same (`ops.square` keeps IndexedSlices): a
first AdamW step of 2.6x the learning rate on BERT's token-type embeddings, where Adam's
first step is at most 1x. Summing them first (`tf.convert_to_tensor`, as clipping's
`v * scale` and Adam's moment updates did anyway) makes both right.

Only TensorFlow makes `IndexedSlices`; JAX's and torch's gradients are dense already, so
TensorFlow is imported only when it runs.
"""

from __future__ import annotations

from keras_bert.backend import is_tensorflow


def dense_gradient(gradient):
    """`gradient`, a `tf.IndexedSlices` summed into a dense tensor."""
    if not is_tensorflow():
        return gradient
    import tensorflow as tf

    if isinstance(gradient, tf.IndexedSlices):
        return tf.convert_to_tensor(gradient)
    return gradient


class DenseGradients:
    """Optimizer mixin: `apply` (and `apply_gradients`) densify `tf.IndexedSlices` first,
    before clipping, weight decay and the update step."""

    def apply(self, grads, trainable_variables=None):
        return super().apply([dense_gradient(g) for g in grads], trainable_variables)


__all__ = ["DenseGradients", "dense_gradient"]
