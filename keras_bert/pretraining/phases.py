"""Two-phase pretraining, as in BERT and LAMB's recipe: phase 1 at sequence length 128,
phase 2 at 512 (with 4x the masked predictions) continuing from phase 1's weights AND
optimizer state (Adam's moments and step count) under a schedule of its own.

`read_phase1(OUT)` reads a finished `keras-bert pretrain` run (its `model/` directory and
last checkpoint); `phase2_pretrainer` builds its network for phase 2's sequence length and
`load_phase1_state` puts that checkpoint's model and optimizer variables into it
(`TextPretrainer.from_phase1` runs the three). The optimizer's step count goes on (Adam's
bias correction must not restart over moments that are not zero), so phase 2's schedule
starts at that step (`WarmupPolynomialDecay(start_step=...)`).
"""

from __future__ import annotations

import dataclasses
import json
import os

import numpy as np

from keras_bert.training.checkpointing import ResumableCheckpoint


@dataclasses.dataclass(frozen=True)
class Phase1:
    """A finished pretraining run that a second phase continues."""

    out: str
    model_dir: str  # OUT/model: config, vocabulary, tokenizer rules
    checkpoint: str  # its last checkpoint (model and optimizer variables)
    step: int  # the optimizer's step count at its end
    arguments: dict  # the arguments it ran with

    @property
    def optimizer(self) -> str:
        return self.arguments.get("optimizer", "adamw")


def read_phase1(out: str) -> Phase1:
    """The finished run in `out` (a `keras-bert pretrain --out` directory); raises
    `ValueError` naming what is missing."""
    directory = os.path.join(out, "checkpoints")
    complete = os.path.join(directory, "complete.json")
    if not os.path.exists(complete):
        raise ValueError(f"{out} holds no finished pretraining run (no {complete}); finish "
                         "phase 1 first (run its command again to resume it)")
    with open(complete, encoding="utf-8") as f:
        arguments = json.load(f).get("arguments") or {}
    checkpoints = ResumableCheckpoint(directory).checkpoints()
    model_dir = os.path.join(out, "model")
    if not checkpoints or not os.path.isdir(model_dir):
        raise ValueError(f"{out} lacks its model/ directory or its checkpoints/ckpt-*.npz: "
                         "phase 2 needs both")
    with np.load(checkpoints[-1]) as data:
        step = int(json.loads(str(data["meta"]))["step"])
    return Phase1(out=os.path.abspath(out), model_dir=model_dir, checkpoint=checkpoints[-1],
                  step=step, arguments=arguments)


def phase2_pretrainer(phase1: Phase1, seq_length: int, dtype: str, nsp_loss_weight: float):
    """A `BertPretrainer` of phase 1's config in `dtype`, its weights still random: they
    come with the optimizer state (`load_phase1_state`). Refuses a `seq_length` longer
    than phase 1's position embeddings."""
    from keras_bert.checkpoints.model_dir import load_model_dir
    from keras_bert.models.encoder import BertEncoder
    from keras_bert.models.pretrainer import BertPretrainer

    config = load_model_dir(phase1.model_dir).config
    if config.max_position_embeddings < seq_length:
        raise ValueError(f"phase 1's model has {config.max_position_embeddings} position "
                         f"embeddings, fewer than --seq-length {seq_length} (pretrain phase 1 "
                         "with at least as many: a new model gets max(512, --seq-length))")
    return BertPretrainer(BertEncoder(config, dtype=dtype), nsp_loss_weight=nsp_loss_weight)


def check_optimizer(phase1: Phase1, optimizer: str) -> None:
    """Refuses to continue phase 1's optimizer state with another optimizer."""
    if optimizer != phase1.optimizer:
        raise ValueError(f"phase 1 ({phase1.out}) ran {phase1.optimizer}: phase 2 continues "
                         f"its optimizer state, so give --optimizer {phase1.optimizer} "
                         f"(compile(optimizer={phase1.optimizer!r}))")


def load_phase1_state(pretrainer, phase1: Phase1) -> None:
    """Assigns phase 1's last checkpoint to a compiled `pretrainer` of the same config:
    every model variable (weights, heads, dropout seed states) and every variable of the
    optimizer proper (step count, moments; under mixed_float16 the loss scale starts anew).
    Variables are matched by position and checked by shape, as a resumed run's are."""
    optimizer = pretrainer.optimizer
    optimizer.build(pretrainer.trainable_variables)
    inner = getattr(optimizer, "inner_optimizer", optimizer)  # LossScaleOptimizer's
    with np.load(phase1.checkpoint) as data:
        paths = json.loads(str(data["meta"]))["paths"]
        arrays = [data[f"v{i:05d}"] for i in range(len(paths))]
    model_variables, optimizer_variables = list(pretrainer.variables), list(inner.variables)
    if len(paths) < len(model_variables) + len(optimizer_variables):
        raise ValueError(f"{phase1.checkpoint} holds {len(paths)} variables; this model and "
                         f"optimizer need {len(model_variables) + len(optimizer_variables)}")
    # The checkpoint holds the model's variables, then the optimizer's, the optimizer
    # proper's last (a LossScaleOptimizer's own come before its inner optimizer's).
    offset = len(paths) - len(optimizer_variables)
    pairs = [(v, i) for i, v in enumerate(model_variables)] + \
        [(v, offset + i) for i, v in enumerate(optimizer_variables)]
    for variable, i in pairs:
        if tuple(arrays[i].shape) != tuple(variable.shape):
            raise ValueError(f"{phase1.checkpoint}: {paths[i]} has shape {arrays[i].shape}, "
                             f"phase 2's {variable.path} {tuple(variable.shape)}")
    for variable, i in pairs:
        variable.assign(arrays[i])


__all__ = ["Phase1", "check_optimizer", "load_phase1_state", "phase2_pretrainer", "read_phase1"]
