"""`keras-bert distill`: knowledge distillation of a fine-tuned classifier into a small BERT.

Its options are `keras_bert.jobs.distill.DistillJob`'s fields, plus `--quiet`."""

from __future__ import annotations

import json

from keras_bert.cli.options import add_job_options, job_from_args


def register(subparsers) -> None:
    """Adds the `distill` subcommand."""
    from keras_bert.jobs.distill import DistillJob

    p = subparsers.add_parser(
        "distill", help="distill a fine-tuned classifier into a small BERT",
        description="Trains a freshly initialised BERT preset (the student, sharing the "
                    "teacher's vocabulary) on the teacher's soft targets at temperature T "
                    "mixed with the hard labels: alpha * CE + (1 - alpha) * T^2 * KL. Prints "
                    "teacher vs student accuracy and forward speed (sequences/s, same batch "
                    "and sequence length) and writes OUT/model, OUT/metrics.json, "
                    "OUT/curves.png.")
    add_job_options(p, DistillJob)
    p.add_argument("--quiet", action="store_true", help="no progress bars")
    p.set_defaults(run=run)


def run(args) -> int:
    """Runs the distillation and prints the comparison."""
    from keras_bert.jobs.distill import DistillJob, format_comparison, run_distillation

    metrics = run_distillation(job_from_args(DistillJob, args, verbose=0 if args.quiet else 1))
    print(json.dumps(metrics, indent=2))
    print(format_comparison(metrics))
    return 0
