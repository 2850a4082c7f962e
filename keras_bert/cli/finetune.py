"""`keras-bert finetune`: fine-tune a model directory on a task with `model.fit`.

Its options are `keras_bert.jobs.finetune.FinetuneJob`'s fields (names, defaults, choices
and help written there once), plus `--quiet`."""

from __future__ import annotations

import json

from keras_bert.cli.options import add_job_options, job_from_args


def register(subparsers) -> None:
    """Adds the `finetune` subcommand."""
    from keras_bert.jobs.finetune import FinetuneJob

    p = subparsers.add_parser(
        "finetune", help="fine-tune a BERT model directory on a task",
        description="Fine-tunes a keras_bert model directory (from `convert` or `pretrain`) "
                    "with BERT's recipe (AdamW, 10%% warmup then linear decay). Tasks: "
                    "classify / regress (CSV, TSV or JSONL with a text column, optional "
                    "text-b column and a label column), multilabel (the same files, labels "
                    "'|'-separated or a JSONL list; per-label thresholds tuned on --eval), "
                    "tag (CoNLL files: word first column, tag last), squad (SQuAD v1.1/v2.0 "
                    "JSON). Writes OUT/model (a fine-tuned model directory for `predict` and "
                    "`export`), OUT/metrics.json (eval metrics), OUT/history.json and "
                    "OUT/curves.png.")
    add_job_options(p, FinetuneJob)
    p.add_argument("--quiet", action="store_true", help="no progress bars")
    p.set_defaults(run=run)


def run(args) -> int:
    """Runs the job and prints the metrics."""
    from keras_bert.jobs.finetune import FinetuneJob, run_finetuning

    metrics = run_finetuning(job_from_args(FinetuneJob, args, verbose=0 if args.quiet else 1))
    print(json.dumps(metrics, indent=2))
    print(f"model directory: {args.out}/model   curves: {args.out}/curves.png")
    return 0
