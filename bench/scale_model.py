"""Scale on paper: BERT-base and BERT-Large data-parallel pretraining steps at 8, 64 and 512
GPUs, predicted from the bytes all-reduced per step, the links' bandwidths and the step time
one H200 measured (bench/RESULTS.md). A model, not a measurement: docs/scaling.md holds its
tables (`--markdown` prints them) and says what it leaves out.

    python bench/scale_model.py [--markdown] [--results bench/RESULTS.md]

- **Bytes per step**: every trainable parameter of `BertPretrainer` (encoder, pooler, MLM
  head tied to the word embeddings, NSP head), counted from `keras_bert.config.PRESETS`, as
  float32 gradients: under `mixed_bfloat16` the variables, so their gradients, stay float32.
- **Ring all-reduce** of B bytes over n devices: `2 (n-1)/n * B / bandwidth`, each device
  sending and receiving at once at `bandwidth` (one direction of its link).
- **Hierarchical** over nodes of 8: a reduce-scatter and an all-gather over NVLink inside the
  node (together one ring all-reduce of B over 8), and between them an all-reduce across the
  N nodes of each GPU's 1/8 of B, all 8 GPUs of a node at once, each on its own NIC
  (a DGX H100's layout: eight 400 Gb/s ConnectX-7, one per GPU). The second table has one
  400 Gb/s NIC per node, all of B through it.
- **Compute**: the H200's measured step at its batch (the mean of the run's calls), per
  device; each device keeps that batch, so the global batch grows with the devices.
- **Efficiency** = compute / (compute + communication not overlapped). No overlap: all of
  it. Full overlap: the all-reduce runs behind the backward pass (2/3 of the step's FLOPs),
  so only what exceeds it is exposed.
"""

from __future__ import annotations

import argparse
import math
import os
import re
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from keras_bert.config import PRESETS  # noqa: E402

RESULTS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "RESULTS.md")
# NVIDIA H100 Tensor Core GPU datasheet (SXM5): "NVLink: 900GB/s", both directions together;
# a ring sends and receives at once, so each direction carries half.
NVLINK_BYTES_PER_S = 900e9 / 2
NETWORK_BYTES_PER_S = 400e9 / 8  # 400 Gb/s InfiniBand NDR / 400GbE, one direction
GPUS_PER_NODE = 8
DEVICES = (8, 64, 512)
GRADIENT_BYTES = 4  # float32
BACKWARD_SHARE = 2 / 3  # of a training step's FLOPs: backward 2x the forward's
TARGET = 0.90
MODELS = {"BERT-base": "base", "BERT-Large": "large"}  # RESULTS.md's names -> PRESETS'


def parameters(config) -> int:
    """Trainable parameters of `BertPretrainer` for a `BertConfig`."""
    h, i, v = config.hidden_size, config.intermediate_size, config.vocab_size
    embeddings = (v + config.max_position_embeddings + config.type_vocab_size) * h + 2 * h
    layer = 4 * (h * h + h) + 2 * h + (h * i + i) + (i * h + h) + 2 * h
    pooler = h * h + h
    mlm = v + (h * h + h) + 2 * h  # output bias; its weights are the word embeddings
    nsp = 2 * h + 2
    return embeddings + config.num_layers * layer + pooler + mlm + nsp


def h200_steps(path: str = RESULTS) -> dict[str, tuple[int, float]]:
    """`{model: (batch, sequences/s)}` from the H200 table of bench/RESULTS.md, the mean of
    its calls (one batch per model)."""
    row = re.compile(r"^\| (BERT-base|BERT-Large) \| ([\d,]+) \| \d+ \| \*\*([\d,]+)\*\* \|",
                     re.MULTILINE)
    with open(path, encoding="utf-8") as f:
        found = row.findall(f.read())
    runs: dict[str, list[tuple[int, int]]] = {}
    for model, batch, rate in found:
        runs.setdefault(model, []).append((int(batch.replace(",", "")),
                                           int(rate.replace(",", ""))))
    if set(runs) != set(MODELS) or any(len({b for b, _ in r}) != 1 for r in runs.values()):
        raise ValueError(f"{path}: expected one batch for each of {list(MODELS)}, got {runs}")
    return {m: (r[0][0], sum(rate for _, rate in r) / len(r)) for m, r in runs.items()}


def ring_seconds(nbytes: float, n: int, bandwidth: float) -> float:
    """A ring all-reduce of `nbytes` over `n` devices at `bandwidth` bytes/s each way."""
    return 2 * (n - 1) / n * nbytes / bandwidth


