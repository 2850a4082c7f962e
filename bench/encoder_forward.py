"""Forward (inference) throughput of our `BertEncoder` against Hugging Face and keras-hub.

Contenders, timed round-robin in one process (A, B, C, A, B, C, ...) after warm-up rounds:

* `ours`       `keras_bert.BertEncoder`, fp32, called through `tf.function` (no XLA);
* `ours_xla`   the same model through `tf.function(jit_compile=True)`;
* `ours_bf16`  the same weights in a `dtype="mixed_bfloat16"` encoder (bf16 matmuls,
               float32 variables, softmax and LayerNorm statistics);
* `hf`         `transformers.BertModel`, PyTorch eager, `torch.inference_mode()`, fp32;
* `ort`        the same `BertModel` exported to ONNX (`torch.onnx.export(dynamo=True)`) and run
               by ONNX Runtime fp32 on the CPU (its default full graph optimisation);
* `keras_hub`  `keras_hub.models.BertBackbone` of the same size (TensorFlow backend), fp32,
               through `tf.function`;
* `gemm`       a plain fp32 `tf.matmul` of the encoder's dominant shape
               `[batch*seq, hidden] x [hidden, intermediate]`, as the machine's achievable
               matmul rate in this run.

All models have random weights, random ids and a full mask. The FLOP count of a forward is
that of its matmuls (QKV, attention scores, probabilities x values, output projection, FFN:
`2*m*n*k` each); "of GEMM" is the encoder's FLOP rate as a fraction of `gemm`'s.

    .venv/bin/python bench/encoder_forward.py                 # both configs, ~5-10 minutes
    .venv/bin/python bench/encoder_forward.py --quick         # smoke check, seconds
    .venv/bin/python bench/encoder_forward.py --configs base --contenders ours,hf
"""

from __future__ import annotations

import argparse
import math
import os
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.support import common, sizes  # noqa: E402  (common: before TF/torch start)

# name: (num_layers, hidden_size, num_heads, intermediate_size, vocab_size); tiny: --quick
CONFIGS = sizes.table("minilm-l6", "base", tiny=sizes.QUICK)
ALL_CONTENDERS = ("ours", "ours_xla", "ours_bf16", "hf", "ort", "keras_hub", "gemm")


def parse_args(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--configs", default="minilm-l6,base",
                   help=f"comma-separated, of {sorted(CONFIGS)} (default: minilm-l6,base)")
    p.add_argument("--batch", type=int, default=32)
    p.add_argument("--seq", type=int, default=128)
    p.add_argument("--runs", type=int, default=7, help="timed rounds (median reported)")
    p.add_argument("--warmup", type=int, default=2, help="untimed rounds first")
    p.add_argument("--threads", type=int, default=2,
                   help="intra-op threads of TensorFlow and PyTorch (default 2)")
    p.add_argument("--inter-op", type=int, default=None,
                   help="inter-op threads of both (default: = --threads)")
    p.add_argument("--contenders", default=",".join(ALL_CONTENDERS),
                   help=f"comma-separated subset of {','.join(ALL_CONTENDERS)}")
    p.add_argument("--layers", type=int, default=None,
                   help="override every config's layer count (e.g. 1 for many short, "
                        "less disturbed timings on a busy machine)")
    p.add_argument("--quick", action="store_true",
                   help="tiny config, batch 2, seq 16, 2 runs: a smoke check")
    p.add_argument("--quiet", action="store_true", help="no per-run log lines")
    args = p.parse_args(argv)
    if args.quick:
        args.configs, args.batch, args.seq, args.runs, args.warmup = "tiny", 2, 16, 2, 1
    args.configs = [c.strip() for c in args.configs.split(",") if c.strip()]
    args.contenders = [c.strip() for c in args.contenders.split(",") if c.strip()]
    for c in args.configs:
        if c not in CONFIGS:
            p.error(f"unknown config {c!r}")
    for c in args.contenders:
        if c not in ALL_CONTENDERS:
            p.error(f"unknown contender {c!r}")
    return args


def forward_flops(layers, hidden, intermediate, batch, seq) -> int:
    """Matmul FLOPs of one encoder forward (the pooler's tiny matmul left out)."""
    tokens = batch * seq
    per_layer = (2 * tokens * hidden * 3 * hidden      # Q, K, V projections
                 + 2 * batch * seq * seq * hidden      # scores, all heads
                 + 2 * batch * seq * seq * hidden      # probabilities x values
                 + 2 * tokens * hidden * hidden        # attention output projection
                 + 2 * 2 * tokens * hidden * intermediate)  # FFN in and out
    return layers * per_layer


