"""`keras-bert convert SRC DEST [--to FORMAT]`: any supported BERT checkpoint directory into a
keras_bert model directory (default), Google's TF1 release layout, a Hugging Face one or a
keras-hub preset."""

from __future__ import annotations

import os

from keras_bert.cli.options import add_rules_argument

FORMATS = ("keras_bert", "google", "huggingface", "keras-hub", "model-garden")


def register(subparsers) -> None:
    """Adds the `convert` subcommand."""
    p = subparsers.add_parser(
        "convert", help="convert a BERT checkpoint between keras_bert, Google, Hugging Face "
                        "and keras-hub",
        description="Reads a Google BERT directory (bert_config.json, vocab.txt, "
                    "bert_model.ckpt.*), a Hugging Face one (config.json, vocab.txt, "
                    "model.safetensors), a keras-hub BERT preset (config.json, "
                    "model.weights.h5, tokenizer.json, metadata.json), a TF Hub / Kaggle "
                    "tensorflow/bert encoder SavedModel (saved_model.pb, variables/, "
                    "assets/vocab.txt), a Model Garden TF2 checkpoint or a keras_bert model "
                    "directory, local or by hub id (hf://ORG/NAME[@REVISION] through "
                    "huggingface_hub, kaggle://OWNER/MODEL/FRAMEWORK/VARIATION[/VERSION] "
                    "through kagglehub: pip install 'keras-bert-tf[hub]'), and writes DEST in "
                    "the format given by --to.")
    p.add_argument("src", help="checkpoint directory or hub id (hf://..., kaggle://...)")
    p.add_argument("dest", help="directory to write")
    p.add_argument("--to", choices=FORMATS, default="keras_bert",
                   type=lambda s: "keras-hub" if s == "keras_hub" else s,
                   help="format of DEST: a keras_bert model directory (default), Google's TF1 "
                        "layout (bert_config.json, bert_model.ckpt.*, vocab.txt), Hugging "
                        "Face's (config.json, model.safetensors, vocab.txt, "
                        "tokenizer_config.json) or a keras-hub preset that "
                        "keras_hub.models.BertBackbone/BertTokenizer.from_preset load, or "
                        "Model Garden's TF2 checkpoint (bert_model.ckpt, bert_config.json, "
                        "vocab.txt) that tf.train.Checkpoint(encoder=BertEncoder(...)) restores")
    case = p.add_mutually_exclusive_group()
    case.add_argument("--lower-case", dest="lower_case", action="store_true", default=None,
                      help="the tokenizer lower-cases (uncased model)")
    case.add_argument("--cased", dest="lower_case", action="store_false",
                      help="the tokenizer keeps case (cased model)")
    add_rules_argument(p, "google for Google's layout, huggingface for Hugging Face's and "
                          "keras-hub presets, a keras_bert directory's own")
    p.add_argument("--encoder-only", action="store_true",
                   help="keep the encoder alone: without it a Hugging Face BertFor* model "
                        "keeps its head (sequence/token classification and question "
                        "answering become task model directories that `export` serves; "
                        "masked LM / pretraining heads are kept for `pretrain --init`), a "
                        "head keras_bert has no equivalent for is refused, and a task model "
                        "directory goes --to huggingface as its BertFor* model")
    p.add_argument("--approximate-gelu", action="store_true",
                   help="with --to google, model-garden or keras-hub: write a model that "
                        "computes the exact (erf) GELU with the tanh approximation, the only "
                        "GELU those layouts' code computes (outputs move by up to a few 1e-3); "
                        "without it such a model is refused")
    p.add_argument("--pair", action="store_true",
                   help="a Hugging Face sequence classifier reads text pairs (text, text_b): "
                        "its export then takes both")
    p.set_defaults(run=run)


def run(args) -> int:
    """Converts and prints a one-line summary."""
    if args.approximate_gelu and args.to == "keras_bert":
        raise ValueError("--approximate-gelu goes with --to google, model-garden or keras-hub; "
                         "a keras_bert model directory holds the exact GELU as it is")
    if args.to != "keras_bert":
        from keras_bert.tasks.task_conversion import write_checkpoint

        path = write_checkpoint(args.src, args.dest, args.to.replace("-", "_"),
                                lower_case=args.lower_case, encoder_only=args.encoder_only,
                                approximate_gelu=args.approximate_gelu)
        print(f"wrote {os.path.abspath(path)}: {args.to} checkpoint with its vocabulary"
              + _hf_architecture(path, args.to))
        return 0
    from keras_bert.tasks.task_conversion import convert

    model_dir = convert(args.src, args.dest, lower_case=args.lower_case, rules=args.rules,
                        encoder_only=args.encoder_only, pair=args.pair)
    c = model_dir.config
    print(f"wrote {model_dir.path}: {model_dir.metadata['format']} checkpoint, "
          f"L{c.num_layers}/H{c.hidden_size}/A{c.num_heads}, vocab {c.vocab_size}, "
          f"{'uncased' if model_dir.lower_case else 'cased'}, {model_dir.rules} tokenizer rules")
    for line in describe(model_dir):
        print(line)
    return 0


def describe(model_dir) -> list[str]:
    """Lines saying which head a conversion kept, with its labels, and what it left out."""
    from keras_bert.checkpoints.pretraining_heads import PRETRAINING_HEADS

    meta, lines = model_dir.metadata, []
    arch = meta.get("architecture") or "model"
    task = meta.get("task")
    if task:
        labels = task.get("labels") or []
        shown = ", ".join(labels[:10]) + (f" (+{len(labels) - 10} more)" if len(labels) > 10
                                          else "")
        lines.append(f"kept the {arch} head as a {task['kind']} model"
                     + (f", {len(labels)} labels: {shown}" if labels else "")
                     + f"; serving truncates at {task['seq_length']} tokens "
                       "(export --max-length / --seq-length override)")
    elif os.path.exists(os.path.join(model_dir.path, PRETRAINING_HEADS)):
        has_nsp = not any(n.startswith("nsp/") for n in meta.get("initialised", []))
        lines.append(f"kept the {arch} heads: masked LM{' and next sentence' * has_nsp} "
                     f"({PRETRAINING_HEADS}; pretrain --init {model_dir.path} continues "
                     "with them)")
    if meta.get("dropped"):
        lines.append(f"dropped: {', '.join(meta['dropped'])}")
    groups = sorted({n.split("/")[0] for n in meta.get("initialised", [])})
    if groups:
        lines.append(f"not in the checkpoint, left at their initial values: {', '.join(groups)}")
    return lines


def _hf_architecture(path: str, to: str) -> str:
    if to != "huggingface":
        return ""
    from keras_bert.checkpoints.hf_architectures import architecture, read_hf_config

    return f", {architecture(read_hf_config(path))}"