def allreduce_seconds(nbytes: float, devices: int, nic_per_gpu: bool = True):
    """`(NVLink seconds, network seconds)` of a hierarchical all-reduce over `devices`."""
    inside = ring_seconds(nbytes, min(devices, GPUS_PER_NODE), NVLINK_BYTES_PER_S)
    nodes = devices // GPUS_PER_NODE
    if nodes <= 1:
        return inside, 0.0
    across = (ring_seconds(nbytes / GPUS_PER_NODE, nodes, NETWORK_BYTES_PER_S) if nic_per_gpu
              else ring_seconds(nbytes, nodes, NETWORK_BYTES_PER_S))
    return inside, across


def efficiency(compute: float, communication: float, overlap: bool) -> float:
    exposed = (max(0.0, communication - BACKWARD_SHARE * compute) if overlap
               else communication)
    return compute / (compute + exposed)


def rows(steps: dict[str, tuple[int, float]], nic_per_gpu: bool = True) -> list[dict]:
    """One row per model and device count."""
    table = []
    for model, preset in MODELS.items():
        batch, rate = steps[model]
        params = parameters(PRESETS[preset])
        nbytes = params * GRADIENT_BYTES
        compute = batch / rate
        for devices in DEVICES:
            inside, across = allreduce_seconds(nbytes, devices, nic_per_gpu)
            communication = inside + across
            # Sequences per device per optimizer step for TARGET without overlap:
            # b * compute / batch >= TARGET / (1 - TARGET) * communication.
            needed = math.ceil(TARGET / (1 - TARGET) * communication * rate)
            table.append(dict(
                model=model, params=params, megabytes=nbytes / 1e6, devices=devices,
                nodes=max(1, devices // GPUS_PER_NODE), batch=batch,
                global_batch=batch * devices, compute_ms=compute * 1e3,
                nvlink_ms=inside * 1e3, network_ms=across * 1e3,
                none=efficiency(compute, communication, overlap=False),
                full=efficiency(compute, communication, overlap=True),
                needed=needed, accumulation=math.ceil(needed / batch)))
    return table


def markdown(steps: dict[str, tuple[int, float]]) -> str:
    """The tables docs/scaling.md holds: the inputs, then both network layouts."""
    lines = ["| model | trainable parameters | float32 gradients, MB | H200 batch | "
             "H200 sequences/s | compute per step, ms |", "|---|---|---|---|---|---|"]
    for row in rows(steps)[::len(DEVICES)]:
        rate = steps[row["model"]][1]
        lines.append(f"| {row['model']} | {row['params']:,} | {row['megabytes']:,.1f} | "
                     f"{row['batch']:,} | {rate:,.1f} | {row['compute_ms']:.1f} |")
    for nic_per_gpu, title in ((True, "One 400 Gb/s NIC per GPU (a DGX H100's layout)"),
                               (False, "One 400 Gb/s NIC per node")):
        lines += ["", f"**{title}**", "",
                  "| model | GPUs (nodes) | global batch | all-reduce ms: NVLink + network | "
                  "efficiency, no overlap | efficiency, full overlap | sequences per GPU "
                  "per update for 90% | accumulation steps at the H200 batch |",
                  "|---|---|---|---|---|---|---|---|"]
        for row in rows(steps, nic_per_gpu):
            lines.append(
                f"| {row['model']} | {row['devices']} ({row['nodes']}) | "
                f"{row['global_batch']:,} | {row['nvlink_ms']:.2f} + {row['network_ms']:.2f} | "
                f"{row['none']:.1%} | {row['full']:.1%} | {row['needed']:,} | "
                f"{row['accumulation']} |")
    return "\n".join(lines) + "\n"


def text(steps: dict[str, tuple[int, float]]) -> str:
    """The same figures as plain lines."""
    out = []
    for nic_per_gpu in (True, False):
        out.append("one NIC per GPU" if nic_per_gpu else "one NIC per node")
        for row in rows(steps, nic_per_gpu):
            out.append(f"  {row['model']:<10} {row['devices']:>3} GPUs: compute "
                       f"{row['compute_ms']:.1f} ms, all-reduce {row['nvlink_ms']:.2f} + "
                       f"{row['network_ms']:.2f} ms, efficiency {row['none']:.1%} (no "
                       f"overlap) to {row['full']:.1%} (full), 90% from {row['needed']:,} "
                       "sequences per GPU")
    return "\n".join(out) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--markdown", action="store_true",
                        help="print docs/scaling.md's tables")
    parser.add_argument("--results", default=RESULTS, help="bench/RESULTS.md")
    parser.add_argument("--quick", action="store_true",
                        help="the same (arithmetic only; for tests/test_bench.py)")
    args = parser.parse_args(argv)
    steps = h200_steps(args.results)
    print(markdown(steps) if args.markdown else text(steps), end="")
    return 0


if __name__ == "__main__":
    sys.exit(main())
