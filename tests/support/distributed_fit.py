"""Fits kinds on several simulated JAX devices and on one, in ONE process, and writes how far
apart the runs ended, so that tests can hold Keras' distribution API to one device's answers:

    XLA_FLAGS=--xla_force_host_platform_device_count=8 KERAS_BACKEND=jax \\
        python -m tests.support.distributed_fit data_parallel ROOT OUT.json --kinds classify
    ... model_parallel ROOT OUT.json --kinds classify      (a 4 x 2 batch x model mesh)
    ... errors ROOT OUT.json                               (the bad inputs' messages)

ROOT holds `tests/support/backend_fit.py init`'s starting models (tiny BERT, no dropout);
this writes them when missing. "One device" is a fit with no distribution: the same process
sees 8 devices and computes on the first. Each distributed run loads the same model and fits
on the same seeded batches. `data_parallel` runs each kind twice on 8 devices: through our
switch (`load(..., distribution="data_parallel")`) and as a Keras user would
(`keras.distribution.set_distribution(DataParallel(...))` before loading); `--resume` kills
the switch's fit after step 5 and resumes it from its step-4 checkpoint.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path

import keras
import numpy as np

from tests.support import backend_fit
from tests.support.callbacks import KillAt, Killed, StepLosses

EPOCHS = 2
BATCH = 8


def _load(kind: str, root: Path, distribution):
    from keras_bert import TextPretrainer
    from keras_bert.tasks.task_model import TextTaskModel

    if kind == "pretrain":
        return TextPretrainer.from_pretrained(str(root / kind), seq_length=backend_fit.SEQ,
                                              precision="float32", distribution=distribution)
    return TextTaskModel.load(str(root / kind), distribution=distribution)


def fit_once(kind: str, root: Path, distribution=None, user=None, accumulation: int = 1,
             checkpoint: str | None = None, kill_at: int | None = None,
             save: Path | None = None) -> dict:
    """One fit of `kind`: `distribution` is our switch; `user` a `Distribution` set as a
    Keras user sets it, before the model is loaded (and unset after). Returns its step
    losses, weights, answers and the devices its first kernel lies on; with `save`, the
    fitted model is saved there."""
    from keras_bert import FitSchedule
    from keras_bert.training.checkpointing import ResumableCheckpoint

    if user is not None:
        keras.distribution.set_distribution(user)
    try:
        model = _load(kind, root, distribution)
        x, y = backend_fit.data(kind, root)
        steps = StepLosses()
        callbacks = [steps] + ([KillAt(kill_at)] if kill_at else [])
        common = dict(batch_size=BATCH, epochs=EPOCHS, seed=5, verbose=0, callbacks=callbacks)
        if kind == "pretrain":
            model.compile(learning_rate=backend_fit.LEARNING_RATE,
                          accumulation_steps=accumulation)
            ckpt = checkpoint and ResumableCheckpoint(checkpoint, every_steps=2)
            model.fit(x, steps_per_epoch=3, checkpoint=ckpt, **common)
            network = model.pretrainer
        else:
            model.compile(schedule=FitSchedule(learning_rate=backend_fit.LEARNING_RATE))
            held_out = _held_out(kind, x, y)
            resumable = dict(checkpoint_dir=checkpoint, checkpoint_steps=2) if checkpoint else {}
            model.fit(x, y, validation_data=held_out, **common, **resumable)
            network = model.network
        kernel = next(v for v in network.weights if v.path.endswith("query/kernel"))
        if save is not None:
            model.save(str(save))
        return {"losses": steps.losses, "weights": [np.asarray(w) for w in network.weights],
                "answers": _floats(backend_fit.answers(kind, model, x)),
                "evaluation": _evaluation(kind, model, x, y),
                "devices": len(kernel.value.sharding.device_set)}
    finally:
        if user is not None:
            keras.distribution.set_distribution(None)


def _held_out(kind: str, x, y):
    """13 rows (a partial last batch on 8 devices) for the classifier's validation; the
    other kinds fit without."""
    return (x[:13], y[:13]) if kind == "classify" else None


def _evaluation(kind: str, model, x, y) -> dict:
    """`evaluate` on 13 rows after the fit (sentence kinds; a partial batch)."""
    if kind not in ("classify", "regress", "multilabel"):
        return {}
    return {k: v for k, v in model.evaluate(x[:13], y[:13]).items() if isinstance(v, float)}


def _floats(answers: dict) -> dict:
    return {k: np.asarray(v) for k, v in answers.items() if np.asarray(v).dtype.kind == "f"}


def differences(first: dict, second: dict) -> dict:
    """How far `second` ended from `first`: the losses' largest relative difference, the
    weights' and answers' largest absolute ones, and the evaluations' largest."""
    losses = np.array(first["losses"]), np.array(second["losses"])
    assert losses[0].shape == losses[1].shape, (losses[0].shape, losses[1].shape)
    return {"loss_rel": float(np.max(np.abs(losses[1] - losses[0]) / np.abs(losses[0]))),
            "weights_abs": max(float(np.max(np.abs(a - b)))
                               for a, b in zip(first["weights"], second["weights"], strict=True)),
            "answers_abs": max([float(np.max(np.abs(first["answers"][k] - v)))
                                for k, v in second["answers"].items()] or [0.0]),
            "evaluation_abs": max([abs(first["evaluation"][k] - v)
                                   for k, v in second["evaluation"].items()] or [0.0]),
            "steps": len(losses[0]),
            "loss_moved": bool(not np.allclose(losses[0], losses[0][0]))}


