"""`keras-bert-query TEXT...` (and `keras-bert query`, the same command): ask a model
served by TF Serving or `keras-bert serve`; one JSON object per text (with `--context`,
each TEXT is a question for a span-QA model)."""

from __future__ import annotations

import argparse
import base64
import json
import sys

DESCRIPTION = ("Sends raw texts to a model served by TensorFlow Serving or `keras-bert serve` "
               "and prints one JSON object of named outputs per text (or, with "
               "--status/--metadata, the model's status or signatures).")


def add_arguments(p: argparse.ArgumentParser) -> None:
    """The command's arguments, on `p`."""
    p.add_argument("texts", nargs="*", metavar="TEXT", help="texts to send")
    p.add_argument("--server", default=None,
                   help="HOST:PORT (default 127.0.0.1:8500, or 127.0.0.1:8501 with --rest)")
    p.add_argument("--model-name", default="bert", help="the served model's name (default bert)")
    p.add_argument("--rest", action="store_true", help="use the REST API instead of gRPC")
    p.add_argument("--signature", default="serving_default",
                   help="signature name (default serving_default)")
    p.add_argument("--version", type=int, help="model version (default: the latest)")
    p.add_argument("--text-b", action="append",
                   help="second segment for pair tasks (once per TEXT, in order)")
    p.add_argument("--context", action="append",
                   help="span-QA models: each TEXT is a question about this context (once "
                        "for all TEXTs, or once per TEXT, in order)")
    p.add_argument("--timeout", type=float, default=30.0, help="seconds per request")
    p.add_argument("--status", action="store_true", help="print the model's version status")
    p.add_argument("--metadata", action="store_true", help="print the model's signatures")


def _json_default(value):
    if isinstance(value, bytes):
        return {"b64": base64.b64encode(value).decode("ascii")}
    raise TypeError(f"{type(value).__name__} is not JSON serializable")


def run(args) -> int:
    """Queries the server and prints JSON lines; server errors exit with status 1."""
    from keras_bert_client import GrpcClient, RestClient, ServerError, rows

    if not (args.texts or args.status or args.metadata):
        raise ValueError("give at least one TEXT (or --status / --metadata)")
    if args.rest:
        client = RestClient(args.server or "127.0.0.1:8501", args.model_name, args.timeout)
    else:
        client = GrpcClient(args.server or "127.0.0.1:8500", args.model_name, args.timeout)
    try:
        if args.status:
            print(json.dumps(client.status(args.version)))
        if args.metadata:
            print(json.dumps(client.metadata(args.version)))
        if args.texts and args.context:
            contexts = args.context * len(args.texts) if len(args.context) == 1 \
                else args.context
            if len(contexts) != len(args.texts):
                raise ValueError(f"{len(args.context)} --context for {len(args.texts)} "
                                 "questions: give one, or one per question")
            columns = client.predict_columns({"question": args.texts, "context": contexts},
                                             args.signature, args.version)
            for row in rows(columns, len(args.texts)):
                print(json.dumps(row, default=_json_default))
        elif args.texts:
            for row in client.predict(args.texts, args.text_b, args.signature, args.version):
                print(json.dumps(row, default=_json_default))
    except ServerError as e:
        print(f"{args.prog}: {e}", file=sys.stderr)
        return 1
    finally:
        client.close()
    return 0


def main(argv: list[str] | None = None) -> int:
    """Entry point of the `keras-bert-query` console script: bad arguments or a failure
    end it with one line on stderr (exit status 2)."""
    parser = argparse.ArgumentParser(prog="keras-bert-query", description=DESCRIPTION)
    add_arguments(parser)
    args = parser.parse_args(argv)
    args.prog = parser.prog
    try:
        return run(args)
    except (ValueError, OSError, ModuleNotFoundError) as e:
        print(f"{parser.prog}: error: {e}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
