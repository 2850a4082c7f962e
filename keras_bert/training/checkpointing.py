"""Checkpoints that resume training exactly: model AND optimizer state, at epoch boundaries.

Keras' `BackupAndRestore` saves the model weights only (Adam's moments and the step counter
start over after a restart), so a resumed run drifts from an uninterrupted one. This callback
stores every model variable (dropout seed states included) and every optimizer variable
(moments, iteration, loss scale), and `restore` puts them back before `fit`; with a data
stream that is a pure function of the step (see `skip_consumed`), the resumed run computes
exactly what the uninterrupted run would have.
"""

from __future__ import annotations

import glob
import json
import os
import re

import keras
import numpy as np
import tensorflow as tf

_NAME = "ckpt-{step:09d}.npz"
_PATTERN = re.compile(r"ckpt-(\d{9})\.npz$")


def _variables(model: keras.Model) -> list:
    return list(model.variables) + list(model.optimizer.variables)


class ResumableCheckpoint(keras.callbacks.Callback):
    """Saves `model.variables` and `model.optimizer.variables` every epoch in `directory`.

    Writes are atomic (a temporary file renamed into place); the newest `keep` are kept.
    Under multi-worker training only the chief writes.
    """

    def __init__(self, directory: str, keep: int = 2):
        super().__init__()
        self.directory = directory
        self.keep = keep

    # ----- saving --------------------------------------------------------------------------

    def on_epoch_end(self, epoch, logs=None):
        if not tf.distribute.get_strategy().extended.should_checkpoint:
            return
        self.save(self.model, epoch + 1)

    def save(self, model: keras.Model, epoch: int) -> str:
        """Writes one checkpoint now; returns its path."""
        os.makedirs(self.directory, exist_ok=True)
        step = int(model.optimizer.iterations.numpy())
        arrays = {f"v{i:05d}": np.asarray(v.numpy()) for i, v in enumerate(_variables(model))}
        meta = {"step": step, "epoch": epoch,
                "paths": [v.path for v in _variables(model)]}
        path = os.path.join(self.directory, _NAME.format(step=step))
        tmp = path + ".tmp.npz"
        np.savez(tmp, meta=np.array(json.dumps(meta)), **arrays)
        os.replace(tmp, path)
        for old in self.checkpoints()[:-self.keep]:
            os.remove(old)
        return path

    # ----- restoring -----------------------------------------------------------------------

    def checkpoints(self) -> list[str]:
        """Complete checkpoints, oldest first."""
        found = [p for p in glob.glob(os.path.join(self.directory, "ckpt-*.npz"))
                 if _PATTERN.search(p)]
        return sorted(found)

    def restore(self, model: keras.Model) -> dict:
        """Loads the newest checkpoint into a compiled `model`; returns `{"step", "epoch"}`
        (zeros when there is none). Call it before `fit`."""
        paths = self.checkpoints()
        if not paths:
            return {"step": 0, "epoch": 0}
        model.optimizer.build(model.trainable_variables)
        with np.load(paths[-1]) as data:
            meta = json.loads(str(data["meta"]))
            variables = _variables(model)
            # Matched by position and shape: Keras' variable paths depend on how many models
            # the process built before (`dense_1`...), the order of creation does not.
            if len(variables) != len(meta["paths"]):
                raise ValueError(f"{paths[-1]} holds {len(meta['paths'])} variables, this "
                                 f"model and optimizer have {len(variables)}")
            values = [data[f"v{i:05d}"] for i in range(len(variables))]
            for variable, value, saved_path in zip(variables, values, meta["paths"],
                                                   strict=True):
                if tuple(value.shape) != tuple(variable.shape):
                    raise ValueError(f"{paths[-1]}: {saved_path} has shape {value.shape}, "
                                     f"the model's {variable.path} {tuple(variable.shape)}")
            for variable, value in zip(variables, values, strict=True):
                variable.assign(value)
        return {"step": meta["step"], "epoch": meta["epoch"]}


def skip_consumed(dataset: tf.data.Dataset, step: int) -> tf.data.Dataset:
    """The stream from batch `step` on: for a repeated dataset iterated once by `fit` (pass
    `steps_per_epoch`), the batches the restored run has already trained on are skipped."""
    return dataset.skip(step) if step else dataset
