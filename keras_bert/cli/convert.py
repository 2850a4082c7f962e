"""`keras-bert convert SRC DEST`: Google TF1 or Hugging Face checkpoint -> keras_bert model dir."""

from __future__ import annotations


def register(subparsers) -> None:
    """Adds the `convert` subcommand."""
    p = subparsers.add_parser(
        "convert", help="convert a Google or Hugging Face BERT checkpoint",
        description="Reads a Google BERT directory (bert_config.json, vocab.txt, "
                    "bert_model.ckpt.*) or a Hugging Face one (config.json, vocab.txt, "
                    "model.safetensors) and writes a keras_bert model directory.")
    p.add_argument("src", help="checkpoint directory")
    p.add_argument("dest", help="model directory to write")
    case = p.add_mutually_exclusive_group()
    case.add_argument("--lower-case", dest="lower_case", action="store_true", default=None,
                      help="the tokenizer lower-cases (uncased model)")
    case.add_argument("--cased", dest="lower_case", action="store_false",
                      help="the tokenizer keeps case (cased model)")
    p.set_defaults(run=run)


def run(args) -> int:
    """Converts and prints a one-line summary."""
    from keras_bert.checkpoints import convert

    model_dir = convert(args.src, args.dest, lower_case=args.lower_case)
    c = model_dir.config
    print(f"wrote {model_dir.path}: {model_dir.metadata['format']} checkpoint, "
          f"L{c.num_layers}/H{c.hidden_size}/A{c.num_heads}, vocab {c.vocab_size}, "
          f"{'uncased' if model_dir.lower_case else 'cased'}")
    return 0
