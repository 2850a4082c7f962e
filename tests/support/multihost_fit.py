"""One process of a multi-process JAX training run: `keras-bert finetune`'s job
(`run_finetuning`) on a tiny BERT classifier, or with `--job pretrain` `keras-bert
pretrain`'s (`run_pretraining`, `TextPretrainer.fit` on TFRecords), joined to the others
through the job's own host settings (`keras.distribution.initialize` under them), and what
it saw:

    XLA_FLAGS=--xla_force_host_platform_device_count=4 KERAS_BACKEND=jax \\
        python -m tests.support.multihost_fit ROOT OUT RESULT.npz --distribution data_parallel \\
        --coordinator 127.0.0.1:PORT --num-processes 2 --process-id I [--kill-at STEP] \\
        [--job pretrain [--accumulation-steps K] [--corpus]]
    ... ROOT OUT RESULT.npz --distribution none          (one process, one device)

ROOT holds `tests/support/backend_fit.py init`'s zero-dropout encoder, `train.csv` and
`eval.csv`; for pretraining its zero-dropout `pretrain/` model, `records/` (TFRecords of
6 Moby Dick chapters) and `corpus/moby.txt` (12 chapters, as documents: `--corpus` trains
on them, 2 held out), all written by the test before the processes start, so that none of
them writes there. RESULT gets each step's running loss, the fitted weights and the batch size
of each stream Keras' `distribute_dataset` handed this process (`batches`: training first,
then validation); `--kill-at` stops the fit once the optimizer has taken that many steps,
as a kill would (its checkpoints stay).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path

import numpy as np

from tests.support import backend_fit
from tests.support.callbacks import KillAt, Killed, StepLosses

EPOCHS = 2
BATCH = 8
CHECKPOINT_STEPS = 2
# Pretraining: 3 epochs of 2 updates (the job checkpoints at each epoch's end), validated on
# the first 3 batches of the records, which are made at the fine-tuning's sequence length.
PRETRAIN_STEPS = 6
PRETRAIN_EPOCH_STEPS = 2
PRETRAIN_EVAL_STEPS = 3
MAX_PREDICTIONS = 4


def write_records(root: Path) -> list[str]:
    """ROOT/pretrain (the zero-dropout pretrainer) and ROOT/records/train-*: the pretraining
    examples of 6 Moby Dick chapters in 2 TFRecord files, as `create-pretraining-data`
    writes them; returns their paths."""
    from keras_bert import TextPretrainer
    from keras_bert.data.corpus import guess_format, read_documents
    from keras_bert.pretraining.dataset import PretrainingOptions
    from keras_bert.pretraining.record_writer import write_pretraining_records
    from tests.support.tiny_data import moby_chapters

    backend_fit.init(root, kinds=["pretrain"])
    tokenizer = TextPretrainer.from_pretrained(str(root / "pretrain"), seq_length=backend_fit.SEQ,
                                               precision="float32").tokenizer
    corpus = moby_chapters(root, 6)
    options = PretrainingOptions(seq_length=backend_fit.SEQ, max_predictions=MAX_PREDICTIONS,
                                 seed=3)
    paths, _ = write_pretraining_records(list(read_documents(corpus, guess_format(corpus))),
                                         tokenizer, str(root / "records" / "train"),
                                         num_shards=2, options=options)
    return paths


def _spy_on_batches(seen: set) -> None:
    """Adds to `seen` each `(this process's rows, the global batch's rows)` that Keras' JAX
    trainer assembles a step's input from (training and validation): what each process fed
    the step, which equal losses alone cannot show (a process that fed the whole batch
    rather than its slice would make every example count twice, and the same mean)."""
    from keras.src.backend import distribution_lib

    assemble = distribution_lib.distribute_data_input

    def distribute_data_input(per_process_batch, layout, batch_dim_name):
        global_batch = assemble(per_process_batch, layout, batch_dim_name)
        seen.add((int(per_process_batch.shape[0]), int(global_batch.shape[0])))
        return global_batch

    distribution_lib.distribute_data_input = distribute_data_input


def _finetune(args, callbacks: list):
    from keras_bert.jobs.finetune import FinetuneJob, run_finetuning

    return run_finetuning, FinetuneJob(
        task="classify", model=os.path.join(args.root, "encoder"),
        train=os.path.join(args.root, "train.csv"), out=args.out,
        eval=os.path.join(args.root, "eval.csv") if args.eval else None,
        seq_length=backend_fit.SEQ, epochs=EPOCHS, batch_size=BATCH,
        learning_rate=backend_fit.LEARNING_RATE, dropout=0.0,
        distribution=args.distribution, checkpoint_steps=CHECKPOINT_STEPS, seed=5,
        verbose=0, callbacks=callbacks, coordinator=args.coordinator,
        num_processes=args.num_processes, process_id=args.process_id)


def _pretrain(args, callbacks: list):
    from keras_bert.jobs.pretrain import PretrainJob, run_pretraining

    return run_pretraining, PretrainJob(
        out=args.out, init=os.path.join(args.root, "pretrain"),
        corpus=[os.path.join(args.root, "corpus", "moby.txt")] if args.corpus else None,
        tfrecords=None if args.corpus else os.path.join(args.root, "records", "train-*"),
        seq_length=backend_fit.SEQ, max_predictions=MAX_PREDICTIONS, steps=PRETRAIN_STEPS,
        steps_per_epoch=PRETRAIN_EPOCH_STEPS, eval_steps=PRETRAIN_EVAL_STEPS,
        batch_size=BATCH, learning_rate=backend_fit.LEARNING_RATE, precision="float32",
        distribution=args.distribution, seed=5, verbose=0, callbacks=callbacks,
        coordinator=args.coordinator, num_processes=args.num_processes,
        process_id=args.process_id, accumulation_steps=args.accumulation_steps)


def main(argv: list[str]) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("root")
    parser.add_argument("out")
    parser.add_argument("result")
    parser.add_argument("--job", choices=("finetune", "pretrain"), default="finetune")
    parser.add_argument("--distribution", default="none")
    parser.add_argument("--coordinator")
    parser.add_argument("--num-processes", type=int)
    parser.add_argument("--process-id", type=int)
    parser.add_argument("--kill-at", type=int)
    parser.add_argument("--accumulation-steps", type=int, default=1,
                        help="pretraining: micro-batches of BATCH per update")
    parser.add_argument("--corpus", action="store_true",
                        help="pretraining: on ROOT/corpus/moby.txt, not the TFRecords")
    parser.add_argument("--eval", action="store_true",
                        help="fine-tuning: validate on ROOT/eval.csv after each epoch, and "
                             "score it (pretraining validates on the records' first batches)")
    args = parser.parse_args(argv)

    steps, seen = StepLosses(), set()
    callbacks = [steps, *([KillAt(args.kill_at)] if args.kill_at else [])]
    run, job = (_pretrain if args.job == "pretrain" else _finetune)(args, callbacks)
    import jax

    _spy_on_batches(seen)
    killed = False
    try:
        run(job)
    except Killed:
        killed = True
    # Each weight's shard shapes on this process's devices (what a layout laid out).
    shards = {w.path: [list(s.data.shape) for s in w.value.addressable_shards]
              for w in steps.model.weights}
    np.savez(args.result, losses=np.array(steps.losses), killed=killed,
             shards=json.dumps(shards),
             process=jax.process_index(), processes=jax.process_count(),
             devices=len(jax.devices()), batches=np.array(sorted(seen), np.int64).reshape(-1, 2),
             **{f"w{i:03d}": np.asarray(w) for i, w in enumerate(steps.model.weights)})


if __name__ == "__main__":
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    main(sys.argv[1:])
