"""Sentence vectors from encoder outputs: pooled, `[CLS]` or masked mean, written once.

`pooled_vector` builds the pooling into a functional task model (Keras layers, serializable:
classifiers, `BertEmbedder` and so every embedding path); its mean is `masked_mean`.
"""

import keras
from keras import ops

from keras_bert.config import POOLING_MODES


def _check(mode: str) -> None:
    if mode not in POOLING_MODES:
        raise ValueError(f"Unknown pooling {mode!r}; choose one of {POOLING_MODES}")


def masked_mean(sequence, input_mask):
    """Average of `sequence` `[batch, seq, hidden]` over positions where `input_mask` is 1."""
    # expand_dims, not `[:, :, None]`: LiteRT has no kernel for a new-axis strided slice
    # of a dynamic length (the LiteRT export runs the network at the text's length).
    mask = ops.expand_dims(ops.cast(input_mask, sequence.dtype), -1)
    return ops.sum(sequence * mask, axis=1) / ops.maximum(ops.sum(mask, axis=1), 1.0)


@keras.saving.register_keras_serializable(package="keras_bert")
class MaskedMeanPooling(keras.layers.Layer):
    """`masked_mean` as a layer: `(sequence, input_mask)` -> `[batch, hidden]`."""

    def call(self, sequence, input_mask):
        """Masked mean over the sequence axis."""
        return masked_mean(sequence, input_mask)

    def compute_output_shape(self, sequence_shape, input_mask_shape=None):
        """`[batch, hidden]`."""
        return (sequence_shape[0], sequence_shape[2])


@keras.saving.register_keras_serializable(package="keras_bert")
class ClsToken(keras.layers.Layer):
    """The vector at position 0 (`[CLS]`) of a `[batch, seq, hidden]` tensor."""

    def call(self, sequence):
        """`sequence[:, 0, :]`."""
        return sequence[:, 0, :]

    def compute_output_shape(self, sequence_shape):
        """`[batch, hidden]`."""
        return (sequence_shape[0], sequence_shape[2])


def pooled_vector(outputs: dict, input_mask, pooling: str, policy):
    """One vector per sequence from symbolic encoder outputs, as layers of the model.

    `pooled`: the pooler's output (dense + tanh on `[CLS]`); `cls`: the last layer at `[CLS]`;
    `mean`: the average of the last layer over real tokens (`input_mask` == 1).
    """
    _check(pooling)
    if pooling == "pooled":
        return outputs["pooled_output"]
    if pooling == "cls":
        return ClsToken(name="cls_token", dtype=policy)(outputs["sequence_output"])
    return MaskedMeanPooling(name="mean_pooling", dtype=policy)(
        outputs["sequence_output"], input_mask)

