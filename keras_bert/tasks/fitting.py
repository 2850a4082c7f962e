"""What `TextTaskModel.fit` checks and records beside the Keras loop: its arguments, the
checkpoint a resumable fit saves and compares, and the strings of `predict`'s answers."""

from __future__ import annotations

import dataclasses
import hashlib
import json

import numpy as np
import tensorflow as tf


def check_fit_arguments(x, kwargs: dict, checkpoint_dir: str | None, seed: int | None) -> None:
    """A `TypeError` / `ValueError` for what `fit` does not take."""
    if isinstance(x, tf.data.Dataset):
        raise TypeError("fit takes texts and targets (lists, arrays, Series); a "
                        "tf.data.Dataset of ids goes to model.network.fit")
    if "steps_per_epoch" in kwargs or "shuffle" in kwargs:
        raise TypeError("fit sets steps_per_epoch (the batches in the data) and its own "
                        "seeded shuffle (seed=)")
    if checkpoint_dir is not None and seed is None:
        raise ValueError("a resumable fit (checkpoint_dir=) needs seed=, so that the "
                         "resumed run sees the batches the interrupted one would have")


def pair_of(validation_data) -> tuple:
    """`(texts, targets)` of `fit`'s `validation_data`."""
    if not isinstance(validation_data, (tuple, list)) or len(validation_data) != 2:
        raise ValueError("validation_data is (texts, targets)")
    return tuple(validation_data)


def fit_checkpoint(model, rows: list, directory: str, epochs: int, batch_size: int, seed: int,
                   every_steps: int | None, minutes: float):
    """The `ResumableCheckpoint` of a resumable `fit`: it refuses to resume a run with other
    data (targets included), epochs, batch size, seed, task settings or optimizer."""
    from keras_bert.training.checkpointing import ResumableCheckpoint

    sized = not model.compiled or model._sized_optimizer
    optimizer = ({"FitSchedule": dataclasses.asdict(model.schedule)} if sized
                 else describe_optimizer(model.optimizer))
    return ResumableCheckpoint(directory, every_steps=every_steps, every_seconds=60.0 * minutes,
                               arguments={"data": fingerprint(rows), "epochs": int(epochs),
                                          "batch_size": batch_size, "seed": int(seed),
                                          "task": model._task_block(), "optimizer": optimizer})


def fingerprint(rows: list) -> str:
    """A digest of the training rows, targets included (a resumed fit must see the same
    data)."""
    digest = hashlib.sha256()
    for row in rows:
        digest.update(json.dumps(dataclasses.asdict(row), default=str).encode("utf-8"))
    return digest.hexdigest()


def describe_optimizer(optimizer) -> dict:
    """The optimizer's class and settings (not its generated name), as JSON values."""
    config = {k: v for k, v in optimizer.get_config().items() if k != "name"}
    return json.loads(json.dumps({type(optimizer).__name__: config}, default=str))


def strings(value: np.ndarray) -> np.ndarray:
    """A serving output with its bytes decoded to `str` (other outputs as they are)."""
    if value.dtype == object:
        return np.vectorize(lambda b: b.decode("utf-8") if isinstance(b, bytes) else b,
                            otypes=[object])(value).astype(str)
    return value
