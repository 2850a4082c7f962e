"""`keras-bert encode MODEL_DIR`: text lines on stdin -> one JSON array of floats per line."""

from __future__ import annotations

import json
import sys

from keras_bert.cli.options import add_rules_argument


def register(subparsers) -> None:
    """Adds the `encode` subcommand."""
    p = subparsers.add_parser(
        "encode", help="embed text lines from stdin",
        description="Reads UTF-8 text lines on stdin and writes one JSON array of floats per "
                    "line (an empty line gives the embedding of the empty text; bytes that "
                    "are not UTF-8 are dropped, as in `tokenize` and Google's tokenizer).")
    p.add_argument("model_dir", help="keras_bert model directory (see `keras-bert convert`)")
    p.add_argument("--pooling", choices=("pooled", "cls", "mean"), default="pooled",
                   help="pooled output (default), last layer at [CLS], or masked mean")
    p.add_argument("--seq-length", type=int, default=128,
                   help="longest sequence; longer texts are truncated (default 128)")
    p.add_argument("--batch-size", type=int, default=32)
    add_rules_argument(p)
    p.set_defaults(run=run)


def run(args) -> int:
    """Encodes stdin in batches and streams JSON lines to stdout."""
    from keras_bert.checkpoints import load_model_dir
    from keras_bert.text_embedder import TextEmbedder

    model_dir = load_model_dir(args.model_dir).with_rules(args.rules)
    embedder = TextEmbedder(model_dir.load_encoder(), model_dir.preprocessor(),
                            seq_length=args.seq_length, pooling=args.pooling)
    batch = []
    # Bytes: ill-formed UTF-8 is handled as `tokenize` does (a text stdin in tests).
    for line in getattr(sys.stdin, "buffer", sys.stdin):
        batch.append(line.rstrip(b"\r\n" if isinstance(line, bytes) else "\r\n"))
        if len(batch) == args.batch_size:
            _write(embedder(batch))
            batch = []
    if batch:
        _write(embedder(batch))
    return 0


def _write(vectors) -> None:
    for vector in vectors.tolist():
        sys.stdout.write(json.dumps(vector) + "\n")
    sys.stdout.flush()
