"""Throughput of `create-pretraining-data`: the single-process writer vs the Apache Beam
DirectRunner with 1 and 2 worker processes, same corpus, same options, same output.

Each contender is the whole command as a user runs it (`keras-bert create-pretraining-data
...`, a fresh process: imports, tokenization, NSP pairs, packing, masking, serialization,
writing `--num-shards` files), timed round-robin with the order rotated every round, after
one untimed warm-up round (file-system cache); medians. The corpus is the embedded one
(Moby Dick chapters, State of the Union addresses) written `--copies` times as separate
input files, each copy's documents made distinct (so they are distinct documents with their
own keys, as in a real corpus of many files).

Then the scale-out arithmetic for BERT's corpus (3.3 billion words) from the measured
examples per word and per-process throughput.

    .venv/bin/python bench/beam_pipeline.py            # ~5 minutes on 2 cores
    .venv/bin/python bench/beam_pipeline.py --quick    # smoke check, < 1 minute
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.support.common import (  # noqa: E402
    host_line,
    load_average,
    machine_description,
    markdown_table,
)

BERT_WORDS = 3.3e9  # BooksCorpus (800M) + English Wikipedia (2,500M), Devlin et al. 2018
RESULT = re.compile(r"wrote (\d+) examples of (\d+) documents")
SPLIT = re.compile(r"examples made per worker process \(\d+\): \[([\d, ]+)\]")


def write_corpus(root: str, copies: int) -> tuple[list[str], int]:
    """`copies` files in the sentence-per-line format; returns the paths and the word count."""
    from keras_bert.data.corpus import default_corpus_files, read_documents

    documents = [d for path in default_corpus_files() for d in read_documents(path, "prose")]
    paths, words = [], 0
    for copy in range(copies):
        path = os.path.join(root, f"corpus-{copy:03d}.txt")
        with open(path, "w", encoding="utf-8") as f:
            for number, doc in enumerate(documents):
                sentences = [f"Copy {copy}, part {number}.", *doc]
                words += sum(len(s.split()) for s in sentences)
                f.write("\n".join(sentences) + "\n\n")
        paths.append(path)
    return paths, words


def command(name: str, files: list[str], output: str, args) -> list[str]:
    vocab = os.path.join("keras_bert", "data", "vocab", "corpus_uncased_8k.txt")
    cmd = [sys.executable, "-m", "keras_bert.cli", "create-pretraining-data", "--vocab", vocab,
           "--input", *files, "--format", "sentences", "--output", output,
           "--num-shards", str(args.shards), "--dupe-factor", str(args.dupe_factor),
           "--seq-length", "128", "--max-predictions", "20"]
    if name != "single":
        cmd += ["--runner", "direct", "--workers", name.rsplit("-", 1)[1]]
    return cmd


def run_once(name: str, files, root: str, args) -> tuple[float, int, list[int]]:
    output = os.path.join(root, "out", name, "train.tfrecord")
    shutil.rmtree(os.path.dirname(output), ignore_errors=True)
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3")
    start = time.perf_counter()
    done = subprocess.run(command(name, files, output, args), capture_output=True, text=True,
                          env=env, timeout=3600)
    seconds = time.perf_counter() - start
    if done.returncode != 0:
        raise RuntimeError(f"{name} failed:\n{done.stderr[-3000:]}")
    examples = int(RESULT.search(done.stdout).group(1))
    split = SPLIT.search(done.stdout)
    return seconds, examples, [int(x) for x in split.group(1).split(",")] if split else []


def timed_rounds(files, root: str, args, contenders: list[str]) -> tuple[dict, dict, dict]:
    """`{name: [seconds]}`, `{name: examples}`, `{name: per-process split}` of `args.runs`
    interleaved rounds, the order rotated each round."""
    seconds = {name: [] for name in contenders}
    examples, split = {}, {}
    for round_ in range(args.runs):
        order = contenders[round_ % 3:] + contenders[:round_ % 3]
        for name in order:
            s, n, per_process = run_once(name, files, root, args)
            seconds[name].append(s)
            examples[name], split[name] = n, per_process
        print(f"  {len(files)} files, round {round_ + 1}: " + ", ".join(
            f"{n} {seconds[n][-1]:.1f}s" for n in contenders) + f" (load {load_average()})")
    if len(set(examples.values())) != 1:
        raise RuntimeError(f"the contenders wrote different example counts: {examples}")
    return seconds, examples, split


def parse_args(argv=None):
    """The command line's options (--quick: two tiny corpora, one round, two shards)."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--copies", default="3,9",
                        help="two corpus sizes (input files): the whole-command times of both "
                             "give the marginal rate, start-up excluded")
    parser.add_argument("--dupe-factor", type=int, default=1)
    parser.add_argument("--shards", type=int, default=8)
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args(argv)
    if args.quick:
        args.copies, args.runs, args.shards = "1,2", 1, 2
    return args


