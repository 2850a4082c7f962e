"""`keras-bert encode MODEL_DIR`: text lines on stdin -> one JSON array of floats per line."""

from __future__ import annotations

import json
import sys

from keras_bert.cli.options import add_rules_argument
from keras_bert.config import DEFAULT_SEQ_LENGTH


def register(subparsers) -> None:
    """Adds the `encode` subcommand."""
    p = subparsers.add_parser(
        "encode", help="embed text lines from stdin",
        description="Reads UTF-8 text lines on stdin and writes one JSON array of floats per "
                    "line (an empty line gives the embedding of the empty text; bytes that "
                    "are not UTF-8 are dropped, as in `tokenize` and Google's tokenizer).")
    p.add_argument("model_dir", help="keras_bert model directory (see `keras-bert convert`)")
    p.add_argument("--pooling", choices=("pooled", "cls", "mean", "concat_last4"),
                   help="pooled output, last layer at [CLS], masked mean, or the last four "
                        "layers at [CLS] (default: the model's own: an embedder saved by "
                        "keras_bert.TextEmbedder keeps its pooling; a plain encoder, pooled)")
    p.add_argument("--seq-length", type=int, default=DEFAULT_SEQ_LENGTH,
                   help="longest sequence; longer texts are truncated (default "
                        f"{DEFAULT_SEQ_LENGTH})")
    p.add_argument("--batch-size", type=int, default=32)
    add_rules_argument(p)
    p.set_defaults(run=run)


def run(args) -> int:
    """Encodes stdin in batches and streams JSON lines to stdout."""
    import tensorflow as tf

    from keras_bert.tasks import TextEmbedder, TextTaskModel

    loaded = TextTaskModel.load(args.model_dir, rules=args.rules)
    if not isinstance(loaded, TextEmbedder):
        print(f"keras-bert encode: {args.model_dir} is a {type(loaded).__name__}; encode reads an "
              "encoder (a converted or pretrained model directory) or a TextEmbedder's",
              file=sys.stderr)
        return 2
    limit = loaded.network.encoder.config.max_position_embeddings
    if args.seq_length > limit:
        print(f"keras-bert encode: --seq-length {args.seq_length} exceeds the model's "
              f"max_position_embeddings {limit}", file=sys.stderr)
        return 2
    # The function `TextEmbedder.predict` and the export's `serving_default` run.
    options = loaded.export_options(pooling=args.pooling)  # the embedder's, by its class
    embed = loaded.serving_functions(max_length=args.seq_length,
                                     options=options).text_function()
    batch = []
    # Bytes: ill-formed UTF-8 is handled as `tokenize` does (a text stdin in tests).
    for line in getattr(sys.stdin, "buffer", sys.stdin):
        batch.append(line.rstrip(b"\r\n" if isinstance(line, bytes) else "\r\n"))
        if len(batch) == args.batch_size:
            _write(embed(text=tf.constant(batch, tf.string))["embedding"].numpy())
            batch = []
    if batch:
        _write(embed(text=tf.constant(batch, tf.string))["embedding"].numpy())
    return 0


def _write(vectors) -> None:
    for vector in vectors.tolist():
        sys.stdout.write(json.dumps(vector) + "\n")
    sys.stdout.flush()
