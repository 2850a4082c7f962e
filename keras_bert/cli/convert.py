"""`keras-bert convert SRC DEST [--to FORMAT]`: any supported BERT checkpoint directory into a
keras_bert model directory (default), Google's TF1 release layout or a Hugging Face one."""

from __future__ import annotations

import os

from keras_bert.cli.options import add_rules_argument

FORMATS = ("keras_bert", "google", "huggingface")


def register(subparsers) -> None:
    """Adds the `convert` subcommand."""
    p = subparsers.add_parser(
        "convert", help="convert a BERT checkpoint between keras_bert, Google and Hugging Face",
        description="Reads a Google BERT directory (bert_config.json, vocab.txt, "
                    "bert_model.ckpt.*), a Hugging Face one (config.json, vocab.txt, "
                    "model.safetensors) or a keras_bert model directory, and writes DEST in "
                    "the format given by --to.")
    p.add_argument("src", help="checkpoint directory")
    p.add_argument("dest", help="directory to write")
    p.add_argument("--to", choices=FORMATS, default="keras_bert",
                   help="format of DEST: a keras_bert model directory (default), Google's TF1 "
                        "layout (bert_config.json, bert_model.ckpt.*, vocab.txt) or Hugging "
                        "Face's (config.json, model.safetensors, vocab.txt, "
                        "tokenizer_config.json)")
    case = p.add_mutually_exclusive_group()
    case.add_argument("--lower-case", dest="lower_case", action="store_true", default=None,
                      help="the tokenizer lower-cases (uncased model)")
    case.add_argument("--cased", dest="lower_case", action="store_false",
                      help="the tokenizer keeps case (cased model)")
    add_rules_argument(p, "google for Google's layout, huggingface for Hugging Face's, a "
                          "keras_bert directory's own")
    p.set_defaults(run=run)


def run(args) -> int:
    """Converts and prints a one-line summary."""
    if args.to != "keras_bert":
        from keras_bert.checkpoints.conversion import write_checkpoint

        path = write_checkpoint(args.src, args.dest, args.to, lower_case=args.lower_case)
        print(f"wrote {os.path.abspath(path)}: {args.to} checkpoint with vocab.txt")
        return 0
    from keras_bert.checkpoints import convert

    model_dir = convert(args.src, args.dest, lower_case=args.lower_case, rules=args.rules)
    c = model_dir.config
    print(f"wrote {model_dir.path}: {model_dir.metadata['format']} checkpoint, "
          f"L{c.num_layers}/H{c.hidden_size}/A{c.num_heads}, vocab {c.vocab_size}, "
          f"{'uncased' if model_dir.lower_case else 'cased'}, {model_dir.rules} tokenizer rules")
    return 0
