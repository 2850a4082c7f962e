"""Fits every task kind under a `tf.distribute` strategy and on one device, in ONE process per
mode, and writes what each run saw, so that tests can hold TensorFlow's strategies to one
device's answers:

    python -m tests.support.strategy_fit mirrored ROOT OUT [--kinds classify ...]
    python -m tests.support.strategy_fit worker ROOT OUT --index I --ports P0 P1 [--kinds ...]

`mirrored` configures 2 logical CPU devices before TensorFlow starts and fits each kind
twice: on one device (the default strategy) and under `MirroredStrategy` over both, writing
`OUT/one/<kind>.npz` and `OUT/mirrored/<kind>.npz`. `worker` is process I of a
`MultiWorkerMirroredStrategy` of two on 127.0.0.1 (`TF_CONFIG` from the ports), writing
`OUT/worker<I>/<kind>.npz`.

Each run is what a Keras user writes: the model loaded inside `strategy.scope()`, then
`fit` on raw strings with validation data, `evaluate`, `predict` and `save` outside it.
ROOT holds `tests/support/backend_fit.py init`'s starting models (tiny BERT, no dropout);
`mirrored` writes them when missing, the workers read them. The optimizer is BERT's AdamW
without clipping: Keras clips each replica's gradients before they are summed (as the
original BERT did on TPUs), so with clipping active one device and many legitimately
differ.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path

MODES = ("mirrored", "worker")
EPOCHS = 2
BATCH = 8  # the global batch: each of 2 replicas computes on 4 rows
HELD_OUT = 13  # validation and evaluation rows: a partial last batch, split 3 + 2


def _configure(mode: str, index: int | None, ports: list[int] | None) -> None:
    """What must be set before TensorFlow starts its runtime: the cluster of a worker, or
    the 2 logical CPU devices of `mirrored`."""
    if mode == "worker":
        os.environ["TF_CONFIG"] = json.dumps({
            "cluster": {"worker": [f"127.0.0.1:{p}" for p in ports]},
            "task": {"type": "worker", "index": index}})
        return
    import tensorflow as tf

    cpu = tf.config.list_physical_devices("CPU")[0]
    tf.config.set_logical_device_configuration(
        cpu, [tf.config.LogicalDeviceConfiguration()] * 2)


def fit_once(kind: str, root: Path, strategy, save: Path | None = None) -> dict:
    """One fit of `kind`, its model loaded in `strategy`'s scope; its step losses,
    validation losses, final weights, answers and evaluation (floats only)."""
    import numpy as np

    from keras_bert.tasks.task_model import TextTaskModel
    from keras_bert.training import create_optimizer
    from tests.support import backend_fit
    from tests.support.callbacks import StepLosses

    x, y = backend_fit.data(kind, root)
    steps = -(-len(x) // BATCH) * EPOCHS
    with strategy.scope():  # the optimizer's variables too, as Keras asks
        model = TextTaskModel.load(str(root / kind))
        model.compile(optimizer=create_optimizer(backend_fit.LEARNING_RATE, steps,
                                                 warmup_steps=1, clip_global_norm=None))
    losses = StepLosses()
    held_out = (x[:HELD_OUT], None if y is None else y[:HELD_OUT])
    history = model.fit(x, y, batch_size=BATCH, epochs=EPOCHS, seed=5, verbose=0,
                        callbacks=[losses],
                        validation_data=held_out[0] if kind == "embed" else held_out)
    evaluation = model.evaluate(*((held_out[0],) if kind == "embed" else held_out))
    answers = backend_fit.answers(kind, model, x)
    if save is not None:
        model.save(str(save))
    found = {"losses": np.array(losses.losses),
             "val_loss": np.array(history.history["val_loss"]),
             "replicas": np.array(model.distribute_strategy.num_replicas_in_sync)}
    found.update({f"weight:{i}": np.asarray(w) for i, w in enumerate(model.network.weights)})
    found.update({f"answer:{k}": np.asarray(v) for k, v in answers.items()
                  if np.asarray(v).dtype.kind == "f"})
    found.update({f"evaluation:{k}": np.array(v) for k, v in evaluation.items()
                  if isinstance(v, float)})
    return found


def read_run(path: Path) -> dict:
    """A run written by `fit_once` as `tests/support/distributed_fit.differences` takes it
    (plus `val_loss` and `replicas`)."""
    import numpy as np

    with np.load(path) as data:
        found = {name: data[name] for name in data.files}
    weights = sorted((k for k in found if k.startswith("weight:")),
                     key=lambda k: int(k.split(":")[1]))
    return {"losses": found["losses"], "val_loss": found["val_loss"],
            "replicas": int(found["replicas"]), "weights": [found[k] for k in weights],
            "answers": {k[7:]: v for k, v in found.items() if k.startswith("answer:")},
            "evaluation": {k[11:]: float(v) for k, v in found.items()
                           if k.startswith("evaluation:")}}


def run(mode: str, root: Path, out: Path, kinds: list[str], index: int | None) -> None:
    """Fits `kinds` under `mode`'s strategy (and, for `mirrored`, on one device first)."""
    import numpy as np
    import tensorflow as tf

    from keras_bert.training import get_strategy
    from tests.support import backend_fit

    # A MultiWorkerMirroredStrategy must exist before any collective runs.
    strategy = get_strategy("multi_worker" if mode == "worker" else "mirrored")
    if mode == "mirrored":  # the workers read what this wrote
        backend_fit.init(root, kinds)
    runs = ([("one", tf.distribute.get_strategy()), ("mirrored", strategy)]
            if mode == "mirrored" else [(f"worker{index}", strategy)])
    for name, chosen in runs:
        (out / name).mkdir(parents=True, exist_ok=True)
        for kind in kinds:
            save = out / "saved" / kind if name == "mirrored" else None
            np.savez(out / name / f"{kind}.npz", **fit_once(kind, root, chosen, save))


def main(argv: list[str]) -> None:
    from tests.support.backend_fit import KINDS

    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("mode", choices=MODES)
    parser.add_argument("root", type=Path)
    parser.add_argument("out", type=Path)
    parser.add_argument("--kinds", nargs="+", default=[k for k in KINDS if k != "pretrain"])
    parser.add_argument("--index", type=int, help="this worker's number (worker)")
    parser.add_argument("--ports", nargs=2, type=int, help="the two workers' ports (worker)")
    args = parser.parse_args(argv)
    _configure(args.mode, args.index, args.ports)
    args.root.mkdir(parents=True, exist_ok=True)
    run(args.mode, args.root, args.out, args.kinds, args.index)


if __name__ == "__main__":
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    main(sys.argv[1:])
