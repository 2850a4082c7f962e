"""`keras-bert query TEXT...`: `keras_bert_client.query`, the command the TensorFlow-free
client installs as `keras-bert-query`; neither loads TensorFlow."""

from __future__ import annotations

from keras_bert_client import query


def register(subparsers) -> None:
    """Adds the `query` subcommand."""
    p = subparsers.add_parser("query", help="query a served model over gRPC or REST",
                              description=query.DESCRIPTION)
    query.add_arguments(p)
    p.set_defaults(run=query.run, prog="keras-bert query",
                   needs_tensorflow=lambda args: False)
