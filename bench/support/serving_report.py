"""The tables of `bench/serving_latency.py`: p50 and p90 per contender, and the ratios of
each of our contenders to each peer, and of each reduced precision to float32 (`session`)."""

from __future__ import annotations

import json
import statistics

from bench.support import common

REDUCED = ("session_bf16", "session_int8", "session_int8_onednn")  # against `session`
THREADED = ("session_intra1",)  # `session` with one intra-op thread: against `session` too
SERVERS_THREADED = ("server_intra1", "server_intra1_merged")  # against `server`
OURS = ("session", *THREADED, "session_xla", "session_xla_onednn", *REDUCED)  # against peers
PEERS = ("ort", "ort_int8", "torch")


def table_row(model, length, batch, result, names, clients: int = 1) -> list:
    row = [model, length, batch]
    row += [f"{1e3 * statistics.median(result[n]['p50']):.1f}" for n in names]
    row += [f"{1e3 * common.percentile(result[n]['all'], 90):.1f}" for n in names]
    if clients > 1:  # what a server under that load answers: the median of the rounds
        row += [f"{statistics.median(result[n]['rate']):.1f}" for n in names]
    for ours, peer in ratio_pairs(names):
        ratio = statistics.median(p / s for s, p in zip(result[ours]["p50"],
                                                        result[peer]["p50"], strict=True))
        row.append(f"{ratio:.2f}x")
    return row


def ratio_pairs(names) -> list[tuple[str, str]]:
    """`(ours, other)`: each of our contenders against each peer, and each of our reduced
    precisions and thread settings against `session` (`server_intra1*` against `server`);
    the ratio is other's p50 / ours."""
    pairs = [(ours, peer) for ours in OURS if ours in names for peer in PEERS if peer in names]
    if "session" in names:
        pairs += [(ours, "session") for ours in (*REDUCED, *THREADED) if ours in names]
    if "server" in names:
        pairs += [(ours, "server") for ours in SERVERS_THREADED if ours in names]
    return pairs


def print_latencies(args, rows) -> None:
    header = ["model", "seq", "batch"] + [f"{n} p50 ms" for n in args.contenders]
    header += [f"{n} p90 ms" for n in args.contenders]
    if args.clients > 1:
        header += [f"{n} req/s" for n in args.contenders]
    header += [f"{p} / {ours} p50" for ours, p in ratio_pairs(args.contenders)]
    print(common.markdown_table(header, rows))
    print("(ratio > 1: the contender after the slash is faster; load average at the end: "
          f"{common.load_average()})")
    print(json.dumps({"rows": rows, "header": header}))
