"""Tokenization throughput of our `BertTokenizer` against Hugging Face `tokenizers` and keras-hub.

Contenders, timed round-robin in one process (A, B, C, ...) after warm-up rounds, each
tokenizing the same corpus in the same batches of `--batch` lines:

* `ours_tfdata`    `keras_bert.text.BertTokenizer.tokenize` as a `tf.data` map over batches
                   (`num_parallel_calls=AUTOTUNE`, private thread pool of `--threads`), the
                   way the pretraining pipeline and `tf.data` input functions use it. A new
                   iterator per timed pass that goes `--tfdata-repeats` times over the corpus
                   (its time is divided by that): its start-up weighs as in a long-running
                   pipeline, and nothing runs ahead between passes;
* `ours_function`  the same tokenizer called per batch through one `tf.function` (a plain
                   batched call, as a serving graph runs it);
* `ours_eager`     the same tokenizer called per batch eagerly (op by op);
* `hf`             Hugging Face `tokenizers.BertWordPieceTokenizer` (Rust), same vocabulary,
                   `lowercase=True`, `encode_batch` per batch (its default adds [CLS]/[SEP]);
                   Rayon's pool is set to `--threads` (`RAYON_NUM_THREADS`, and
                   `TOKENIZERS_PARALLELISM=true` so that it stays on);
* `hf_fast`        the same tokenizer through `encode_batch_fast` (no character offsets:
                   its fastest batch call, what a server that needs only ids would use);
* `keras_hub`      `keras_hub.tokenizers.BertTokenizer(vocabulary, lowercase=True)` (its
                   defaults otherwise), as a `tf.data` map like `ours_tfdata`.

Every contender materialises its ids (NumPy values for TF, the Rust `Encoding`s for HF).
The corpus is the embedded corpus (`keras_bert/data/corpus/*.txt`), as non-blank lines
(`--unit lines`: paragraphs, ~660 characters on average, some very long) or as the sentences
the pretraining reader cuts (`--unit sentences`), repeated up to `--target-mb` MB of UTF-8.

Agreement: the share of the corpus's distinct lines whose ids are identical to ours (HF's
[CLS]/[SEP] stripped). keras-hub's `BertTokenizer` does not strip accents by default; its
agreement with `strip_accents=True` is reported as well (not timed).

    .venv/bin/python bench/tokenizer_speed.py                 # ~6 MB, 5 rounds: a few minutes
    .venv/bin/python bench/tokenizer_speed.py --quick         # smoke check, < 1 minute
    .venv/bin/python bench/tokenizer_speed.py --unit sentences --contenders ours_tfdata,hf
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import sys
from pathlib import Path

# This file is named like the standard library's `tokenize`: take its folder off the import
# path (Python puts it first when the file runs as a script) before anything imports it.
_HERE = str(Path(__file__).resolve().parent)
sys.path[:] = [p for p in sys.path if str(Path(p or ".").resolve()) != _HERE]
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.support import common  # noqa: E402  (sets up the thread pools before TF/torch start)

ALL_CONTENDERS = ("ours_tfdata", "ours_function", "ours_eager", "hf", "hf_fast", "keras_hub")


def parse_args(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--vocab", help="uncased BERT vocab.txt, 30522 ids (default: the installed "
                   "all-MiniLM-L6-v2's)")
    p.add_argument("--unit", choices=("lines", "sentences"), default="lines",
                   help="what one input string is (default: lines of the corpus files)")
    p.add_argument("--target-mb", type=float, default=6.0,
                   help="repeat the corpus up to this many MB of UTF-8 (default 6)")
    p.add_argument("--batch", type=int, default=1024, help="strings per call (default 1024)")
    p.add_argument("--runs", type=int, default=5, help="timed rounds (median reported)")
    p.add_argument("--warmup", type=int, default=1, help="untimed rounds first")
    p.add_argument("--threads", type=int, default=2,
                   help="TF intra/inter-op, tf.data private pool, Rayon threads (default 2)")
    p.add_argument("--tfdata-repeats", type=int, default=5,
                   help="corpus passes per tf.data iterator, so that its start-up (function "
                        "instantiation, ~0.1-0.4 s) weighs as in a long-running input "
                        "pipeline; its time is reported per corpus pass (default 5)")
    p.add_argument("--contenders", default=",".join(ALL_CONTENDERS),
                   help=f"comma-separated subset of {','.join(ALL_CONTENDERS)}")
    p.add_argument("--quick", action="store_true", help="0.2 MB, 2 rounds: a smoke check")
    p.add_argument("--quiet", action="store_true", help="no per-run log lines")
    args = p.parse_args(argv)
    args.vocab = common.default_vocab(p, args.vocab)
    if args.quick:
        args.target_mb, args.runs, args.warmup, args.batch = 0.2, 2, 1, 256
        args.tfdata_repeats = 2
    args.contenders = [c.strip() for c in args.contenders.split(",") if c.strip()]
    for c in args.contenders:
        if c not in ALL_CONTENDERS:
            p.error(f"unknown contender {c!r}")
    return args


def corpus_strings(unit: str) -> list[str]:
    """The distinct strings of the embedded corpus: non-blank lines, or sentences."""
    from keras_bert.data.corpus import default_corpus_files, guess_format, read_documents

    out = []
    for path in default_corpus_files():
        if unit == "lines":
            with open(path, encoding="utf-8") as f:
                out.extend(line.strip() for line in f if line.strip())
        else:
            for doc in read_documents(path, guess_format(path)):
                out.extend(doc)
    return out


def _as_lists(ragged) -> list[list[int]]:
    """Rows of a ragged id tensor as lists of Python ints (keras-hub gives lists eagerly)."""
    if isinstance(ragged, list):
        return [[int(i) for i in row] for row in ragged]
    return [row.tolist() for row in ragged.numpy()]


def cut_to(strings: list[str], target_bytes: float) -> list[str]:
    """The first strings, up to about `target_bytes` (for the quick mode's small corpus)."""
    out, size = [], 0
    for s in strings:
        if out and size >= target_bytes:
            break
        out.append(s)
        size += len(s.encode("utf-8"))
    return out


def repeat_to(strings: list[str], target_bytes: float) -> list[str]:
    """The strings repeated (whole copies) to about `target_bytes` of UTF-8."""
    size = sum(len(s.encode("utf-8")) for s in strings)
    copies = max(1, round(target_bytes / size))
    return strings * copies


@dataclasses.dataclass(frozen=True)
class Corpus:
    """The timed corpus: its distinct strings, them repeated, and the batches of both kinds."""

    distinct: list
    strings: list
    n_bytes: int
    batches: list  # lists of strings (Hugging Face's input)
    tensors: list  # the same batches as string tensors (TensorFlow's input)


def print_header(args, threads: dict) -> None:
    """Prints the heading, the machine and the thread settings."""
    machine = common.machine_description()
    print("# Tokenization throughput\n")
    print(f"machine: {machine}")
    print(f"threads: {threads}, RAYON_NUM_THREADS={os.environ['RAYON_NUM_THREADS']}, "
          f"TOKENIZERS_PARALLELISM={os.environ['TOKENIZERS_PARALLELISM']}, "
          f"tf.data private pool {args.threads}")


def build_corpus(args) -> Corpus:
    """The corpus of `--unit` strings up to `--target-mb`, in `--batch` batches; prints its size."""
    import tensorflow as tf

    distinct = cut_to(corpus_strings(args.unit), args.target_mb * 1e6)
    strings = repeat_to(distinct, args.target_mb * 1e6)
    n_bytes = sum(len(s.encode("utf-8")) for s in strings)
    batches = [strings[i:i + args.batch] for i in range(0, len(strings), args.batch)]
    tensors = [tf.constant(b) for b in batches]
    print(f"corpus: {len(distinct)} distinct {args.unit} "
          f"({sum(len(s.encode('utf-8')) for s in distinct) / 1e6:.2f} MB), repeated to "
          f"{len(strings)} {args.unit} = {n_bytes / 1e6:.2f} MB, {len(batches)} batches of "
          f"{args.batch}\n")
    return Corpus(distinct, strings, n_bytes, batches, tensors)


def tf_data(tokenize, strings: list[str], args):
    """The batches as a `tf.data` map, `--tfdata-repeats` times over the corpus in one
    iterator (a new one per timed pass: nothing runs ahead between passes)."""
    import tensorflow as tf

    options = tf.data.Options()
    options.threading.private_threadpool_size = args.threads
    options.deterministic = True
    ds = tf.data.Dataset.from_tensor_slices(tf.constant(strings)).batch(args.batch)
    return ds.repeat(args.tfdata_repeats).map(
        tokenize, num_parallel_calls=tf.data.AUTOTUNE).prefetch(
        tf.data.AUTOTUNE).with_options(options)


def drain(ds) -> None:
    """Iterates `ds` to its end, materialising every batch's ids."""
    for rt in ds:
        rt.flat_values.numpy()


def ours_contenders(ours, corpus: Corpus, args, want: set) -> dict:
    """`{name: callable}` of our tokenizer's wanted contenders (tf.data, tf.function, eager)."""
    import tensorflow as tf

    fns = {}
    if "ours_tfdata" in want:
        ours_ds = tf_data(ours.tokenize, corpus.strings, args)
        fns["ours_tfdata"] = lambda: drain(ours_ds)
    if "ours_function" in want:
        ours_fn = tf.function(ours.tokenize, input_signature=[tf.TensorSpec([None], tf.string)])

        def run_function():
            for t in corpus.tensors:
                rt = ours_fn(t)
                rt.flat_values.numpy(), rt.row_splits.numpy()

        fns["ours_function"] = run_function
    if "ours_eager" in want:
        def run_eager():
            for t in corpus.tensors:
                rt = ours.tokenize(t)
                rt.flat_values.numpy(), rt.row_splits.numpy()

        fns["ours_eager"] = run_eager
    return fns


def hf_contenders(corpus: Corpus, args, want: set) -> tuple[dict, dict]:
    """`({name: callable}, {name: ids of lines})` of the wanted Hugging Face contenders
    (their ids without [CLS]/[SEP])."""
    import tokenizers

    hf = tokenizers.BertWordPieceTokenizer(args.vocab, lowercase=True)

    def run_hf():
        for b in corpus.batches:
            hf.encode_batch(b)

    def run_hf_fast():
        for b in corpus.batches:
            hf._tokenizer.encode_batch_fast(b)

    fns, ids_of = {}, {}
    if "hf" in want:
        fns["hf"] = run_hf
        ids_of["hf"] = lambda lines: [e.ids[1:-1] for e in hf.encode_batch(lines)]
    if "hf_fast" in want:
        fns["hf_fast"] = run_hf_fast
        ids_of["hf_fast"] = lambda lines: [
            e.ids[1:-1] for e in hf._tokenizer.encode_batch_fast(lines)]
    return fns, ids_of


def keras_hub_contenders(corpus: Corpus, args) -> tuple[dict, dict]:
    """`({name: callable}, {name: ids of lines})` of keras-hub's tokenizer (as a tf.data map),
    plus the ids of its `strip_accents=True` variant (not timed); empty without keras-hub."""
    import tensorflow as tf

    try:
        import keras_hub
    except ImportError:  # an optional contender (the `bench` extra)
        print("keras_hub is not installed: its contender is skipped")
        return {}, {}
    kh = keras_hub.tokenizers.BertTokenizer(vocabulary=args.vocab, lowercase=True)
    kh_ds = tf_data(kh, corpus.strings, args)
    kh_strip = keras_hub.tokenizers.BertTokenizer(vocabulary=args.vocab, lowercase=True,
                                                 strip_accents=True)
    fns = {"keras_hub": lambda: drain(kh_ds)}
    ids_of = {"keras_hub": lambda lines: _as_lists(kh(tf.constant(lines))),
              "keras_hub(strip_accents=True)": (
                  lambda lines: _as_lists(kh_strip(tf.constant(lines))))}
    return fns, ids_of


def build_contenders(corpus: Corpus, args) -> tuple[dict, dict]:
    """`({name: callable to time}, {name: ids of lines})` of the wanted contenders, in the
    order of `ALL_CONTENDERS`; the ids start with ours (`"ours"`, the reference)."""
    import tensorflow as tf

    from keras_bert.text.tokenizer import BertTokenizer

    ours = BertTokenizer(args.vocab, lower_case=True)
    want = set(args.contenders)
    ids_of = {"ours": lambda lines: _as_lists(ours.tokenize(tf.constant(lines)))}
    fns = ours_contenders(ours, corpus, args, want)
    if want & {"hf", "hf_fast"}:
        hf_fns, hf_ids = hf_contenders(corpus, args, want)
        fns.update(hf_fns)
        ids_of.update(hf_ids)
    if "keras_hub" in want:
        kh_fns, kh_ids = keras_hub_contenders(corpus, args)
        fns.update(kh_fns)
        ids_of.update(kh_ids)
    return fns, ids_of


def agreement_with_ours(ids_of: dict, distinct: list[str], unit: str,
                        log) -> tuple[dict, list]:
    """`({name: (identical, total)}, our ids)` over the distinct strings (in batches, outside
    the timing); `ids_of` must hold `"ours"`, which it loses."""
    def all_ids(fn):
        out = []
        for i in range(0, len(distinct), 512):
            out.extend(list(x) for x in fn(distinct[i:i + 512]))
        return out

    reference = all_ids(ids_of.pop("ours"))
    agreement = {}
    for name, fn in ids_of.items():
        other = all_ids(fn)
        same = sum(a == b for a, b in zip(reference, other, strict=True))
        agreement[name] = (same, len(distinct))
        log(f"  agreement {name}: {same}/{len(distinct)} {unit} identical")
    return agreement, reference


def per_corpus_pass(timings: dict, repeats: int) -> None:
    """Divides the tf.data contenders' times by `repeats` (their passes went over the corpus
    that many times)."""
    for name in ("ours_tfdata", "keras_hub"):
        if name in timings:
            t = timings[name]
            t.seconds = [x / repeats for x in t.seconds]
            t.cpu_seconds = [x / repeats for x in t.cpu_seconds]


def throughput_table(timings: dict, agreement: dict, corpus: Corpus, n_tokens: int,
                     unit: str) -> str:
    """The markdown table of every contender's throughput and agreement with ours."""
    rows = []
    for name, t in timings.items():
        agree = agreement.get(name)
        agree_txt = ("(reference)" if name.startswith("ours") else
                     f"{100 * agree[0] / agree[1]:.3f}%" if agree else "")
        rows.append([name, f"{t.median:.2f} ({t.best:.2f})",
                     f"{len(corpus.strings) / t.median:,.0f}",
                     f"{corpus.n_bytes / 1e6 / t.median:.2f}",
                     f"{corpus.n_bytes / 1e6 / t.best:.2f}", f"{n_tokens / t.median / 1e6:.2f}",
                     agree_txt, f"{t.cpu_per_wall:.2f}"])
    return common.markdown_table(
        ["contender", "s/pass median (best)", f"{unit}/s median", "MB/s median",
         "MB/s best", "M tokens/s median", f"ids identical to ours ({unit})",
         "busy cores"], rows)


def ratio_table(names, timings: dict) -> str:
    """The markdown table of each of ours' throughput over each other contender's."""
    summary = []
    for name in names:
        if name.startswith("ours") or "ours_tfdata" not in timings:
            continue
        for mine in [n for n in timings if n.startswith("ours")]:
            a, b = timings[mine], timings[name]
            summary.append([f"{mine} / {name}", f"{b.median / a.median:.2f}x",
                            f"{b.best / a.best:.2f}x"])
    return common.markdown_table(["ratio (throughput)", "median", "best"], summary)


def print_results(timings: dict, fns: dict, agreement: dict, corpus: Corpus, n_tokens: int,
                  args) -> None:
    """Prints the throughput and ratio tables, the untimed keras-hub variant's agreement and
    the closing line."""
    print()
    print(throughput_table(timings, agreement, corpus, n_tokens, args.unit))
    print()
    print(ratio_table(fns, timings))
    if "keras_hub(strip_accents=True)" in agreement:
        same, total = agreement["keras_hub(strip_accents=True)"]
        print(f"\nkeras_hub with strip_accents=True (not timed): {100 * same / total:.3f}% of "
              f"{args.unit} identical to ours")
    print(f"\ntokens per pass: {n_tokens:,} (ours, without [CLS]/[SEP]); "
          f"load average at the end: {common.load_average()} "
          f"(anything above ~{args.threads} means other processes competed for the cores)")


def main(argv=None):
    """Runs the benchmark: builds the corpus and contenders, checks agreement, times them
    round-robin and prints the tables."""
    args = parse_args(argv)
    # Rayon reads its pool size when the pool starts (first parallel call): set it first.
    os.environ["RAYON_NUM_THREADS"] = str(args.threads)
    os.environ["TOKENIZERS_PARALLELISM"] = "true"
    threads = common.configure_threads(args.threads)
    log = (lambda s: None) if args.quiet else (lambda s: print(s, flush=True))
    print_header(args, threads)
    corpus = build_corpus(args)
    fns, ids_of = build_contenders(corpus, args)
    agreement, reference = agreement_with_ours(ids_of, corpus.distinct, args.unit, log)
    n_tokens = sum(len(r) for r in reference) * (len(corpus.strings) // len(corpus.distinct))
    timings = common.interleaved(fns, args.runs, args.warmup, log)
    per_corpus_pass(timings, args.tfdata_repeats)
    print_results(timings, fns, agreement, corpus, n_tokens, args)


if __name__ == "__main__":
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    main()