def data_parallel(root: Path, kinds: list[str], accumulation: int, resume: bool) -> dict:
    """Per kind: one device against our switch and against a user's `set_distribution`,
    and the switch against the user's way (and, with `resume`, a killed and resumed fit)."""
    results = {}
    devices = keras.distribution.list_devices()
    for kind in kinds:
        one = fit_once(kind, root, accumulation=accumulation)
        ours = fit_once(kind, root, "data_parallel", accumulation=accumulation,
                        save=root / "data-parallel-fitted" / kind)
        theirs = fit_once(kind, root, user=keras.distribution.DataParallel(devices=devices),
                          accumulation=accumulation)
        results[kind] = {"ours": differences(one, ours), "theirs": differences(one, theirs),
                         "ours_vs_theirs": differences(ours, theirs),
                         "devices": [one["devices"], ours["devices"], theirs["devices"]],
                         "answers": {k: v.tolist() for k, v in ours["answers"].items()}}
        if resume:
            directory = str(root / f"resume-{kind}-{accumulation}")
            try:
                fit_once(kind, root, "data_parallel", accumulation=accumulation,
                         checkpoint=directory, kill_at=5)
                raise AssertionError("the kill did not stop the fit")
            except Killed:
                pass
            resumed = fit_once(kind, root, "data_parallel", accumulation=accumulation,
                               checkpoint=directory)
            results[kind]["resumed_weights_abs"] = max(
                float(np.max(np.abs(a - b)))
                for a, b in zip(one["weights"], resumed["weights"], strict=True))
    return results


def model_parallel(root: Path, kinds: list[str]) -> dict:
    """Per kind: the shard shapes of the kernels `BERT_LAYOUT` names, on a 4 x 2 mesh
    (`model_parallel:2`), and the fit's differences from one device's."""
    from keras_bert.training.distribution import BERT_LAYOUT

    results = {}
    for kind in kinds:
        one = fit_once(kind, root)
        model = _load(kind, root, "model_parallel:2")
        shards = {v.path: [list(v.shape), list(v.value.addressable_shards[0].data.shape),
                           len(v.value.sharding.device_set)]
                  for v in model.weights if any(_matches(p, v.path) for p in BERT_LAYOUT)}
        parallel = fit_once(kind, root, "model_parallel:2")
        results[kind] = {"shards": shards, **differences(one, parallel)}
    return results


def _matches(pattern: str, path: str) -> bool:
    import re

    return re.fullmatch(pattern, path) is not None


def errors(root: Path) -> dict:
    """The message of each bad input, and whether it left files behind."""
    from keras_bert import BertConfig, BertEncoder, TextClassifier
    from keras_bert.checkpoints.model_dir import save_model_dir
    from keras_bert.training.distribution import get_distribution

    found = {}
    model = _load("classify", root, "data_parallel")
    x, y = backend_fit.data("classify", root)
    checkpoint = root / "bad-batch-checkpoints"
    try:
        model.fit(x, y, batch_size=12, seed=5, verbose=0, checkpoint_dir=str(checkpoint))
    except ValueError as error:
        found["batch"] = {"message": str(error), "written": checkpoint.exists()}
    # Hidden 36: the 8-way model axis divides no sharded axis of the word embeddings.
    config = BertConfig(vocab_size=44, hidden_size=36, num_layers=1, num_heads=4,
                        intermediate_size=72, max_position_embeddings=64)
    odd = str(root / "hidden-36")
    save_model_dir(BertEncoder(config), odd, str(root / "vocab.txt"), lower_case=True)
    try:
        TextClassifier.from_pretrained(odd, ["a", "b"], seq_length=16, precision="float32",
                                       distribution="model_parallel:8")
    except ValueError as error:
        found["layout"] = {"message": str(error)}
    try:
        get_distribution("model_parallel:3")
    except ValueError as error:
        found["mesh"] = {"message": str(error)}
    return found


def main(argv: list[str]) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("check", choices=("data_parallel", "model_parallel", "errors"))
    parser.add_argument("root", type=Path)
    parser.add_argument("out")
    parser.add_argument("--kinds", nargs="+", default=["classify"], choices=backend_fit.KINDS)
    parser.add_argument("--accumulation", type=int, default=1,
                        help="pretraining's micro-batches per update")
    parser.add_argument("--resume", action="store_true")
    args = parser.parse_args(argv)
    args.root.mkdir(parents=True, exist_ok=True)
    backend_fit.init(args.root, ["classify"] if args.check == "errors" else args.kinds)
    if args.check == "data_parallel":
        result = data_parallel(args.root, args.kinds, args.accumulation, args.resume)
    elif args.check == "model_parallel":
        result = model_parallel(args.root, args.kinds)
    else:
        result = errors(args.root)
    result = {"devices": len(keras.distribution.list_devices()), "results": result}
    with open(args.out, "w", encoding="utf-8") as f:
        json.dump(result, f)


if __name__ == "__main__":
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    main(sys.argv[1:])
