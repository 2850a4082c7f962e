"""Sentence embeddings from encoder outputs: pooled, `[CLS]` or masked mean."""

from keras import ops

POOLING_MODES = ("pooled", "cls", "mean")


def pool(outputs: dict, input_mask, mode: str = "pooled"):
    """One vector per sequence from `BertEncoder` outputs.

    `pooled`: the pooler's output (dense + tanh on `[CLS]`); `cls`: the last layer at `[CLS]`;
    `mean`: the average of the last layer over real tokens (`input_mask` == 1).
    """
    if mode == "pooled":
        return outputs["pooled_output"]
    sequence = outputs["sequence_output"]
    if mode == "cls":
        return sequence[:, 0, :]
    if mode == "mean":
        mask = ops.cast(input_mask, sequence.dtype)[:, :, None]
        return ops.sum(sequence * mask, axis=1) / ops.maximum(ops.sum(mask, axis=1), 1.0)
    raise ValueError(f"Unknown pooling {mode!r}; choose one of {POOLING_MODES}")
