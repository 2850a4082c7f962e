"""`keras-bert attention MODEL_DIR --text ...`: a PNG heat map of attention per layer and head."""

from __future__ import annotations

import os

from keras_bert.cli.options import add_rules_argument


def register(subparsers) -> None:
    """Adds the `attention` subcommand."""
    p = subparsers.add_parser(
        "attention", help="draw a model's attention weights for one text as a PNG",
        description="Runs MODEL_DIR (a converted, pretrained or fine-tuned keras_bert model "
                    "directory) on one text, or a pair with --text-b, and writes a heat map "
                    "of the attention probabilities: one panel per layer (rows) and head "
                    "(columns), queries down, keys across, wordpieces on both axes.")
    p.add_argument("model_dir", help="keras_bert model directory")
    p.add_argument("--text", required=True, help="the text (segment A)")
    add_rules_argument(p)
    p.add_argument("--text-b", help="optional second segment (sentence pairs)")
    p.add_argument("--out", default="attention.png", help="PNG to write (default attention.png)")
    p.add_argument("--layers", type=int, nargs="+",
                   help="layers to draw, 0-based (default: all)")
    p.add_argument("--max-length", type=int, default=64,
                   help="truncate the packed text to this many wordpieces (default 64)")
    p.set_defaults(run=run)


def run(args) -> int:
    """Computes the attention probabilities, draws them and prints where the PNG went."""
    from keras_bert.checkpoints.model_dir import load_model_dir
    from keras_bert.visualize.attention_maps import plot_attention, text_attention

    model_dir = load_model_dir(args.model_dir).with_rules(args.rules)
    tokens, probs = text_attention(model_dir, args.text, args.text_b, args.max_length)
    plot_attention(probs, tokens, args.out, layers=args.layers,
                   title=attention_title(model_dir.path, args.text, args.text_b))
    shown = len(args.layers) if args.layers else probs.shape[0]
    print(f"wrote {args.out}: {shown} layers x {probs.shape[1]} heads over {len(tokens)} "
          "tokens")
    return 0


def attention_title(model_path: str, text: str, text_b: str | None = None,
                    width: int = 48) -> str:
    """A short title: the model's name (its directory, with the run's name for a job's
    `OUT/model`) and the text, cut to `width` characters."""
    parts = os.path.normpath(os.path.abspath(model_path)).split(os.sep)
    name = "/".join(parts[-2:]) if parts[-1] == "model" and len(parts) > 1 else parts[-1]
    shown = text if text_b is None else f"{text} | {text_b}"
    if len(shown) > width:
        shown = shown[:width - 1] + "…"
    return f"{name}: \u201c{shown}\u201d"
