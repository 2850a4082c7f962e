"""`keras-bert attention MODEL_DIR --text ...`: a PNG heat map of attention per layer and head."""

from __future__ import annotations

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
    from keras_bert.visualize.attention_maps import draw_text_attention

    print(draw_text_attention(args.model_dir, args.text, args.out, args.text_b, args.rules,
                              args.layers, args.max_length))
    return 0
