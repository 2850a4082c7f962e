"""`keras-bert tokenize --vocab V [--cased] [--rules R]`: text lines on stdin -> ids."""

from __future__ import annotations

import sys

from keras_bert.cli.options import add_rules_argument


def register(subparsers) -> None:
    """Adds the `tokenize` subcommand."""
    p = subparsers.add_parser(
        "tokenize", help="WordPiece-tokenize text lines from stdin",
        description="Reads UTF-8 lines on stdin and writes one line of space-separated token "
                    "ids per input line (an empty line for an empty input line).")
    source = p.add_mutually_exclusive_group(required=True)
    source.add_argument("--vocab", help="vocab.txt (one token per line)")
    source.add_argument("--model", help="a keras_bert model directory (its vocab and casing)")
    p.add_argument("--cased", action="store_true",
                   help="keep case and accents (default with --vocab: uncased)")
    add_rules_argument(p, "the model's own with --model, google with --vocab")
    p.add_argument("--tokens", action="store_true", help="print tokens instead of ids")
    p.add_argument("--preserve-special-tokens", action="store_true",
                   help="keep [MASK], [SEP], ... written in the text as single tokens")
    p.add_argument("--batch-size", type=int, default=1024)
    p.set_defaults(run=run)


def run(args) -> int:
    """Tokenizes stdin in batches and streams the ids to stdout."""
    import tensorflow as tf

    if args.model:
        from keras_bert.checkpoints import load_model_dir

        tokenizer = load_model_dir(args.model).with_rules(args.rules).tokenizer(
            preserve_special_tokens=args.preserve_special_tokens)
    else:
        from keras_bert.text import BertTokenizer

        tokenizer = BertTokenizer(args.vocab, lower_case=not args.cased,
                                  preserve_special_tokens=args.preserve_special_tokens,
                                  rules=args.rules or "google")
    vocab = tokenizer.vocab if args.tokens else None

    def flush(lines):
        for row in tokenizer.tokenize(tf.constant(lines)).to_list():
            words = (vocab[i] for i in row) if vocab else map(str, row)
            sys.stdout.write(" ".join(words) + "\n")

    batch = []
    for line in sys.stdin.buffer:
        batch.append(line.rstrip(b"\r\n"))
        if len(batch) == args.batch_size:
            flush(batch)
            batch = []
    if batch:
        flush(batch)
    sys.stdout.flush()
    return 0
