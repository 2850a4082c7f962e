"""How long a runtime takes to settle after another runtime's turn in the same process: what
`bench/litert_latency.py`'s back-to-back mode must leave untimed at the start of each turn
(`--block-warmup`) to measure what a server answering one model sees.

For each pair (`target` after `other`): `other` answers `--before` requests, then `target`
answers `--after`; repeated `--repeats` times. Printed: the median over the repeats of each
of `target`'s first requests, the number of requests until it stays within 10% of its
steady state (the median of its last 10), and that steady state. The contenders are
`bench/support/litert_spans.py`'s (`--task tag` or `squad`: our LiteRT files float32 and int8,
`tokenizers` + ONNX Runtime float32 and int8, our SavedModel through TF Serving's loader).

    .venv/bin/python bench/runtime_switch.py --task tag --threads 2
    .venv/bin/python bench/runtime_switch.py --quick     # smoke run, tiny model
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.support import common  # noqa: E402
from bench.support.hf_models import write_hf_model  # noqa: E402
from bench.support.litert_spans import SPAN_LENGTH, build_spans, span_requests  # noqa: E402
from bench.support.texts import texts_of_length  # noqa: E402

PAIRS = ("litert_int8:litert_int8,litert_int8:litert,litert_int8:ort,litert_int8:ort_int8,"
         "litert_int8:session,ort_int8:ort_int8,ort_int8:litert,ort_int8:litert_int8,"
         "ort_int8:session,litert:ort,ort:litert")
SHOWN = 12  # first requests printed one by one


def parse_args(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--task", choices=("tag", "squad"), default="tag")
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--pairs", default=PAIRS, help="target:other pairs, comma-separated")
    p.add_argument("--before", type=int, default=30, help="requests of `other` first")
    p.add_argument("--after", type=int, default=40, help="requests of `target` timed after")
    p.add_argument("--repeats", type=int, default=10)
    p.add_argument("--quick", action="store_true", help="tiny random model, few requests")
    return p.parse_args(argv)


def settling(contenders: dict, requests: list[tuple], target: str, other: str,
             args) -> list[float]:
    """Per-request milliseconds of `target`'s first `args.after` requests after a turn of
    `other`, each the median over `args.repeats` repeats."""
    def turn(name: str, count: int) -> list[float]:
        times = []
        for request in requests[:count]:
            start = time.perf_counter()
            contenders[name](*request)
            times.append(1e3 * (time.perf_counter() - start))
        return times

    runs = []
    for _ in range(args.repeats):
        turn(other, args.before)
        runs.append(turn(target, args.after))
    return [statistics.median(column) for column in zip(*runs, strict=True)]


def row(target: str, other: str, per_request: list[float]) -> list:
    steady = statistics.median(per_request[-10:])
    unsettled = [i for i, ms in enumerate(per_request) if ms > 1.1 * steady]
    settled_after = unsettled[-1] + 1 if unsettled else 0
    return [target, other, " ".join(f"{ms:.2f}" for ms in per_request[:SHOWN]),
            settled_after, f"{steady:.2f}"]


def main(argv=None) -> int:
    args = parse_args(argv)
    if args.quick:
        args.before, args.after, args.repeats = 3, 12, 2
        args.pairs = "litert_int8:ort,ort_int8:litert_int8"
    common.configure_threads(args.threads)
    model = "tiny" if args.quick else "minilm-l6"
    with tempfile.TemporaryDirectory() as root:
        print(f"{model} {args.task}: writing the exports and the ONNX files ...",
              file=sys.stderr, flush=True)
        contenders = build_spans(root, model, args.task, args.threads, SPAN_LENGTH)
        vocab = os.path.join(write_hf_model(model, root), "vocab.txt")
        texts = texts_of_length(vocab, 32, max(args.before, args.after))
        requests = span_requests(args.task, texts)
        for request in requests[:5]:  # first calls: tracing, allocation
            for fn in contenders.values():
                fn(*request)
        rows = [row(t, o, settling(contenders, requests, t, o, args))
                for t, o in (pair.split(":") for pair in args.pairs.split(","))]
    print(f"{model} {args.task}, batch 1, 32 word pieces, {args.threads} threads, "
          f"{args.repeats} repeats of {args.before} requests of `other` then {args.after} of "
          f"`target` ({common.host_line(common.machine_description())})")
    print(common.markdown_table(
        ["target", "after a turn of", f"first {SHOWN} requests, p50 ms each",
         "requests until within 10% of steady", "steady p50 ms (last 10)"], rows))
    return 0


if __name__ == "__main__":
    sys.exit(main())
