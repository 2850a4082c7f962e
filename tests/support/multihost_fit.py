"""One process of a multi-process JAX fine-tuning run: `keras-bert finetune`'s job
(`run_finetuning`) on a tiny BERT classifier, joined to the others through the job's own
host settings (`keras.distribution.initialize` under them), and what it saw:

    XLA_FLAGS=--xla_force_host_platform_device_count=4 KERAS_BACKEND=jax \\
        python -m tests.support.multihost_fit ROOT OUT RESULT.npz --distribution data_parallel \\
        --coordinator 127.0.0.1:PORT --num-processes 2 --process-id I [--kill-at STEP]
    ... ROOT OUT RESULT.npz --distribution none          (one process, one device)

ROOT holds `tests/support/backend_fit.py init`'s zero-dropout encoder, `train.csv` and
`eval.csv` (the test writes them before the processes start, so that none of them writes
there). RESULT
gets each step's running loss and the fitted weights; `--kill-at` stops the fit once the
optimizer has taken that many steps, as a kill would (its checkpoints stay).
"""

from __future__ import annotations

import argparse
import os
import sys

import numpy as np

from tests.support import backend_fit
from tests.support.callbacks import KillAt, Killed, StepLosses

EPOCHS = 2
BATCH = 8
CHECKPOINT_STEPS = 2


def main(argv: list[str]) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("root")
    parser.add_argument("out")
    parser.add_argument("result")
    parser.add_argument("--distribution", default="none")
    parser.add_argument("--coordinator")
    parser.add_argument("--num-processes", type=int)
    parser.add_argument("--process-id", type=int)
    parser.add_argument("--kill-at", type=int)
    parser.add_argument("--eval", action="store_true",
                        help="validate on ROOT/eval.csv after each epoch, and score it")
    args = parser.parse_args(argv)

    from keras_bert.jobs.finetune import FinetuneJob, run_finetuning

    steps = StepLosses()
    job = FinetuneJob(task="classify", model=os.path.join(args.root, "encoder"),
                      train=os.path.join(args.root, "train.csv"), out=args.out,
                      eval=os.path.join(args.root, "eval.csv") if args.eval else None,
                      seq_length=backend_fit.SEQ, epochs=EPOCHS, batch_size=BATCH,
                      learning_rate=backend_fit.LEARNING_RATE, dropout=0.0,
                      distribution=args.distribution, checkpoint_steps=CHECKPOINT_STEPS,
                      seed=5, verbose=0,
                      callbacks=[steps, *([KillAt(args.kill_at)] if args.kill_at else [])],
                      coordinator=args.coordinator, num_processes=args.num_processes,
                      process_id=args.process_id)
    import jax

    killed = False
    try:
        run_finetuning(job)
    except Killed:
        killed = True
    np.savez(args.result, losses=np.array(steps.losses), killed=killed,
             process=jax.process_index(), processes=jax.process_count(),
             devices=len(jax.devices()),
             **{f"w{i:03d}": np.asarray(w) for i, w in enumerate(steps.model.weights)})


if __name__ == "__main__":
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    main(sys.argv[1:])