def measure_sizes(sizes: list[int], args, contenders: list[str]) -> tuple:
    """`(medians, example counts, per-process splits, word counts)`, one entry per corpus
    size: `{name: median seconds}`, the single writer's examples, `{name: split}`, words."""
    medians, counts, splits, words = [], [], [], []
    with tempfile.TemporaryDirectory() as root:
        for copies in sizes:
            folder = os.path.join(root, f"copies-{copies}")
            os.makedirs(folder)
            files, n_words = write_corpus(folder, copies)
            seconds, examples, split = timed_rounds(files, root, args, contenders)
            medians.append({n: statistics.median(s) for n, s in seconds.items()})
            counts.append(examples["single"])
            splits.append(split)
            words.append(n_words)
    return medians, counts, splits, words


def runner_table(sizes, medians, counts, splits, words, contenders) -> str:
    """The markdown table of every runner's whole-command time at every corpus size."""
    rows = []
    for copies, median, count, split, n_words in zip(sizes, medians, counts, splits, words,
                                                     strict=True):
        for name in contenders:
            rows.append([name, copies, n_words, count, f"{median[name]:.1f}",
                         f"{count / median[name]:.0f}",
                         f"{median['single'] / median[name]:.2f}x", split[name] or "-"])
    return markdown_table(["runner", "input files", "words", "examples",
                           "median s (whole command)", "examples/s", "vs single",
                           "examples per worker process"], rows)


def marginal_rates(medians, counts, contenders) -> tuple[dict, dict]:
    """`({name: marginal examples/s}, {name: start-up s})` from the two corpus sizes; None
    for a runner whose larger corpus did not take longer (sizes too close for the host's
    noise, as `--quick`'s are): a rate from a time difference of zero or less means nothing."""
    added = counts[-1] - counts[0]
    rate, startup = {}, {}
    for name in contenders:
        extra_seconds = medians[-1][name] - medians[0][name]
        if added <= 0 or extra_seconds <= 0:
            rate[name] = startup[name] = None
            continue
        rate[name] = added / extra_seconds
        startup[name] = medians[0][name] - counts[0] / rate[name]
    return rate, startup


def rate_row(name: str, rate: dict, startup: dict) -> list[str]:
    """`name`'s row of the marginal-rate table: "n/a" where a rate was not measured."""
    if rate[name] is None:
        return [name, "n/a", "n/a", "n/a"]
    versus = f"{rate[name] / rate['single']:.2f}x" if rate["single"] is not None else "n/a"
    return [name, f"{rate[name]:.0f}", versus, f"{startup[name]:.1f}"]


def print_scale_out(counts, words, rate: dict, args) -> None:
    """Prints the scale-out arithmetic for BERT's corpus, from the measured marginal rates
    (one line saying why not, where a rate it needs could not be measured)."""
    if rate["direct-1"] is None or rate["direct-2"] is None:
        print("no scale-out arithmetic: the larger corpus did not take the direct runners "
              "longer, so no marginal rate was measured (give --copies sizes further apart)")
        return
    per_word = counts[-1] / words[-1] / args.dupe_factor
    total = BERT_WORDS * per_word * 10  # dupe factor 10, as BERT
    per_process = rate["direct-1"]
    efficiency = min(1.0, rate["direct-2"] / (2 * per_process))
    print(f"BERT corpus ({BERT_WORDS / 1e9:.1f}B words, dupe factor 10, seq 128): "
          f"{per_word:.4f} examples per word per pass -> ~{total / 1e9:.2f}B examples; one "
          f"Beam worker process makes {per_process:.0f} examples/s; 2 processes on this host's "
          f"2 cores make {efficiency:.2f} x 2 of that")
    rows = [[workers, f"{total / (per_process * workers) / 3600:.2f}",
             f"{total / (per_process * workers * efficiency) / 3600:.2f}"]
            for workers in (1, 16, 64, 256, 1024)]
    print(markdown_table(["worker processes (1 core each)", "hours, linear",
                          "hours at this host's 2-process efficiency"], rows))


def main() -> int:
    """Times the three runners at both corpus sizes and prints the tables and arithmetic."""
    args = parse_args()
    sizes = [int(c) for c in args.copies.split(",")]
    info = machine_description()
    print(f"host: {host_line(info)}; {info['date']}; load {load_average()}")
    contenders = ["single", "direct-1", "direct-2"]
    medians, counts, splits, words = measure_sizes(sizes, args, contenders)
    print(f"dupe factor {args.dupe_factor}, seq 128, 20 predictions, {args.shards} shards; "
          f"medians of {args.runs} interleaved rounds")
    print(runner_table(sizes, medians, counts, splits, words, contenders))
    rate, startup = marginal_rates(medians, counts, contenders)
    print(markdown_table(
        ["runner", "marginal examples/s (start-up excluded)", "vs single", "start-up s"],
        [rate_row(name, rate, startup) for name in contenders]))
    print_scale_out(counts, words, rate, args)
    return 0


if __name__ == "__main__":
    sys.exit(main())
