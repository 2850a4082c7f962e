"""Throughput of the pretraining input pipeline: corpus -> tokens -> NSP pairs -> packed,
masked batches.

What is timed (embedded corpus, uncased 30522-id vocabulary, seq 128, 20 predictions):

1. **Tokenization** of the corpus documents (`keras_bert.pretraining.dataset.tokenize_documents`:
   sentences in TF batches of 2048, ids back to NumPy), MB/s of sentence text. The first call
   (tracing) is reported apart from the median of the following ones.
2. **The full pipeline** as `keras-bert pretrain` builds it: `pretraining_dataset(
   token_documents, tokenizer, batch, PretrainingOptions(...), dynamic=True)` (new NSP pairs
   and masks every epoch; pairs made by the Python generator in `keras_bert.pretraining.nsp`, packed
   and masked by a `tf.data` map) `.repeat(epochs)`, drained in Python. For batch 32 and 256,
   whole-word masking off and on. Each timed pass builds a fresh iterator: its **start-up**
   (until the first batch, which includes the first epoch's NSP pairing) is reported apart
   from the **steady state** (the examples after the first batch / the time after it).
   Configurations are timed round-robin (`bench/support/common.interleaved`).
3. **Where the time goes** (one configuration at a time, not interleaved): the conversion
   of the token documents to int lists (`as_int_documents`, once per corpus),
   `create_nsp_examples` alone (Python, one epoch), the flattening of an epoch into five
   arrays (`_epoch_arrays`, NumPy), the hand-over of an epoch to `tf.data` and its cutting
   into chunks (`from_generator` + `_chunks`), and the pack + mask map with the rebatching
   alone on an epoch that is ready (no Python in the loop), each over several epochs with
   its start-up (to the first batch) apart.

tf.data runs with its defaults (thread pool = cores = 2 here) and TF intra/inter-op threads
are set to `--threads`.

    .venv/bin/python bench/pretraining_pipeline.py            # ~3-6 minutes
    .venv/bin/python bench/pretraining_pipeline.py --quick    # smoke check, < 1 minute
    .venv/bin/python bench/pretraining_pipeline.py --batches 32 --autotune off,on
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.support import common  # noqa: E402  (sets up the thread pools before TF/torch start)


def parse_args(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--vocab", help="uncased BERT vocab.txt (default: the installed "
                   "all-MiniLM-L6-v2's)")
    p.add_argument("--seq", type=int, default=128)
    p.add_argument("--max-predictions", type=int, default=20)
    p.add_argument("--batches", default="32,256", help="batch sizes (default 32,256)")
    p.add_argument("--whole-word", default="off,on", help="whole-word masking settings")
    p.add_argument("--autotune", default="off",
                   help="tf.data's autotuning thread: off (what the library's streams run "
                        "with: keras_bert/training/stream_options.py), on, or off,on")
    p.add_argument("--epochs", type=int, default=4,
                   help="epochs per timed pass (dynamic: new pairs and masks each)")
    p.add_argument("--dupe-factor", type=int, default=1)
    p.add_argument("--runs", type=int, default=3, help="timed passes per configuration")
    p.add_argument("--warmup", type=int, default=1, help="untimed passes first")
    p.add_argument("--tokenize-runs", type=int, default=3)
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--quick", action="store_true",
                   help="a tenth of the corpus, 1 epoch, 1 run: a smoke check")
    p.add_argument("--quiet", action="store_true", help="no per-run log lines")
    args = p.parse_args(argv)
    args.vocab = common.default_vocab(p, args.vocab)
    if args.quick:
        args.epochs, args.runs, args.warmup, args.tokenize_runs = 1, 1, 0, 2
    args.batches = [int(b) for b in args.batches.split(",") if b.strip()]
    args.whole_word = [w.strip() == "on" for w in args.whole_word.split(",") if w.strip()]
    args.autotune = [a.strip() == "on" for a in args.autotune.split(",") if a.strip()]
    return args


def load_documents(quick: bool) -> list[list[str]]:
    """The embedded corpus as documents of sentences (every tenth document with --quick)."""
    from keras_bert.data.corpus import default_corpus_files, guess_format, read_documents

    documents = []
    for path in default_corpus_files():
        documents.extend(read_documents(path, guess_format(path)))
    return documents[::10] if quick else documents


def print_header(args, threads: dict) -> None:
    """Prints the heading, the machine and the thread settings."""
    machine = common.machine_description()
    print("# Pretraining input pipeline throughput\n")
    print(f"machine: {machine}")
    print(f"threads: {threads}; tf.data: default options\n")


def describe_corpus(documents) -> tuple[int, int]:
    """`(sentences, bytes of UTF-8)` of the documents; prints them."""
    n_sentences = sum(len(d) for d in documents)
    n_bytes = sum(len(s.encode("utf-8")) for d in documents for s in d)
    print(f"corpus: {len(documents)} documents, {n_sentences} sentences, "
          f"{n_bytes / 1e6:.2f} MB\n")
    return n_sentences, n_bytes


def time_tokenization(documents, tokenizer, runs: int, log) -> tuple[list, list[float]]:
    """`(token documents, seconds of each of `runs` calls)` of `tokenize_documents`."""
    from keras_bert.pretraining import dataset as pretraining

    tok_seconds = []
    for i in range(runs):
        start = time.perf_counter()
        token_documents = pretraining.tokenize_documents(documents, tokenizer)
        tok_seconds.append(time.perf_counter() - start)
        log(f"  tokenize_documents pass {i + 1}: {tok_seconds[-1]:.2f} s")
    return token_documents, tok_seconds


def tokenization_table(tok_seconds: list[float], n_bytes: int, n_sentences: int,
                       n_tokens: int) -> str:
    """The markdown table of the first (tracing) call and the median of the next ones."""
    steady_tok = statistics.median(tok_seconds[1:]) if len(tok_seconds) > 1 else tok_seconds[0]
    return common.markdown_table(
        ["tokenize_documents", "seconds", "MB/s", "sentences/s", "M tokens/s"],
        [["first call (includes tracing)", f"{tok_seconds[0]:.2f}",
          f"{n_bytes / 1e6 / tok_seconds[0]:.2f}", f"{n_sentences / tok_seconds[0]:,.0f}",
          f"{n_tokens / 1e6 / tok_seconds[0]:.3f}"],
         [f"median of the next {len(tok_seconds) - 1}", f"{steady_tok:.2f}",
          f"{n_bytes / 1e6 / steady_tok:.2f}", f"{n_sentences / steady_tok:,.0f}",
          f"{n_tokens / 1e6 / steady_tok:.3f}"]])


def pipeline_options(args, whole_word: bool):
    """The `PretrainingOptions` of the command line, with `whole_word` masking."""
    from keras_bert.pretraining.dataset import PretrainingOptions

    return PretrainingOptions(seq_length=args.seq, max_predictions=args.max_predictions,
                              whole_word=whole_word, dupe_factor=args.dupe_factor)


def pass_recorder(ds, record: dict):
    """A zero-argument callable that drains a fresh iterator of `ds` and appends to `record`
    its start-up (to the first batch), the rest's seconds and the example counts."""
    def one_pass():
        start = time.perf_counter()
        iterator = iter(ds)
        first = next(iterator)
        examples_first = int(first["input_word_ids"].shape[0])
        t_first = time.perf_counter()
        examples = 0
        for features in iterator:
            examples += int(features["input_word_ids"].shape[0])
        end = time.perf_counter()
        record["first"].append(t_first - start)
        record["rest"].append(end - t_first)
        record["examples"].append(examples + examples_first)
        record["after_first"].append(examples)

    return one_pass


