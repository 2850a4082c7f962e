"""`keras-bert build-vocab`: learn a WordPiece vocabulary from a corpus."""

from __future__ import annotations

import time

from keras_bert.cli.create_pretraining_data import add_corpus_arguments, documents_from_args
from keras_bert.cli.options import add_rules_argument


def register(subparsers) -> None:
    """Adds the `build-vocab` subcommand."""
    p = subparsers.add_parser(
        "build-vocab", help="learn a WordPiece vocab.txt from a corpus",
        description="Splits the corpus into words exactly as the tokenizer does, counts them "
                    "and learns a WordPiece vocabulary with TF Text's learner. Special tokens "
                    "come first. Without --input, the embedded corpus is used.")
    add_corpus_arguments(p)
    p.add_argument("--output", required=True, help="vocab.txt to write")
    p.add_argument("--vocab-size", type=int, default=8000)
    p.add_argument("--cased", action="store_true", help="keep case and accents")
    add_rules_argument(p, "google")
    p.add_argument("--unused", type=int, default=0,
                   help="number of [unusedN] tokens to reserve (Google's vocabs have 994)")
    p.add_argument("--min-count", type=int, default=2,
                   help="pieces rarer than this are not learned")
    p.set_defaults(run=run)


def run(args) -> int:
    """Learns and writes the vocabulary."""
    from keras_bert.text.vocab_builder import build_vocab, save_vocab

    start = time.perf_counter()
    documents = documents_from_args(args)
    lines = [sentence for doc in documents for sentence in doc]
    print(f"learning from {len(lines)} sentences ({'cased' if args.cased else 'uncased'})")
    vocab = build_vocab(lines, args.vocab_size, lower_case=not args.cased,
                        num_unused=args.unused, min_count=args.min_count,
                        rules=args.rules or "google")
    save_vocab(vocab, args.output)
    print(f"wrote {len(vocab)} tokens to {args.output} in {time.perf_counter() - start:.1f}s")
    return 0
