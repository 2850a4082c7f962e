"""`keras-bert create-pretraining-data`: corpus -> sharded TFRecords of masked NSP examples."""

from __future__ import annotations

import shlex
import time

from keras_bert.cli.options import add_rules_argument
from keras_bert.config import DEFAULT_SEQ_LENGTH
from keras_bert.pretraining.nsp import DEFAULT_POOL_SIZE


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
    p.add_argument("--seq-length", type=int, default=DEFAULT_SEQ_LENGTH)
    p.add_argument("--max-predictions", type=int, default=20)
    p.add_argument("--mask-rate", type=float, default=0.15)
    p.add_argument("--whole-word", action="store_true", help="whole-word masking")
    p.add_argument("--short-seq-prob", type=float, default=0.1)
    p.add_argument("--dupe-factor", type=int, default=10,
                   help="passes over the corpus, each with different masks (default 10)")
    p.add_argument("--seed", type=int, default=12345)
    p.add_argument("--random-next-pool", type=int, default=DEFAULT_POOL_SIZE,
                   help="random next segments come from the N documents with the smallest "
                        f"text hashes (the whole corpus if smaller; default {DEFAULT_POOL_SIZE})")
    beam = p.add_argument_group("Apache Beam (pip install 'keras-bert-tf[beam]')")
    beam.add_argument("--runner", help="run as a Beam pipeline on this runner: direct, "
                                       "dataflow, flink, spark, dask, or a runner class name; "
                                       "the same examples as without it")
    beam.add_argument("--workers", type=int,
                      help="--runner direct: worker processes (default: Beam's, one)")
    beam.add_argument("--dask-address",
                      help="--runner dask: the dask.distributed scheduler, e.g. "
                           "tcp://10.0.0.5:8786 (default: a LocalCluster on this machine; "
                           "pip install 'keras-bert-tf[dask]')")
    beam.add_argument("--dask-timeout", type=int, default=30,
                      help="--runner dask: seconds for the scheduler to answer (default 30)")
    beam.add_argument("--beam-options", default="",
                      help="Beam pipeline options, quoted: e.g. \"--project=P --region=R "
                           "--temp_location=gs://B/tmp\"")
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
    """Writes the examples in this process, or with `--runner` as a Beam pipeline."""
    from keras_bert.pretraining.dataset import PretrainingOptions

    start = time.perf_counter()
    tokenizer = tokenizer_from_args(args)
    options = PretrainingOptions(
        seq_length=args.seq_length, max_predictions=args.max_predictions,
        mask_rate=args.mask_rate, whole_word=args.whole_word,
        short_seq_prob=args.short_seq_prob, dupe_factor=args.dupe_factor, seed=args.seed)
    if args.runner:
        from keras_bert.data.corpus import default_corpus_files
        from keras_bert.pretraining.beam_pipeline import run_pipeline

        counts = run_pipeline(args.input or default_corpus_files(), args.output, tokenizer,
                              runner=args.runner, beam_args=shlex.split(args.beam_options),
                              workers=args.workers, dask_address=args.dask_address,
                              dask_timeout=args.dask_timeout, fmt=args.format,
                              text_field=args.text_field, num_shards=args.num_shards,
                              options=options, pool_size=args.random_next_pool)
        where = args.output + ("" if args.num_shards == 1 else "-*-of-*")
        if counts["examples"] is None:
            print(f"wrote the examples to {where} in {time.perf_counter() - start:.1f}s; the "
                  f"{args.runner} runner reports no Beam metrics, so no counts")
            return 0
        split = sorted(counts["processes"].values(), reverse=True)
        print(f"examples made per worker process ({len(split)}): {split}")
    else:
        if args.workers or args.beam_options or args.dask_address:
            raise ValueError("--workers, --beam-options and --dask-address need --runner")
        import keras

        from keras_bert.pretraining.record_writer import write_pretraining_records

        documents = documents_from_args(args)
        print(f"read {len(documents)} documents, {sum(len(d) for d in documents)} sentences")
        progress = keras.utils.Progbar(len(documents), unit_name="document")
        paths, counts = write_pretraining_records(
            documents, tokenizer, args.output, args.num_shards, options,
            args.random_next_pool, progress=lambda _: progress.add(1))
        where = ", ".join(paths)
    print(f"wrote {counts['examples']} examples of {counts['documents']} documents "
          f"({args.dupe_factor} passes; {counts['tokens']} tokens, {counts['masked_positions']} "
          f"masked) to {where} in {time.perf_counter() - start:.1f}s")
    return 0
