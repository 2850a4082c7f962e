"""The `keras-bert` command line: one module per subcommand, each with `register(subparsers)`."""

from __future__ import annotations

import argparse
import sys

from keras_bert.cli import (
    attention,
    audit,
    build_vocab,
    convert,
    create_pretraining_data,
    distill,
    encode,
    export,
    finetune,
    predict,
    pretrain,
    query,
    serve,
    tokenize,
)

COMMANDS = (convert, encode, tokenize, build_vocab, create_pretraining_data, pretrain,
            finetune, predict, distill, export, serve, query, audit, attention)


def build_parser() -> argparse.ArgumentParser:
    """The argument parser with every subcommand."""
    parser = argparse.ArgumentParser(
        prog="keras-bert", description="BERT in Keras 3: convert, encode, train, export, serve.")
    subparsers = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for command in COMMANDS:
        command.register(subparsers)
    return parser


def main(argv: list[str] | None = None) -> int:
    """Entry point of the `keras-bert` console script."""
    args = build_parser().parse_args(argv)
    try:
        return args.run(args) or 0
    except (ValueError, FileNotFoundError, FileExistsError) as e:
        print(f"keras-bert {args.command}: error: {e}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
