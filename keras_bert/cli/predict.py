"""`keras-bert predict MODEL_DIR --input FILE|-`: one JSON object per input row.

Inputs by task (the model directory's `task` block says which):

* classify / multilabel / regress: a CSV, TSV or JSONL file with the text column(s) the model
  was trained on (a label column, if any, is ignored), or `-`: one text per stdin line (pair
  tasks: `text<TAB>text_b`). Output `{"label", "probabilities"}` /
  `{"labels": [...], "scores": {label: probability}}` / `{"score"}`.
* tag: a CoNLL file (`.conll`, `.txt`: word in the first column, blank line between
  sentences), a CSV/TSV/JSONL text column, or `-` (one sentence per line); words are split on
  whitespace. Output `{"tokens": [...], "tags": [...]}`, one tag per word.
* squad: a JSONL file (or `-`) of `{"question", "context"[, "id"]}` objects, or a SQuAD JSON
  file. Output `{"id", "answer", "start", "end", "score"}` (character offsets in the
  context; answer "" when nothing is found).

The answers are computed by the functions the model's export serves (its task kind's
serving module around its own preprocessor), run in this process: `predict` and the
export answer alike. A long text is read in windows, so every word of it is tagged.
"""

from __future__ import annotations

import json
import sys

from keras_bert.cli.options import add_rules_argument


def register(subparsers) -> None:
    """Adds the `predict` subcommand."""
    p = subparsers.add_parser(
        "predict", help="predict with a fine-tuned model directory",
        description=__doc__.split("\n\n", 1)[1], formatter_class=_raw_formatter())
    p.add_argument("model_dir", help="fine-tuned model directory (`keras-bert finetune` OUT/model)")
    p.add_argument("--input", required=True, help="input file, or - for stdin")
    p.add_argument("--text-column", help="default: the one the model was trained with")
    p.add_argument("--text-b-column", help="default: the one the model was trained with")
    p.add_argument("--seq-length", type=int,
                   help="truncation length (default: the training sequence length)")
    p.add_argument("--batch-size", type=int, default=32)
    p.add_argument("--precision", choices=("float32", "bfloat16", "float16"),  # as export's
                   help="matmul precision (default: the one the model was saved in, as its "
                        "export computes)")
    add_rules_argument(p, "the rules the model was trained with")
    p.set_defaults(run=run)


def _raw_formatter():
    import argparse

    return argparse.RawDescriptionHelpFormatter


def run(args) -> int:
    """Loads the model, answers every input row with its export's functions (run in this
    process) and writes JSON lines to stdout."""
    from keras_bert.export.exporter import EXPORT_PRECISIONS
    from keras_bert.tasks.task_model import TextTaskModel

    model = TextTaskModel.load(args.model_dir, rules=args.rules,
                               precision=EXPORT_PRECISIONS.get(args.precision))
    # `--seq-length`: the truncation length of this run's answers (else the training one).
    for result in model.answer_file(args.input, args.batch_size, args.text_column,
                                    args.text_b_column, max_length=args.seq_length or None):
        sys.stdout.write(json.dumps(result) + "\n")
    sys.stdout.flush()
    return 0
