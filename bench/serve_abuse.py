"""`keras-bert serve` under the largest requests its default limits allow, from many clients.

    .venv/bin/python bench/serve_abuse.py            # BERT-base (random weights), 16 clients
    .venv/bin/python bench/serve_abuse.py --quick    # BERT-tiny, 4 small clients (smoke)

Starts `keras-bert serve` with its default limits (256 rows, 1 MiB strings, 64 MiB bodies,
4 model calls at once) on an export of a BERT model, then `--clients` REST clients each send
`--rounds` of the largest request allowed (256 texts of `--string-kb` KiB: a ~64 MiB body)
at the same time. Reports what was answered, the latency, the server's peak resident memory
(VmHWM) and whether it answers a status request afterwards. The memory, not the speed, is
the point: the defaults must keep a 2-core, 24 GB machine alive.
"""

from __future__ import annotations

import argparse
import http.client
import json
import os
import re
import subprocess
import sys
import tempfile
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.support.common import REPO, load_average, machine_description  # noqa: E402

WORDS = "the whale ship sea captain harpoon white deep ocean voyage".split()


def _model(preset: str, out: str) -> str:
    from keras_bert import BertConfig, BertEncoder
    from keras_bert.checkpoints.model_dir import save_model_dir
    from keras_bert.data.corpus import DEFAULT_VOCAB
    from keras_bert.tasks.task_dir import export_model

    with open(DEFAULT_VOCAB, encoding="utf-8") as f:
        vocab_size = sum(1 for _ in f)
    encoder = BertEncoder(BertConfig.from_preset(preset, vocab_size=vocab_size))
    save_model_dir(encoder, os.path.join(out, "model"), DEFAULT_VOCAB, lower_case=True)
    return os.path.dirname(export_model(os.path.join(out, "model"),
                                        os.path.join(out, "serving", "bert"), target=None).path)


def _serve(base_dir: str) -> tuple[subprocess.Popen, str, int]:
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3", PYTHONPATH=REPO)
    process = subprocess.Popen(
        [sys.executable, "-m", "keras_bert.cli", "serve", base_dir, "--grpc-port", "0",
         "--rest-port", "0", "--log-level", "WARNING"],
        cwd=REPO, env=env, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    lines: list[str] = []
    threading.Thread(target=lambda: lines.extend(iter(process.stdout.readline, "")),
                     daemon=True).start()
    deadline = time.monotonic() + 300
    while not any(line.startswith("Ctrl-C") for line in list(lines)):
        if process.poll() is not None or time.monotonic() > deadline:
            raise SystemExit("keras-bert serve did not start")
        time.sleep(0.2)
    host, port = re.search(r"REST\s+http://([\d.]+):(\d+)", "".join(lines)).groups()
    return process, host, int(port)


def _peak_rss_mb(pid: int) -> float:
    with open(f"/proc/{pid}/status", encoding="ascii") as f:
        return int(re.search(r"VmHWM:\s+(\d+) kB", f.read()).group(1)) / 1024


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--preset", default="base")
    parser.add_argument("--clients", type=int, default=16)
    parser.add_argument("--rounds", type=int, default=1)
    parser.add_argument("--rows", type=int, default=256, help="texts per request")
    parser.add_argument("--string-kb", type=float, default=250.0, help="KiB per text")
    parser.add_argument("--quick", action="store_true")
    args = parser.parse_args()
    if args.quick:
        args.preset, args.clients, args.rows, args.string_kb = "tiny", 4, 16, 4.0
    text = " ".join(WORDS[i % len(WORDS)] for i in range(int(args.string_kb * 1024) // 6))
    body = json.dumps({"instances": [text[:int(args.string_kb * 1024)]] * args.rows}).encode()
    machine = machine_description()
    print(f"machine: {machine['cpu_model']}, {machine['cpus']} CPUs, load {load_average()}")
    with tempfile.TemporaryDirectory() as tmp:
        process, host, port = _serve(_model(args.preset, tmp))
        try:
            idle_mb = _peak_rss_mb(process.pid)

            def client(_):
                latencies, statuses = [], []
                for _ in range(args.rounds):
                    conn = http.client.HTTPConnection(host, port, timeout=3600)
                    started = time.perf_counter()
                    conn.request("POST", "/v1/models/bert:predict", body=body,
                                 headers={"Content-Type": "application/json"})
                    response = conn.getresponse()
                    answer = json.loads(response.read())
                    latencies.append(time.perf_counter() - started)
                    ok = response.status == 200 and len(answer["predictions"]) == args.rows
                    statuses.append(200 if ok else response.status)
                    conn.close()
                    print(f"  answered {response.status} after {latencies[-1]:.1f} s, server "
                          f"peak RSS {_peak_rss_mb(process.pid):.0f} MB", flush=True)
                return latencies, statuses

            started = time.perf_counter()
            with ThreadPoolExecutor(args.clients) as pool:
                results = list(pool.map(client, range(args.clients)))
            elapsed = time.perf_counter() - started
            latencies = sorted(t for r in results for t in r[0])
            answered = sum(s == 200 for r in results for s in r[1])
            conn = http.client.HTTPConnection(host, port, timeout=60)
            conn.request("GET", "/v1/models/bert")
            status_ok = conn.getresponse().status == 200
            peak = _peak_rss_mb(process.pid)
        finally:
            process.kill()
            process.wait(30)
    print(f"BERT-{args.preset}, {args.clients} clients x {args.rounds} request(s) of "
          f"{args.rows} texts x {args.string_kb:g} KiB ({len(body) / 2 ** 20:.1f} MiB body)")
    print("| answered | p50 s | max s | wall s | server RSS idle MB | server peak RSS MB "
          "| status after |")
    print("|---|---|---|---|---|---|---|")
    print(f"| {answered}/{args.clients * args.rounds} | {latencies[len(latencies) // 2]:.1f} "
          f"| {latencies[-1]:.1f} | {elapsed:.1f} | {idle_mb:.0f} | {peak:.0f} "
          f"| {'200' if status_ok else 'FAILED'} |")


if __name__ == "__main__":
    main()