def pipeline_configs(token_documents, tokenizer, args) -> tuple[dict, dict, dict]:
    """`({name: one pass}, {name: its record}, {name: build seconds})` of the full pipeline,
    one configuration per batch size, whole-word setting and autotuning setting."""
    import tensorflow as tf

    from keras_bert.pretraining.dataset import pretraining_dataset

    configs, stats, build_seconds = {}, {}, {}
    for batch in args.batches:
        for whole_word in args.whole_word:
            for autotune in args.autotune:
                name = f"batch {batch}, whole-word {'on' if whole_word else 'off'}"
                if len(args.autotune) > 1:
                    name += f", autotune {'on' if autotune else 'off'}"
                start = time.perf_counter()
                ds = pretraining_dataset(token_documents, tokenizer, batch,
                                         pipeline_options(args, whole_word),
                                         dynamic=True).repeat(args.epochs)
                if autotune:  # later options win over the library's
                    options = tf.data.Options()
                    options.autotune.enabled = True
                    ds = ds.with_options(options)
                build_seconds[name] = time.perf_counter() - start
                stats[name] = {"first": [], "rest": [], "examples": [], "after_first": []}
                configs[name] = pass_recorder(ds, stats[name])
    return configs, stats, build_seconds


def pipeline_table(timings: dict, stats: dict, build_seconds: dict, args) -> str:
    """The markdown table of each configuration's start-up and steady-state throughput."""
    rows = []
    for name, t in timings.items():
        record = stats[name]
        keep = slice(args.warmup, None)  # the warm-up passes are recorded first
        first, rest = record["first"][keep], record["rest"][keep]
        examples, after_first = record["examples"][keep], record["after_first"][keep]
        per_epoch = examples[0] / args.epochs
        steady = [e / r for e, r in zip(after_first, rest, strict=True)]
        whole = [e / s for e, s in zip(examples, t.seconds, strict=True)]
        rows.append([name, f"{per_epoch:,.0f}", f"{build_seconds[name]:.2f}",
                     f"{statistics.median(first):.2f}", f"{statistics.median(steady):,.0f}",
                     f"{max(steady):,.0f}", f"{statistics.median(whole):,.0f}",
                     f"{t.cpu_per_wall:.2f}"])
    return common.markdown_table(
        ["configuration", "examples/epoch", "build (s)", "start-up to 1st batch (s, median)",
         "steady examples/s median", "steady examples/s best",
         f"whole pass ({args.epochs} epochs) examples/s", "busy cores"], rows)


