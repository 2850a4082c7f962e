"""`keras-bert finetune`: fine-tune a model directory on a task with `model.fit`."""

from __future__ import annotations

import json

from keras_bert.cli.options import add_checkpoint_arguments, add_rules_argument
from keras_bert.config import DEFAULT_SEQ_LENGTH

FINETUNE_TASK_NAMES = ("classify", "multilabel", "regress", "tag", "squad")
# keras_bert.text.sentence_windows' READING_MODES and AGGREGATIONS (checked as above).
LONG_TEXT_NAMES = ("truncate", "windows")
AGGREGATION_NAMES = ("mean", "max", "first")
PRECISION_NAMES = ("auto", "float32", "mixed_float16", "mixed_bfloat16")
PRECISION_HELP = ("Keras dtype policy; auto (default): mixed_bfloat16 on TPUs, GPUs of compute "
                  "capability 8.0+ and CPUs with AMX, mixed_float16 on older GPUs, float32 on "
                  "other CPUs")


def register(subparsers) -> None:
    """Adds the `finetune` subcommand."""
    p = subparsers.add_parser(
        "finetune", help="fine-tune a BERT model directory on a task",
        description="Fine-tunes a keras_bert model directory (from `convert` or `pretrain`) "
                    "with BERT's recipe (AdamW, 10%% warmup then linear decay). Tasks: "
                    "classify / regress (CSV, TSV or JSONL with a text column, optional "
                    "text-b column and a label column), multilabel (the same files, labels "
                    "'|'-separated or a JSONL list; per-label thresholds tuned on --eval), tag (CoNLL files: word first column, "
                    "tag last), squad (SQuAD v1.1/v2.0 JSON). Writes OUT/model (a fine-tuned "
                    "model directory for `predict` and `export`), OUT/metrics.json (eval "
                    "metrics), OUT/history.json and OUT/curves.png.")
    # The names of keras_bert.tasks.registry.FINETUNE_TASKS (not imported here: `--help`
    # loads no TensorFlow); tests/test_cli_text.py checks they agree.
    p.add_argument("--task", required=True, choices=FINETUNE_TASK_NAMES)
    p.add_argument("--model", required=True, help="keras_bert model directory to start from")
    p.add_argument("--train", required=True, help="training file")
    p.add_argument("--eval", help="evaluation file (its labels must be in the training set's)")
    p.add_argument("--out", required=True, help="output directory")
    p.add_argument("--text-column", default="text")
    p.add_argument("--text-b-column", help="second text of sentence-pair tasks")
    p.add_argument("--label-column", default="label")
    p.add_argument("--seq-length", type=int, default=DEFAULT_SEQ_LENGTH)
    p.add_argument("--epochs", type=int, default=3)
    p.add_argument("--batch-size", type=int, default=32)
    p.add_argument("--learning-rate", type=float, default=5e-5)
    p.add_argument("--warmup-fraction", type=float, default=0.1)
    p.add_argument("--weight-decay", type=float, default=0.01)
    p.add_argument("--dropout", type=float, help="head dropout (default: the model's, 0.1)")
    p.add_argument("--pooling", default="pooled", choices=("pooled", "cls", "mean"),
                   help="classify/regress: sequence vector under the head")
    p.add_argument("--max-query-length", type=int, help="squad (default min(64, seq/2))")
    p.add_argument("--doc-stride", type=int,
                   help="squad, tag, --long-text windows: how far windows over long texts "
                        "advance (default min(128, seq/2))")
    p.add_argument("--long-text", default="truncate", choices=LONG_TEXT_NAMES,
                   help="classify/multilabel/regress: a text longer than --seq-length is "
                        "truncated (BERT's way) or read in windows whose outputs are "
                        "aggregated, in training, evaluation, predict and the export")
    p.add_argument("--max-windows", type=int, default=8,
                   help="--long-text windows: the most windows read per text")
    p.add_argument("--window-aggregate", default="mean", choices=AGGREGATION_NAMES,
                   help="--long-text windows: how classify/multilabel combine the windows' "
                        "logits (regress: always the mean)")
    p.add_argument("--precision", default="auto", choices=PRECISION_NAMES,
                   help=PRECISION_HELP)
    add_checkpoint_arguments(p)
    add_rules_argument(p)
    p.add_argument("--seed", type=int, default=12345)
    p.add_argument("--quiet", action="store_true", help="no progress bars")
    p.set_defaults(run=run)


def run(args) -> int:
    """Runs the job and prints the metrics."""
    from keras_bert.task_models.finetune_job import FinetuneJob, run_finetuning

    job = FinetuneJob(
        task=args.task, model=args.model, train=args.train, eval=args.eval, out=args.out,
        text_column=args.text_column, text_b_column=args.text_b_column,
        label_column=args.label_column, seq_length=args.seq_length, epochs=args.epochs,
        batch_size=args.batch_size, learning_rate=args.learning_rate,
        warmup_fraction=args.warmup_fraction, weight_decay=args.weight_decay,
        dropout=args.dropout, pooling=args.pooling, max_query_length=args.max_query_length,
        doc_stride=args.doc_stride, long_text=args.long_text, max_windows=args.max_windows,
        window_aggregate=args.window_aggregate, precision=args.precision, seed=args.seed,
        checkpoint_steps=args.checkpoint_steps, checkpoint_minutes=args.checkpoint_minutes,
        rules=args.rules,
        verbose=0 if args.quiet else 1)
    metrics = run_finetuning(job)
    print(json.dumps(metrics, indent=2))
    print(f"model directory: {args.out}/model   curves: {args.out}/curves.png")
    return 0
