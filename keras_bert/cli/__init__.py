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
    quickstart,
    serve,
    tokenize,
)
from keras_bert.cli.quiet_start import load_tensorflow

COMMANDS = (quickstart, convert, encode, tokenize, build_vocab, create_pretraining_data,
            pretrain, finetune, predict, distill, export, serve, query, audit, attention)


VERSIONED = ("keras-bert-tf", "keras-bert-client", "tensorflow", "tensorflow-text", "keras")


def versions_line() -> str:
    """`keras-bert-tf X, tensorflow Y, tensorflow-text Z, keras W`: the installed versions
    (read from the installed distributions, without loading TensorFlow)."""
    from importlib import metadata

    parts = []
    for name in VERSIONED:
        try:
            parts.append(f"{name} {metadata.version(name)}")
        except metadata.PackageNotFoundError:
            parts.append(f"{name} not installed")
    return ", ".join(parts)


class _PrintVersions(argparse.Action):
    def __init__(self, option_strings, dest, **kwargs):
        super().__init__(option_strings, dest, nargs=0, help=(
            "print the versions of keras-bert, its client, TensorFlow, TF Text and Keras, "
            "and exit"))

    def __call__(self, parser, namespace, values, option_string=None):
        print(versions_line())
        parser.exit()


def build_parser() -> argparse.ArgumentParser:
    """The argument parser with every subcommand."""
    parser = argparse.ArgumentParser(
        prog="keras-bert", description="BERT in Keras 3: convert, encode, train, export, serve.",
        epilog="TensorFlow's start-up messages are held back unless they name a problem; "
               "--debug or KERAS_BERT_TF_LOGS=1 shows them all.")
    parser.add_argument("--version", action=_PrintVersions)
    parser.add_argument("--debug", action="store_true",
                        help="show the full traceback of an error (default: one line) and "
                             "TensorFlow's own start-up messages")
    parser.set_defaults(needs_tensorflow=lambda args: True)
    subparsers = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for command in COMMANDS:
        command.register(subparsers)
    return parser


def main(argv: list[str] | None = None) -> int:
    """Entry point of the `keras-bert` console script.

    An error ends the command with one line on stderr naming the problem: exit status 2
    for bad arguments, files or data, 1 for anything else; `--debug` re-raises it with
    its traceback.
    """
    args = build_parser().parse_args(argv)
    try:
        if args.needs_tensorflow(args):
            load_tensorflow(quiet=not args.debug)
        return args.run(args) or 0
    except KeyboardInterrupt:
        print(f"keras-bert {args.command}: interrupted", file=sys.stderr)
        return 130
    except Exception as e:  # noqa: BLE001 -- the one place errors become messages
        if args.debug:
            raise
        print(f"keras-bert {args.command}: error: {error_message(e)}", file=sys.stderr)
        return 2 if _is_user_error(e) else 1


def error_message(error: BaseException) -> str:
    """One line naming `error`: its message (a TensorFlow error's first line, without the
    graph trace), prefixed with its type where the message alone would not say it."""
    message = getattr(error, "message", None) or str(error)
    message = " ".join(message.strip().splitlines()[:1]) or repr(error)
    if isinstance(error, (ValueError, FileNotFoundError, FileExistsError)):
        return message
    return f"{type(error).__name__}: {message}"


def _is_user_error(error: BaseException) -> bool:
    """Bad arguments, files or data (as opposed to a failure of this program)."""
    if isinstance(error, (ValueError, OSError, LookupError)):
        return True
    # TensorFlow's errors in a command come from its inputs: files, shapes, values.
    return (type(error).__module__ or "").startswith("tensorflow")


if __name__ == "__main__":
    sys.exit(main())
