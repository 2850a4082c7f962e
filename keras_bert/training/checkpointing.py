"""Checkpoints that resume training exactly: model AND optimizer state, every few minutes.

Keras' `BackupAndRestore` (3.15) restores the weights, the optimizer's variables and the
epoch, but not the step within the epoch: after a kill mid-epoch, `fit` starts that epoch's
data over, so a resumed run drifts from an uninterrupted one; and it saves by batch count or
epoch, not by time. This callback stores every model variable (dropout seed states
included) and every optimizer variable (moments, iteration, loss scale) with the job's
arguments, and `restore` puts them back before `fit`; with a data stream that is a pure
function of the step (`keras_bert.training.resume.fit_from_step`, from the optimizer's
iteration), the resumed run computes exactly what the uninterrupted run would have.

When: at the end of every epoch, every `every_steps` steps when set, and after any step
that ends `every_seconds` (default 10 minutes) after the previous save, so that a kill
loses minutes of work, not an epoch. Writes are atomic: the file is written under a
temporary name, flushed to disk and renamed, so a kill during a write leaves the previous
checkpoint as the newest one.
"""

from __future__ import annotations

import glob
import json
import os
import re
import time
import warnings
import zipfile

import keras
import numpy as np

from keras_bert.training.backends import is_chief
from keras_bert.training.resume import check_same_arguments

_NAME = "ckpt-{step:09d}.npz"
_PATTERN = re.compile(r"ckpt-(\d{9})\.npz$")
_COMPLETE = "complete.json"
DEFAULT_CHECKPOINT_SECONDS = 600.0


def _variables(model: keras.Model) -> list:
    return list(model.variables) + list(model.optimizer.variables)


class ResumableCheckpoint(keras.callbacks.Callback):
    """Saves `model.variables` and `model.optimizer.variables` in `directory`.

    `arguments` (see `keras_bert.training.resume.job_arguments`) are stored with every
    checkpoint and compared on `restore`. The newest `keep` checkpoints are kept. Under
    multi-worker training only the chief writes.
    """

    def __init__(self, directory: str, keep: int = 2, every_steps: int | None = None,
                 every_seconds: float | None = DEFAULT_CHECKPOINT_SECONDS,
                 arguments: dict | None = None):
        super().__init__()
        if every_steps is not None and every_steps < 1:
            raise ValueError(f"checkpoint every_steps must be positive, got {every_steps}")
        self.directory = directory
        self.keep = keep
        self.every_steps = every_steps
        self.every_seconds = every_seconds
        self.arguments = arguments
        self._last_save = time.monotonic()

    # ----- saving --------------------------------------------------------------------------

    def on_train_begin(self, logs=None):
        self._last_save = time.monotonic()

    def on_train_batch_end(self, batch, logs=None):
        if batch + 1 == self.params.get("steps"):
            return  # the epoch's last step: `on_epoch_end` saves after the epoch's logs
        step = int(self.model.optimizer.iterations.numpy())
        due = bool(self.every_steps) and step % self.every_steps == 0
        due |= (self.every_seconds is not None
                and time.monotonic() - self._last_save >= self.every_seconds)
        if due and self._is_chief():
            self.save(self.model)

    def on_epoch_end(self, epoch, logs=None):
        if self._is_chief():
            self.save(self.model)

    @staticmethod
    def _is_chief() -> bool:
        return is_chief()

    def save(self, model: keras.Model) -> str:
        """Writes one checkpoint now; returns its path."""
        os.makedirs(self.directory, exist_ok=True)
        step = int(model.optimizer.iterations.numpy())
        variables = _variables(model)
        arrays = {f"v{i:05d}": np.asarray(v.numpy()) for i, v in enumerate(variables)}
        meta = {"step": step, "paths": [v.path for v in variables],
                "arguments": self.arguments}
        path = os.path.join(self.directory, _NAME.format(step=step))
        tmp = path + ".tmp"
        with open(tmp, "wb") as f:
            np.savez(f, meta=np.array(json.dumps(meta)), **arrays)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
        for old in self.checkpoints()[:-self.keep]:
            os.remove(old)
        self._last_save = time.monotonic()
        return path

    def finish(self, result: dict) -> None:
        """Marks the run complete (`complete.json`: its arguments and `result`)."""
        if not self._is_chief():
            return
        os.makedirs(self.directory, exist_ok=True)
        tmp = os.path.join(self.directory, _COMPLETE + ".tmp")
        with open(tmp, "w", encoding="utf-8") as f:
            json.dump({"arguments": self.arguments, "result": result}, f, indent=2)
        os.replace(tmp, os.path.join(self.directory, _COMPLETE))

    # ----- restoring -----------------------------------------------------------------------

    def checkpoints(self) -> list[str]:
        """Complete checkpoints, oldest first."""
        found = [p for p in glob.glob(os.path.join(self.directory, "ckpt-*.npz"))
                 if _PATTERN.search(p)]
        return sorted(found)

    def completed(self) -> dict | None:
        """The result of the finished run that wrote `directory` (None if not finished);
        raises `ResumeMismatch` when that run had other arguments."""
        path = os.path.join(self.directory, _COMPLETE)
        if not os.path.exists(path):
            return None
        with open(path, encoding="utf-8") as f:
            record = json.load(f)
        check_same_arguments(record.get("arguments"), self.arguments, self.directory)
        return record["result"]

    def restore(self, model: keras.Model) -> dict:
        """Loads the newest readable checkpoint into a compiled `model`; returns
        `{"step": N}` (0 when there is none). Call it before `fit`.

        Raises `ResumeMismatch` when the checkpoints were written with other arguments.
        A checkpoint that cannot be read (a damaged disk) is skipped with a warning.
        """
        for leftover in glob.glob(os.path.join(self.directory, "ckpt-*.npz.tmp")):
            if self._is_chief():  # the process that writes them
                os.remove(leftover)  # a write that a kill interrupted
        paths = self.checkpoints()
        if not paths:
            return {"step": 0}
        model.optimizer.build(model.trainable_variables)
        for path in reversed(paths):
            try:
                return self._load(model, path)
            except (OSError, EOFError, KeyError, zipfile.BadZipFile, json.JSONDecodeError) as e:
                warnings.warn(f"skipping unreadable checkpoint {path}: {e}", stacklevel=2)
        raise ValueError(f"no readable checkpoint in {self.directory}; delete it to start "
                         "fresh")

    def _load(self, model: keras.Model, path: str) -> dict:
        with np.load(path) as data:
            meta = json.loads(str(data["meta"]))
            check_same_arguments(meta.get("arguments"), self.arguments, self.directory)
            variables = _variables(model)
            # Matched by position and shape: Keras' variable paths depend on how many models
            # the process built before (`dense_1`...), the order of creation does not.
            if len(variables) != len(meta["paths"]):
                raise ValueError(f"{path} holds {len(meta['paths'])} variables, this "
                                 f"model and optimizer have {len(variables)}")
            values = [data[f"v{i:05d}"] for i in range(len(variables))]
        for variable, value, saved_path in zip(variables, values, meta["paths"], strict=True):
            if tuple(value.shape) != tuple(variable.shape):
                raise ValueError(f"{path}: {saved_path} has shape {value.shape}, "
                                 f"the model's {variable.path} {tuple(variable.shape)}")
        for variable, value in zip(variables, values, strict=True):
            variable.assign(value)
        return {"step": int(meta["step"])}