def cosine_rows(a, b):
    """Cosine similarity of matching rows of two 2-D arrays."""
    import numpy as np

    a, b = np.asarray(a, "float64"), np.asarray(b, "float64")
    return (a * b).sum(-1) / (np.linalg.norm(a, axis=-1) * np.linalg.norm(b, axis=-1))


def random_inputs(batch: int, seq: int, vocab: int) -> tuple:
    """`(ids, mask, types)` as int32 NumPy arrays: random ids (seed 0), a full mask, segment 0."""
    import numpy as np

    rng = np.random.default_rng(0)
    ids = rng.integers(1, vocab, (batch, seq)).astype("int32")
    mask = np.ones((batch, seq), "int32")
    types = np.zeros((batch, seq), "int32")
    return ids, mask, types


def bf16_agreement(ours, bf16_fn, inputs, hidden: int, log) -> dict:
    """Facts: the cosines of the bf16 encoder's outputs with the fp32 one's (pooled, tokens)."""
    import numpy as np

    ref = ours(inputs, training=False)
    low = bf16_fn(inputs)
    pooled = cosine_rows(ref["pooled_output"], low["pooled_output"])
    tokens = cosine_rows(np.reshape(ref["sequence_output"], (-1, hidden)),
                         np.reshape(low["sequence_output"], (-1, hidden)))
    log(f"  bf16 vs fp32: pooled cosine min {pooled.min():.6f} mean {pooled.mean():.6f}, "
        f"token cosine min {tokens.min():.6f}")
    return {"bf16_pooled_cosine_min": float(pooled.min()),
            "bf16_pooled_cosine_mean": float(pooled.mean()),
            "bf16_token_cosine_min": float(tokens.min())}


def ours_contenders(config, inputs, want: set, hidden: int, log) -> tuple[dict, dict]:
    """`({name: callable}, facts)` of our encoder's wanted contenders (fp32, XLA, bf16)."""
    import tensorflow as tf

    import keras_bert

    fns, facts = {}, {}
    ours = keras_bert.BertEncoder(config)
    ours_fn = tf.function(lambda x: ours(x, training=False)["pooled_output"])
    if "ours" in want:
        fns["ours"] = lambda: ours_fn(inputs).numpy()
    if "ours_xla" in want:
        xla_fn = tf.function(lambda x: ours(x, training=False)["pooled_output"],
                             jit_compile=True)
        fns["ours_xla"] = lambda: xla_fn(inputs).numpy()
    if "ours_bf16" in want:
        bf16 = keras_bert.BertEncoder(config, dtype="mixed_bfloat16")
        bf16.set_weights(ours.get_weights())
        bf16_fn = tf.function(lambda x: bf16(x, training=False))
        fns["ours_bf16"] = lambda: bf16_fn(inputs)["pooled_output"].numpy()
        facts.update(bf16_agreement(ours, bf16_fn, inputs, hidden, log))
    return fns, facts


def torch_contenders(name: str, dims: tuple, arrays: tuple, args,
                     want: set) -> tuple[dict, dict]:
    """`({name: callable}, facts)` of Hugging Face's `BertModel` in PyTorch and through ONNX
    Runtime, whichever are wanted."""
    import torch
    import transformers

    layers, hidden, heads, intermediate, vocab = dims
    ids, mask, types = arrays
    hf_config = transformers.BertConfig(
        vocab_size=vocab, hidden_size=hidden, num_hidden_layers=layers,
        num_attention_heads=heads, intermediate_size=intermediate, hidden_act="gelu")
    hf = transformers.BertModel(hf_config).eval()
    facts = {"hf_attn_implementation": getattr(hf.config, "_attn_implementation", "?")}
    hf_inputs = {"input_ids": torch.from_numpy(ids.astype("int64")),
                 "attention_mask": torch.from_numpy(mask.astype("int64")),
                 "token_type_ids": torch.from_numpy(types.astype("int64"))}

    def run_hf():
        with torch.inference_mode():
            return hf(**hf_inputs).pooler_output

    fns = {}
    if "hf" in want:
        fns["hf"] = run_hf
    if "ort" in want:
        onnx_path = os.path.join(args.scratch, f"{name}.onnx")
        session = common.ort_session(common.export_onnx(hf, onnx_path), args.threads)
        ort_inputs = {k: v.numpy() for k, v in hf_inputs.items()}
        fns["ort"] = lambda: session.run(["pooler_output"], ort_inputs)[0]
    return fns, facts


