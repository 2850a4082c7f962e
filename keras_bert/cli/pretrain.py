"""`keras-bert pretrain`: pretrain BERT (MLM + NSP) with `model.fit`; resumes when restarted.

Its options are `keras_bert.jobs.pretrain.PretrainJob`'s fields."""

from __future__ import annotations

import json

from keras_bert.cli.options import add_job_options, job_from_args


def register(subparsers) -> None:
    """Adds the `pretrain` subcommand."""
    from keras_bert.jobs.pretrain import PretrainJob

    p = subparsers.add_parser(
        "pretrain", help="pretrain BERT with masked LM + next sentence prediction",
        description="Pretrains a BERT from raw text (NSP pairs and masks made on the fly, new "
                    "every epoch) or from create-pretraining-data TFRecords. Writes OUT/model "
                    "(a model directory for encode and fine-tuning), metrics.json, curves.png, "
                    "TensorBoard logs and checkpoints; started again with the same arguments "
                    "it resumes from the last checkpoint. Defaults: BERT-Tiny on the embedded "
                    "corpus with its 8k vocabulary. Large batches: --optimizer lamb, "
                    "--accumulation-steps; BERT's two phases: a run at --seq-length 128, then "
                    "--phase2-from its OUT at 512.")
    add_job_options(p, PretrainJob)
    p.set_defaults(run=run)


def run(args) -> int:
    """Runs the job and prints the final metrics."""
    from keras_bert.jobs.pretrain import PretrainJob, run_pretraining

    metrics = run_pretraining(job_from_args(PretrainJob, args))
    print(json.dumps(metrics, indent=2))
    print(f"model directory: {args.out}/model   curves: {args.out}/curves.png")
    return 0
