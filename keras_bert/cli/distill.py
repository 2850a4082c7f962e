"""`keras-bert distill`: knowledge distillation of a fine-tuned classifier into a small BERT."""

from __future__ import annotations

import json

from keras_bert.cli.options import add_rules_argument


def register(subparsers) -> None:
    """Adds the `distill` subcommand."""
    p = subparsers.add_parser(
        "distill", help="distill a fine-tuned classifier into a small BERT",
        description="Trains a freshly initialised BERT preset (the student, sharing the "
                    "teacher's vocabulary) on the teacher's soft targets at temperature T "
                    "mixed with the hard labels: alpha * CE + (1 - alpha) * T^2 * KL. Prints "
                    "teacher vs student accuracy and forward speed (sequences/s, same batch "
                    "and sequence length) and writes OUT/model, OUT/metrics.json, "
                    "OUT/curves.png.")
    p.add_argument("--teacher", required=True, help="fine-tuned classify model directory")
    p.add_argument("--student-preset", default="tiny",
                   choices=("tiny", "mini", "small", "medium"))
    p.add_argument("--train", required=True, help="training file (CSV, TSV or JSONL)")
    p.add_argument("--eval", help="evaluation file")
    p.add_argument("--out", required=True, help="output directory")
    p.add_argument("--temperature", type=float, default=2.0)
    p.add_argument("--alpha", type=float, default=0.5, help="weight of the hard-label loss")
    p.add_argument("--text-column", help="default: the teacher's")
    p.add_argument("--text-b-column", help="default: the teacher's")
    p.add_argument("--label-column", default="label")
    p.add_argument("--seq-length", type=int, help="default: the teacher's")
    add_rules_argument(p, "the teacher's")
    p.add_argument("--epochs", type=int, default=3)
    p.add_argument("--batch-size", type=int, default=32)
    p.add_argument("--learning-rate", type=float, default=1e-4)
    p.add_argument("--seed", type=int, default=12345)
    p.add_argument("--quiet", action="store_true", help="no progress bars")
    p.set_defaults(run=run)


def run(args) -> int:
    """Runs the distillation and prints the comparison."""
    from keras_bert.training.distill_job import DistillJob, format_comparison, run_distillation

    job = DistillJob(
        teacher=args.teacher, train=args.train, eval=args.eval, out=args.out, rules=args.rules,
        student_preset=args.student_preset, temperature=args.temperature, alpha=args.alpha,
        text_column=args.text_column, text_b_column=args.text_b_column,
        label_column=args.label_column, seq_length=args.seq_length, epochs=args.epochs,
        batch_size=args.batch_size, learning_rate=args.learning_rate, seed=args.seed,
        verbose=0 if args.quiet else 1)
    metrics = run_distillation(job)
    print(json.dumps(metrics, indent=2))
    print(format_comparison(metrics))
    return 0