def keras_hub_contender(dims: tuple, inputs):
    """A callable: keras-hub's `BertBackbone` of the same size through `tf.function`."""
    import keras_hub
    import tensorflow as tf

    layers, hidden, heads, intermediate, vocab = dims
    kh = keras_hub.models.BertBackbone(
        vocabulary_size=vocab, num_layers=layers, num_heads=heads, hidden_dim=hidden,
        intermediate_dim=intermediate, max_sequence_length=512, num_segments=2)
    kh_inputs = {"token_ids": inputs["input_word_ids"],
                 "segment_ids": inputs["input_type_ids"],
                 "padding_mask": tf.cast(inputs["input_mask"], "bool")}
    kh_fn = tf.function(lambda x: kh(x, training=False)["pooled_output"])
    return lambda: kh_fn(kh_inputs).numpy()


def gemm_contender(batch: int, seq: int, hidden: int, intermediate: int) -> tuple:
    """`(callable, facts)`: repeated fp32 matmuls of the encoder's dominant shape."""
    import tensorflow as tf

    a = tf.random.normal((batch * seq, hidden))
    b = tf.random.normal((hidden, intermediate))
    gemm_fn = tf.function(lambda a, b: tf.matmul(a, b))
    gemm_flops = 2 * batch * seq * hidden * intermediate
    # Repeat so that one timed call does about as much work as a few encoder layers.
    reps = min(50, max(1, math.ceil(1.5e11 / gemm_flops)))

    def run_gemm():
        for _ in range(reps):
            out = gemm_fn(a, b)
        return out.numpy()

    return run_gemm, {"gemm_shape": f"{batch * seq}x{hidden}x{intermediate}",
                      "gemm_flops_per_call": gemm_flops * reps}


def build_contenders(name, args, log):
    """The zero-argument callables to time for config `name`, plus extra facts to report."""
    import tensorflow as tf

    import keras_bert

    layers, hidden, heads, intermediate, vocab = CONFIGS[name]
    layers = args.layers or layers
    dims = (layers, hidden, heads, intermediate, vocab)
    batch, seq = args.batch, args.seq
    ids, mask, types = arrays = random_inputs(batch, seq, vocab)
    config = keras_bert.BertConfig(vocab_size=vocab, hidden_size=hidden, num_layers=layers,
                                   num_heads=heads, intermediate_size=intermediate)
    inputs = {"input_word_ids": tf.constant(ids), "input_mask": tf.constant(mask),
              "input_type_ids": tf.constant(types)}
    want = set(args.contenders)
    fns, facts = ours_contenders(config, inputs, want, hidden, log)
    if want & {"hf", "ort"}:
        torch_fns, torch_facts = torch_contenders(name, dims, arrays, args, want)
        fns.update(torch_fns)
        facts.update(torch_facts)
    if "keras_hub" in want:
        fns["keras_hub"] = keras_hub_contender(dims, inputs)
    if "gemm" in want:
        fns["gemm"], gemm_facts = gemm_contender(batch, seq, hidden, intermediate)
        facts.update(gemm_facts)
    facts["forward_flops"] = forward_flops(layers, hidden, intermediate, batch, seq)
    return fns, facts


def main(argv=None):
    """Runs the benchmark with a scratch folder for the ONNX files."""
    args = parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="encoder-forward-") as scratch:
        args.scratch = scratch  # the ONNX files
        return run(args)


def print_header(args, threads: dict) -> None:
    """Prints the heading, the command, the machine, the threads and the library versions."""
    import keras
    import tensorflow as tf

    machine = common.machine_description()
    print("# Encoder forward throughput\n")
    print("command: " + " ".join([os.path.relpath(sys.executable)] + sys.argv))
    for k, v in machine.items():
        print(f"{k}: {v}")
    print(f"threads: {threads}")
    versions = {"tensorflow": tf.__version__, "keras": keras.__version__}
    for mod in ("torch", "transformers", "onnxruntime", "keras_hub"):
        try:
            versions[mod] = __import__(mod).__version__
        except ImportError:
            pass
    print("versions: " + ", ".join(f"{k} {v}" for k, v in versions.items()))
    print(f"batch {args.batch}, seq {args.seq}, {args.warmup} warm-up + {args.runs} timed "
          f"rounds, round-robin; median (best) per forward\n", flush=True)


def gemm_rate_of(timings: dict, facts: dict, best: bool = False):
    """The GEMM contender's GFLOP/s (median, or best run), or None when it did not run."""
    if "gemm" not in timings:
        return None
    seconds = timings["gemm"].best if best else timings["gemm"].median
    return facts["gemm_flops_per_call"] / seconds / 1e9


