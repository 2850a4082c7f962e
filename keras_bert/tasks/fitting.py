"""What `TextTaskModel.fit` runs beside the Keras loop: its arguments' checks, the training
loop over the kind's rows (`fit_rows`) and the checkpoint a resumable fit saves and
compares."""

from __future__ import annotations

import dataclasses
import hashlib
import json

import tensorflow as tf

from keras_bert.tasks.batches import Batching


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


def fit_rows(model, rows: list, *, batch_size: int, epochs: int, seed: int,
             validation_rows: list | None = None, checkpoint=None,
             batching: Batching | None = None, **fit_kwargs) -> tuple[dict, int]:
    """`TextTaskModel.fit_rows` (see there): the kind's stream of `rows`, the optimizer
    sized from its steps unless one was compiled, the restored step, Keras' `fit`."""
    from keras_bert.training import backends
    from keras_bert.training.distribution import process_count
    from keras_bert.training.resume import fit_from_step

    if int(epochs) < 1:
        raise ValueError(f"epochs must be at least 1, got {epochs}")
    backends.check_batch_size(model, batch_size)
    # TPUs compile for one batch shape: there the last, partial batch is dropped, and the
    # default length rule keeps every batch at the sequence length (not verified on a TPU
    # here; MirroredStrategy, one device and JAX keep every example).
    static = backends.static_batches(model)
    # A JAX data-parallel split takes whole batches only: the partial last one is dropped.
    # Many processes: Keras gives each its slice of every batch by the stream's static
    # batch size (`Distribution.distribute_dataset`), which a partial batch leaves unknown.
    many = process_count() > 1
    drop = static or many or backends.batch_splits(model) > 1
    jit_compile = (model.jit_compile if model.compiled
                   else model._compile_arguments.get("jit_compile"))
    seq_length = model.preprocessor.seq_length
    batching = Batching.of(batching).resolved(
        seq_length, backends.compiles_per_shape(jit_compile), static=static)
    batching.buckets(seq_length)  # a bad bucket list, before any work
    stream, count = model._stream(rows, batch_size, int(seed), drop_remainder=drop,
                                  batching=batching)
    steps = count // batch_size if drop else -(-count // batch_size)
    if steps < 1:
        raise ValueError(f"{count} examples do not fill one batch of {batch_size}")
    sized = not model.compiled or model._sized_optimizer
    if sized:  # the kind's loss and metrics, BERT's AdamW for this many steps
        with backends.distribution_scope(model):
            model._compile(model.schedule.optimizer(steps * int(epochs)),
                           **model._compile_arguments)
    model._sized_optimizer = sized
    # Many processes validate on whole batches as they train (every process's slice of a
    # batch has one shape): the last, partial batch is left out of the validation logs.
    validation = (None if validation_rows is None
                  else model._stream(validation_rows, batch_size, drop_remainder=many,
                                     batching=batching)[0])
    callbacks = [*([checkpoint] if checkpoint else []), *fit_kwargs.pop("callbacks", [])]
    with backends.distribution_scope(model):  # JAX: Keras splits each batch across devices
        start = checkpoint.restore(model)["step"] if checkpoint is not None else 0
        logs = fit_from_step(model, stream, epochs=int(epochs), steps_per_epoch=steps,
                             start_step=start, validation_data=validation,
                             callbacks=callbacks, **fit_kwargs)
    return logs, count


def brings_loss(model) -> bool:
    """Whether `model` computes its own loss (overrides `keras.Model.compute_loss`): span
    QA's network."""
    import keras

    return type(model).compute_loss is not keras.Model.compute_loss


def pair_of(validation_data) -> tuple:
    """`(texts, targets)` of `fit`'s `validation_data`."""
    if not isinstance(validation_data, (tuple, list)) or len(validation_data) != 2:
        raise ValueError("validation_data is (texts, targets)")
    return tuple(validation_data)


def fit_checkpoint(model, rows: list, directory: str, epochs: int, batch_size: int, seed: int,
                   every_steps: int | None, minutes: float, batching: Batching | None = None):
    """The `ResumableCheckpoint` of a resumable `fit`: it refuses to resume a run with other
    data (targets included), epochs, batch size, seed, batching, task settings or
    optimizer."""
    from keras_bert.training.checkpointing import ResumableCheckpoint

    sized = not model.compiled or model._sized_optimizer
    optimizer = ({"FitSchedule": dataclasses.asdict(model.schedule)} if sized
                 else describe_optimizer(model.optimizer))
    return ResumableCheckpoint(directory, every_steps=every_steps, every_seconds=60.0 * minutes,
                               arguments={"data": fingerprint(rows), "epochs": int(epochs),
                                          "batch_size": batch_size, "seed": int(seed),
                                          "batching": Batching.of(batching).describe(),
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