def drain_timed(ds) -> tuple[float, float, int]:
    """(seconds to the first element, seconds for the rest, elements after the first)."""
    start = time.perf_counter()
    iterator = iter(ds)
    next(iterator)
    t_first = time.perf_counter()
    n = sum(1 for _ in iterator)
    return t_first - start, time.perf_counter() - t_first, n


def python_parts(token_documents, args) -> tuple[list, list, dict]:
    """`(table rows, the last epoch's NSP examples, its arrays)` of the Python and NumPy
    parts: `as_int_documents` once, `create_nsp_examples` and `_epoch_arrays` per epoch."""
    from keras_bert.pretraining import dataset as pretraining
    from keras_bert.pretraining.nsp import as_int_documents, create_nsp_examples

    parts = []
    start = time.perf_counter()
    int_documents = as_int_documents(token_documents)
    parts.append(["as_int_documents (Python, once per corpus)", "",
                  f"{time.perf_counter() - start:.3f}", ""])
    seconds, flat_seconds = [], []
    for i in range(max(1, args.runs)):
        start = time.perf_counter()
        examples = create_nsp_examples(int_documents, args.seq, 0.1, args.dupe_factor,
                                       seed=12345 + i)
        seconds.append(time.perf_counter() - start)
        start = time.perf_counter()
        arrays = pretraining._epoch_arrays(examples)
        flat_seconds.append(time.perf_counter() - start)
    for label, values in (("create_nsp_examples (Python, one epoch)", seconds),
                          ("_epoch_arrays (NumPy, one epoch)", flat_seconds)):
        median = statistics.median(values)
        parts.append([label, "", f"{median:.3f}", f"{len(examples) / median:,.0f}"])
    return parts, examples, arrays


def tf_data_parts(n_examples: int, arrays, tokenizer, args, log) -> list:
    """Table rows of the `tf.data` parts on an epoch that is ready: `from_generator` +
    `_chunks`, then the pack + mask map and rebatching, per batch size and whole-word."""
    import tensorflow as tf

    from keras_bert.pretraining import dataset as pretraining

    reps = max(2, args.epochs)
    parts = []
    epoch = tf.data.Dataset.from_generator(lambda: iter([arrays]),
                                           output_signature=pretraining._EPOCH_SIGNATURE)
    for batch in args.batches:
        chunk = pretraining._chunk_size(batch)
        first, rest, n = drain_timed(pretraining._chunks(epoch.repeat(reps), chunk))
        per_epoch = rest / n * -(-n_examples // chunk)
        parts.append([f"from_generator (one epoch) + _chunks of {chunk}", f"{first:.2f}",
                      f"{per_epoch:.3f}", f"{n_examples / per_epoch:,.0f}"])
        n_batches = -(-n_examples // batch)
        for whole_word in args.whole_word:
            mapped = pretraining._pack_and_mask(epoch.repeat(reps), tokenizer, batch,
                                                pipeline_options(args, whole_word), True,
                                                False)
            first, rest, n = drain_timed(mapped)
            per_epoch = rest / n * n_batches
            parts.append([f"chunks + pack + mask map + rebatch to {batch}, whole-word "
                          f"{'on' if whole_word else 'off'}", f"{first:.2f}",
                          f"{per_epoch:.3f}", f"{n_examples / per_epoch:,.0f}"])
            log(f"  {parts[-1]}")
    return parts


def main(argv=None):
    """Runs the three measurements (tokenization, the full pipeline, its parts) and prints
    their tables."""
    args = parse_args(argv)
    threads = common.configure_threads(args.threads)
    from keras_bert.text.tokenizer import BertTokenizer

    log = (lambda s: None) if args.quiet else (lambda s: print(s, flush=True))
    print_header(args, threads)
    tokenizer = BertTokenizer(args.vocab, lower_case=True)
    documents = load_documents(args.quick)
    n_sentences, n_bytes = describe_corpus(documents)

    # 1. Tokenization.
    token_documents, tok_seconds = time_tokenization(documents, tokenizer,
                                                     args.tokenize_runs, log)
    n_tokens = sum(len(s) for d in token_documents for s in d)
    print()
    print(tokenization_table(tok_seconds, n_bytes, n_sentences, n_tokens))
    print(f"\n{n_tokens:,} tokens\n")

    # 2. The full pipeline, round-robin over the configurations.
    configs, stats, build_seconds = pipeline_configs(token_documents, tokenizer, args)
    timings = common.interleaved(configs, args.runs, args.warmup, log)
    print()
    print(pipeline_table(timings, stats, build_seconds, args))

    # 3. Where the time goes.
    print("\n## Where the time goes (each part alone)\n")
    parts, examples, arrays = python_parts(token_documents, args)
    parts += tf_data_parts(len(examples), arrays, tokenizer, args, log)
    print(common.markdown_table(["part", "start-up to 1st batch (s)",
                                 "steady seconds per epoch", "steady examples/s"], parts))
    print(f"\nexamples per epoch: {len(examples):,}; load average at the end: "
          f"{common.load_average()} (anything above ~{args.threads} means other processes "
          "competed for the cores)")


if __name__ == "__main__":
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    main()