def throughput_rows(name: str, timings: dict, facts: dict, batch: int) -> list:
    """Rows of the throughput table for config `name`: one per contender."""
    flops, gemm_rate = facts["forward_flops"], gemm_rate_of(timings, facts)
    rows = []
    for cname, t in timings.items():
        if cname == "gemm":
            rows.append([name, f"gemm {facts['gemm_shape']} (fp32 ref)", "", "", "",
                         f"{gemm_rate:.0f}", "100%", f"{t.cpu_per_wall:.2f}"])
            continue
        rate = flops / t.median / 1e9
        of_gemm = f"{rate / gemm_rate:.0%}" if gemm_rate and "bf16" not in cname else ""
        rows.append([name, cname, f"{t.median * 1e3:.0f} ({t.best * 1e3:.0f})",
                     f"{batch / t.median:.1f}", f"{batch / t.best:.1f}",
                     f"{rate:.0f}", of_gemm, f"{t.cpu_per_wall:.2f}"])
    return rows


def speed_ratio_rows(name: str, timings: dict, facts: dict) -> list:
    """Rows of ours' speed over each other contender's, and of ours' share of the GEMM rate."""
    med = {c: t.median for c, t in timings.items()}
    best = {c: t.best for c, t in timings.items()}
    if "ours" not in med:
        return []
    summary = []
    for other, label in (("hf", "ours / HF torch"), ("ort", "ours / ONNX Runtime"),
                         ("keras_hub", "ours / keras-hub"),
                         ("ours_xla", "ours XLA / ours"),
                         ("ours_bf16", "ours bf16 / ours fp32")):
        if other in med:
            num, den = (other, "ours") if other.startswith("ours_") else ("ours", other)
            summary.append([name, label, f"{med[den] / med[num]:.2f}x",
                            f"{best[den] / best[num]:.2f}x"])
    gemm_rate = gemm_rate_of(timings, facts)
    if gemm_rate:
        flops = facts["forward_flops"]
        gemm_best_rate = gemm_rate_of(timings, facts, best=True)
        summary.append([name, "ours GFLOP/s / same-run GEMM GFLOP/s",
                        f"{flops / med['ours'] / 1e9 / gemm_rate:.0%}",
                        f"{flops / best['ours'] / 1e9 / gemm_best_rate:.0%}"])
    return summary


def fact_rows(name: str, facts: dict) -> list:
    """Rows of the summary table for the bf16 cosines and HF's attention implementation."""
    summary = []
    if "bf16_pooled_cosine_min" in facts:
        summary.append([name, "bf16 vs fp32 pooled cosine (min / mean over batch)",
                        f"{facts['bf16_pooled_cosine_min']:.6f}",
                        f"{facts['bf16_pooled_cosine_mean']:.6f}"])
        summary.append([name, "bf16 vs fp32 sequence_output cosine (min over tokens)",
                        f"{facts['bf16_token_cosine_min']:.6f}", ""])
    if "hf_attn_implementation" in facts:
        summary.append([name, "HF attention implementation",
                        facts["hf_attn_implementation"], ""])
    return summary


def run(args):
    """Times every config's contenders round-robin and prints the throughput and ratio tables."""
    threads = common.configure_threads(args.threads, args.inter_op)
    import keras

    log = (lambda s: None) if args.quiet else (lambda s: print(s, flush=True))
    print_header(args, threads)
    rows, summary = [], []
    for name in args.configs:
        layers, hidden, heads, intermediate, vocab = CONFIGS[name]
        layers = args.layers or layers
        log(f"## {name}: {layers} layers, hidden {hidden}, {heads} heads, FFN {intermediate}")
        fns, facts = build_contenders(name, args, log)
        timings = common.interleaved(fns, args.runs, args.warmup, log)
        rows += throughput_rows(name, timings, facts, args.batch)
        summary += speed_ratio_rows(name, timings, facts) + fact_rows(name, facts)
        log(f"  forward = {facts['forward_flops'] / 1e9:.1f} GFLOP; load average now "
            f"{common.load_average()}\n")
        del fns
        keras.backend.clear_session()

    print(common.markdown_table(
        ["config", "contender", "ms/batch median (best)", "seq/s median", "seq/s best",
         "GFLOP/s (median)", "of GEMM", "busy cores"], rows))
    print()
    print(common.markdown_table(["config", "ratio", "median", "best"], summary))
    print(f"\nload average at the end: {common.load_average()} "
          f"(anything above ~{args.threads} means other processes competed for the cores)")


if __name__ == "__main__":
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    main()
