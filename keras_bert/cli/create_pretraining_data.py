"""`keras-bert create-pretraining-data`: corpus -> sharded TFRecords of masked NSP examples."""

from __future__ import annotations

import time

from keras_bert.cli.options import add_rules_argument


def register(subparsers) -> None:
    """Adds the `create-pretraining-data` subcommand."""
    p = subparsers.add_parser(
        "create-pretraining-data", help="write pretraining TFRecords from a text corpus",
        description="Tokenizes a corpus, makes NSP pairs and MLM masks by the rules of BERT's "
                    "create_pretraining_data.py and writes them as TFRecords with the "
                    "original feature names. Without --input, the embedded corpus is used.")
    add_tokenizer_arguments(p)
    add_corpus_arguments(p)
    p.add_argument("--output", required=True, help="output path (shards get -0000N-of-...)")
    p.add_argument("--num-shards", type=int, default=1)
    p.add_argument("--seq-length", type=int, default=128)
    p.add_argument("--max-predictions", type=int, default=20)
    p.add_argument("--mask-rate", type=float, default=0.15)
    p.add_argument("--whole-word", action="store_true", help="whole-word masking")
    p.add_argument("--short-seq-prob", type=float, default=0.1)
    p.add_argument("--dupe-factor", type=int, default=10,
                   help="passes over the corpus, each with different masks (default 10)")
    p.add_argument("--seed", type=int, default=12345)
    p.set_defaults(run=run)


def add_tokenizer_arguments(p) -> None:
    """`--vocab V [--cased]` or `--model DIR`: where the tokenizer comes from."""
    source = p.add_mutually_exclusive_group(required=True)
    source.add_argument("--vocab", help="vocab.txt")
    source.add_argument("--model", help="keras_bert model directory (its vocab and casing)")
    p.add_argument("--cased", action="store_true", help="with --vocab: keep case and accents")
    add_rules_argument(p, "the model's own with --model, google with --vocab")


def add_corpus_arguments(p) -> None:
    """`--input FILE... [--format F] [--text-field NAME]`."""
    p.add_argument("--input", nargs="+", help="corpus files (default: the embedded corpus)")
    p.add_argument("--format", choices=("auto", "sentences", "prose", "jsonl"), default="auto",
                   help="sentences: one per line, blank line between documents (BERT's); "
                        "prose: paragraphs; jsonl: one JSON document per line")
    p.add_argument("--text-field", default="text", help="JSON field holding the text")


def tokenizer_from_args(args):
    """The `BertTokenizer` named by `add_tokenizer_arguments`."""
    if args.model:
        from keras_bert.checkpoints import load_model_dir

        return load_model_dir(args.model).with_rules(args.rules).tokenizer()
    from keras_bert.text import BertTokenizer

    return BertTokenizer(args.vocab, lower_case=not args.cased, rules=args.rules or "google")


def documents_from_args(args) -> list[list[str]]:
    """Every document of the corpus named by `add_corpus_arguments`."""
    from keras_bert.data.corpus import default_corpus_files, guess_format, read_documents

    documents = []
    for path in args.input or default_corpus_files():
        fmt = guess_format(path) if args.format == "auto" else args.format
        documents.extend(read_documents(path, fmt, args.text_field))
    return documents


def run(args) -> int:
    """Builds the examples, then writes them with a progress bar."""
    import keras

    from keras_bert.data.nsp import create_nsp_examples
    from keras_bert.data.pretraining import (
        PretrainingOptions,
        examples_dataset,
        tokenize_documents,
    )
    from keras_bert.data.tfrecord import write_examples

    start = time.perf_counter()
    tokenizer = tokenizer_from_args(args)
    documents = documents_from_args(args)
    sentences = sum(len(d) for d in documents)
    print(f"read {len(documents)} documents, {sentences} sentences")
    token_documents = tokenize_documents(documents, tokenizer)
    options = PretrainingOptions(
        seq_length=args.seq_length, max_predictions=args.max_predictions,
        mask_rate=args.mask_rate, whole_word=args.whole_word,
        short_seq_prob=args.short_seq_prob, dupe_factor=args.dupe_factor, seed=args.seed)
    examples = create_nsp_examples(token_documents, options.seq_length, options.short_seq_prob,
                                   options.dupe_factor, options.seed)
    print(f"{len(examples)} examples ({args.dupe_factor} passes); writing {args.num_shards} "
          f"shard(s)")
    batch_size = 256
    progress = keras.utils.Progbar(len(examples), unit_name="example")

    def batches():
        for batch in examples_dataset(examples, tokenizer, batch_size, options):
            progress.add(int(batch["input_word_ids"].shape[0]))
            yield {k: v.numpy() for k, v in batch.items()}

    paths = write_examples(batches(), args.output, args.num_shards)
    print(f"wrote {len(examples)} examples to {', '.join(paths)} in "
          f"{time.perf_counter() - start:.1f}s")
    return 0
