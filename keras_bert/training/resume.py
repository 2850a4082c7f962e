"""What makes a killed training job resumable: its arguments, its history, its data position.

A job started again with the same command continues from its last checkpoint
(`ResumableCheckpoint`) and ends with the weights of an uninterrupted run. Three things make
that hold and safe:

* `job_arguments`: the arguments that decide the computation, with a fingerprint of every
  input file, stored with each checkpoint; a restart with other arguments is refused
  (`ResumeMismatch`) instead of silently mixing two runs.
* `fit_from_step`: `model.fit` from any global step, mid-epoch included, over a stream whose
  batch k depends on k only.
* `HistoryFile`: per-epoch logs that survive the restart.
"""

from __future__ import annotations

import dataclasses
import glob
import hashlib
import json
import os

import keras
import numpy as np

from keras_bert.training.optimizer import build_optimizer

_FINGERPRINT_BYTES = 64 << 20  # per file: its size and the SHA-256 of its first 64 MiB


class ResumeMismatch(ValueError):
    """A checkpoint directory was written by a run with other arguments."""


def file_fingerprint(path: str) -> str:
    """`size:sha256-of-the-first-64-MiB` of a file; of a directory, the hash of its files'
    relative names and fingerprints; of a glob, of its matches; `missing` when none."""
    if os.path.isfile(path):
        digest = hashlib.sha256()
        with open(path, "rb") as f:
            digest.update(f.read(_FINGERPRINT_BYTES))
        return f"{os.path.getsize(path)}:{digest.hexdigest()[:16]}"
    if os.path.isdir(path):
        files = sorted(os.path.relpath(os.path.join(root, name), path)
                       for root, _, names in os.walk(path) for name in names)
        parts = [f"{name}={file_fingerprint(os.path.join(path, name))}" for name in files]
    else:
        matches = sorted(glob.glob(path))
        if not matches or matches == [path]:
            return "missing"
        parts = [f"{os.path.basename(m)}={file_fingerprint(m)}" for m in matches]
    return hashlib.sha256("\n".join(parts).encode()).hexdigest()[:16]


def job_arguments(job, files: tuple[str, ...], ignore: tuple[str, ...]) -> dict:
    """The fields of the dataclass `job` that decide what it computes, as JSON values.

    `files` names the fields holding input paths (a path, a list of paths, a glob or None):
    each is stored with the fingerprint of its contents, so a corpus edited in place counts
    as another corpus. `ignore` names fields that don't change the result (output
    directory, verbosity, checkpoint interval).
    """
    arguments = {}
    for field in dataclasses.fields(job):
        if field.name in ignore:
            continue
        value = getattr(job, field.name)
        if field.name in files and value is not None:
            paths = value if isinstance(value, (list, tuple)) else [value]
            value = [f"{os.path.abspath(p)} ({file_fingerprint(p)})" for p in paths]
        arguments[field.name] = json.loads(json.dumps(value, default=str))
    return arguments


def check_same_arguments(saved: dict | None, current: dict | None, directory: str) -> None:
    """Raises `ResumeMismatch` naming each difference between the arguments of the run that
    wrote `directory` (`saved`) and this one."""
    if saved is None or current is None or saved == current:
        return
    differences = [f"{name}: {saved.get(name, '(not set)')!r} there, "
                   f"{current.get(name, '(not set)')!r} now"
                   for name in sorted(set(saved) | set(current))
                   if saved.get(name) != current.get(name)]
    raise ResumeMismatch(
        f"{directory} holds the checkpoints of a run with other arguments ("
        + "; ".join(differences) + "). Run the same command to resume it, or start fresh "
        f"with another output directory (or delete {directory}).")


def fit_from_step(model: keras.Model, stream, *, epochs: int, steps_per_epoch: int,
                  start_step: int = 0, **fit_kwargs) -> dict:
    """`model.fit` over `stream` from global step `start_step` to `epochs * steps_per_epoch`.

    `stream` is an infinite `tf.data.Dataset` whose batch k depends on k only; the batches
    before `start_step` are skipped. A run resumed mid-epoch first completes that epoch
    (its logged metrics then average the steps run after the restart), then runs the rest.
    Returns the merged `History.history` of the epochs run.
    """
    build_optimizer(model)
    history: dict[str, list] = {}
    epoch, done = divmod(start_step, steps_per_epoch)
    legs = []  # (first epoch, end epoch, steps per epoch)
    if done:
        legs.append((epoch, epoch + 1, steps_per_epoch - done))
        epoch += 1
    if epoch < epochs:
        legs.append((epoch, epochs, steps_per_epoch))
    step = start_step
    for first, end, steps in legs:
        # keras.Model's own fit: a model that takes other inputs in its `fit` (the text task
        # models) trains on the featurised stream here.
        run = keras.Model.fit(model, stream.skip(step) if step else stream,
                              initial_epoch=first, epochs=end, steps_per_epoch=steps,
                              shuffle=False, **fit_kwargs)
        for key, values in run.history.items():
            history.setdefault(key, []).extend(float(np.asarray(v)) for v in values)
        step += (end - first) * steps
    return history


def load_history(path: str, epochs: int) -> dict:
    """The logs of the first `epochs` epochs in the history file `path` ({} if none)."""
    if not os.path.exists(path):
        return {}
    with open(path, encoding="utf-8") as f:
        return {k: v[:epochs] for k, v in json.load(f).items()}


class HistoryFile(keras.callbacks.Callback):
    """Appends each epoch's logs to `history` and rewrites `path` atomically (in the
    process that writes checkpoints only: `is_chief`; the others keep `history`).

    `history` None: the logs of the epochs before the first one this run ends are read
    from `path` then (a resumed run keeps the logs of the epochs it does not repeat)."""

    def __init__(self, path: str, history: dict | None = None):
        super().__init__()
        self.path = path
        self.history = history

    def on_epoch_end(self, epoch, logs=None):
        if self.history is None:
            self.history = load_history(self.path, epoch)
        for key, value in (logs or {}).items():
            self.history.setdefault(key, []).append(float(np.asarray(value)))
        from keras_bert.training.backends import is_chief

        if not is_chief():
            return
        with open(self.path + ".tmp", "w", encoding="utf-8") as f:
            json.dump(self.history, f)
        os.replace(self.path + ".tmp", self.path)

    def logs(self, epochs: int) -> dict:
        """The logs of all `epochs` epochs (from `path` if this run ended none)."""
        return self.history if self.history is not None else load_history(self.path, epochs)


__all__ = ["HistoryFile", "ResumeMismatch", "check_same_arguments", "file_fingerprint",
           "fit_from_step", "job_arguments", "load_history"]
