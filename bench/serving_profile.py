"""Where a batch-1 request's time goes in our export, and why ONNX Runtime is faster there.

1. **Step stats of the export** as TF Serving runs it (`SessionBundle`, `Session.run` with a
   full trace): time per op type over `--requests` different texts of `--length`
   wordpieces, with each type's share and count per request (tokenizer ops included).
2. **The encoder's GEMMs alone**, at the shapes a request of `--length` tokens gives
   (`[tokens, hidden] x [hidden, n]` for every distinct dense layer): TensorFlow's
   MatMul + BiasAdd in a Session graph with the weights in variables (as in the export)
   and with the weights as graph constants (as a frozen graph would have them), against
   ONNX Runtime's MatMul + Add with the weights as initializers (as in an ONNX export);
   blocks of runs in rotating order, medians, GFLOP/s.
3. **Every layer's feed-forward GEMMs chained in one call** at 16, 32, 128 tokens (and
   `--length`): TF (`tf.function`, oneDNN), TF XLA and ONNX Runtime, so that no runtime's
   per-call overhead counts; run with `--threads 1` and `--threads 2` to compare each
   kernel's speed on one core and how it scales to two.

    .venv/bin/python bench/serving_profile.py                   # MiniLM-L6, 32 tokens
    .venv/bin/python bench/serving_profile.py --model base --length 128
    .venv/bin/python bench/serving_profile.py --quick           # tiny random model
"""

from __future__ import annotations

import argparse
import collections
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.support import common  # noqa: E402
from bench.support.hf_models import write_export, write_hf_model  # noqa: E402
from bench.support.texts import texts_of_length  # noqa: E402


def parse_args(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--model", default="minilm-l6", choices=("minilm-l6", "base", "tiny"))
    p.add_argument("--length", type=int, default=32, help="wordpieces per text")
    p.add_argument("--requests", type=int, default=50, help="traced requests")
    p.add_argument("--runs", type=int, default=200, help="GEMM runs per block")
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--quick", action="store_true", help="tiny random model: a smoke check")
    args = p.parse_args(argv)
    if args.quick:
        args.model, args.length, args.requests, args.runs = "tiny", 16, 5, 20
    return args


def op_type(node) -> str:
    label = node.timeline_label
    return label.split(" = ")[1].split("(")[0] if " = " in label else node.node_name


def step_stats(bundle, texts, threads) -> tuple[collections.Counter, collections.Counter, float]:
    """Microseconds and counts per op type, summed over `texts`; and the median wall time."""
    import numpy as np
    import tensorflow as tf

    signature = bundle.signature_def("serving_default")
    feed_name, fetch = signature.inputs["text"].name, signature.outputs["pooled_output"].name
    options = tf.compat.v1.RunOptions(trace_level=tf.compat.v1.RunOptions.FULL_TRACE)
    micros, counts, wall = collections.Counter(), collections.Counter(), []
    for text in texts * 2:  # the first pass warms up every shape
        bundle.session.run(fetch, {feed_name: np.array([text], dtype=object)})
    for text in texts:
        start = time.perf_counter()
        bundle.session.run(fetch, {feed_name: np.array([text], dtype=object)})
        wall.append(time.perf_counter() - start)
    for text in texts:
        metadata = tf.compat.v1.RunMetadata()
        bundle.session.run(fetch, {feed_name: np.array([text], dtype=object)},
                           options=options, run_metadata=metadata)
        for device in metadata.step_stats.dev_stats:
            for node in device.node_stats:
                micros[op_type(node)] += node.all_end_rel_micros
                counts[op_type(node)] += 1
    return micros, counts, statistics.median(wall)


def gemm_shapes(config: dict, tokens: int) -> list[tuple[int, int, int]]:
    hidden, inner = config["hidden_size"], config["intermediate_size"]
    return [(tokens, hidden, hidden), (tokens, hidden, inner), (tokens, inner, hidden)]


def dense_contenders(m: int, k: int, n: int, threads: int) -> dict:
    """`{"tf": call, "tf_const": call, "ort": call}`: one `[m, k] x [k, n]` + bias in each
    runtime (TF with the weights in variables, as in the export, and as graph constants)."""
    import numpy as np
    import onnxruntime
    import tensorflow as tf
    from onnx import TensorProto, helper, numpy_helper

    rng = np.random.default_rng(0)
    x = rng.standard_normal((m, k), dtype=np.float32)
    w = (0.02 * rng.standard_normal((k, n))).astype(np.float32)
    b = np.zeros(n, np.float32)
    graph = tf.Graph()
    with graph.as_default():
        feed = tf.compat.v1.placeholder(tf.float32, (None, k))
        kernel, bias = tf.Variable(w), tf.Variable(b)
        out = tf.nn.bias_add(tf.matmul(feed, kernel), bias)
        # the same with the weights frozen into the graph as constants (as in a frozen graph)
        out_const = tf.nn.bias_add(tf.matmul(feed, tf.constant(w)), tf.constant(b))
        init = tf.compat.v1.global_variables_initializer()
    session = tf.compat.v1.Session(graph=graph, config=tf.compat.v1.ConfigProto(
        intra_op_parallelism_threads=threads, inter_op_parallelism_threads=threads))
    session.run(init)
    model = helper.make_model(helper.make_graph(
        [helper.make_node("MatMul", ["x", "w"], ["t"]),
         helper.make_node("Add", ["t", "b"], ["y"])], "dense",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [None, k])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [None, n])],
        [numpy_helper.from_array(w, "w"), numpy_helper.from_array(b, "b")]),
        opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    options = onnxruntime.SessionOptions()
    options.intra_op_num_threads = threads
    ort = onnxruntime.InferenceSession(model.SerializeToString(), options,
                                       providers=["CPUExecutionProvider"])
    return {"tf": lambda: session.run(out, {feed: x}),
            "tf_const": lambda: session.run(out_const, {feed: x}),
            "ort": lambda: ort.run(None, {"x": x})}


def rotated_medians(calls: dict, runs: int) -> dict[str, float]:
    """Median seconds per call of each of `calls`: 6 blocks of `runs` calls, the order
    rotating every block, the first block warm-up."""
    seconds = {name: [] for name in calls}
    names = list(calls)
    for block in range(6):
        for name in names[block % len(names):] + names[:block % len(names)]:
            for _ in range(runs):
                start = time.perf_counter()
                calls[name]()
                if block > 0:
                    seconds[name].append(time.perf_counter() - start)
    return {name: statistics.median(s) for name, s in seconds.items()}


def time_gemms(shapes, runs: int, threads: int) -> list[list]:
    """Per shape: TF Session (variables; constants) vs ONNX Runtime (initializers); medians."""
    rows = []
    for m, k, n in shapes:
        medians = rotated_medians(dense_contenders(m, k, n, threads), runs)
        tf_s, const_s, ort_s = (medians[name] for name in ("tf", "tf_const", "ort"))
        flops = 2 * m * k * n
        rows.append([f"{m} x {k} x {n}", *(f"{1e6 * t:.0f} ({flops / t / 1e9:.0f})"
                                           for t in (tf_s, const_s, ort_s)),
                     f"{tf_s / ort_s:.2f}", f"{const_s / ort_s:.2f}"])
    return rows


def ffn_chain_contenders(config: dict, tokens: int, threads: int) -> dict:
    """`{"tf": call, "tf_xla": call, "ort": call}`: the feed-forward GEMMs of every layer
    chained in one call (`x = (x W1 + b1) W2 + b2` per layer, no activation), so the
    per-call overhead of a runtime weighs nothing and only the GEMM kernels differ."""
    import numpy as np
    import onnxruntime
    import tensorflow as tf
    from onnx import TensorProto, helper, numpy_helper

    hidden, inner = config["hidden_size"], config["intermediate_size"]
    rng = np.random.default_rng(0)
    weights = [((0.02 * rng.standard_normal((hidden, inner))).astype(np.float32),
                np.zeros(inner, np.float32),
                (0.02 * rng.standard_normal((inner, hidden))).astype(np.float32),
                np.zeros(hidden, np.float32)) for _ in range(config["num_hidden_layers"])]
    x = rng.standard_normal((tokens, hidden), dtype=np.float32)
    variables = [[tf.Variable(a) for a in layer] for layer in weights]

    def chain(y):
        for w1, b1, w2, b2 in variables:
            y = tf.nn.bias_add(tf.matmul(tf.nn.bias_add(tf.matmul(y, w1), b1), w2), b2)
        return y

    plain, xla = tf.function(chain), tf.function(chain, jit_compile=True)
    feed = tf.constant(x)
    nodes, initializers, previous = [], [], "x"
    for i, layer in enumerate(weights):
        names = [f"w1_{i}", f"b1_{i}", f"w2_{i}", f"b2_{i}"]
        initializers += [numpy_helper.from_array(a, name)
                         for a, name in zip(layer, names, strict=True)]
        nodes += [helper.make_node("MatMul", [previous, names[0]], [f"m1_{i}"]),
                  helper.make_node("Add", [f"m1_{i}", names[1]], [f"h_{i}"]),
                  helper.make_node("MatMul", [f"h_{i}", names[2]], [f"m2_{i}"]),
                  helper.make_node("Add", [f"m2_{i}", names[3]], [f"y_{i}"])]
        previous = f"y_{i}"
    model = helper.make_model(helper.make_graph(
        nodes, "ffn_chain", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [None, hidden])],
        [helper.make_tensor_value_info(previous, TensorProto.FLOAT, [None, hidden])],
        initializers), opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    options = onnxruntime.SessionOptions()
    options.intra_op_num_threads = threads
    ort = onnxruntime.InferenceSession(model.SerializeToString(), options,
                                       providers=["CPUExecutionProvider"])
    return {"tf": lambda: plain(feed).numpy(), "tf_xla": lambda: xla(feed).numpy(),
            "ort": lambda: ort.run(None, {"x": x})}


def time_ffn_chain(config: dict, lengths: list[int], runs: int, threads: int) -> list[list]:
    """Per token count: the chained feed-forward GEMMs in TF, TF XLA and ONNX Runtime."""
    rows = []
    for tokens in lengths:
        medians = rotated_medians(ffn_chain_contenders(config, tokens, threads),
                                  max(runs // 10, 5))
        flops = 4 * tokens * config["hidden_size"] * config["intermediate_size"] * (
            config["num_hidden_layers"])
        rows.append([tokens, threads, *(f"{1e3 * medians[n]:.2f} ({flops / medians[n] / 1e9:.0f})"
                                        for n in ("tf", "tf_xla", "ort")),
                     f"{medians['tf'] / medians['ort']:.2f}",
                     f"{medians['tf_xla'] / medians['ort']:.2f}"])
    return rows


def main(argv=None) -> int:
    args = parse_args(argv)
    common.configure_threads(args.threads)

    from keras_bert.export.session_bundle import SessionBundle

    info = common.machine_description()
    print(f"# serving profile: {args.model}, {args.length} wordpieces, batch 1, "
          f"{common.host_line(info)}, "
          f"TF_ENABLE_ONEDNN_OPTS={os.environ.get('TF_ENABLE_ONEDNN_OPTS', '<unset>')}, "
          f"{info['date']}")
    with tempfile.TemporaryDirectory(prefix="serving-profile-") as root:
        hf_dir = write_hf_model(args.model, root)
        config = json.load(open(os.path.join(hf_dir, "config.json")))
        export = write_export(hf_dir, root)
        texts = texts_of_length(os.path.join(hf_dir, "vocab.txt"), args.length, args.requests)
        import tensorflow as tf

        session_config = tf.compat.v1.ConfigProto(
            intra_op_parallelism_threads=args.threads, inter_op_parallelism_threads=args.threads)
        with SessionBundle(export, config=session_config) as bundle:
            micros, counts, wall = step_stats(bundle, texts, args.threads)
    total = sum(micros.values())
    n = len(texts)
    print(f"\nwall time per request (untraced): p50 {1e3 * wall:.2f} ms; traced ops per "
          f"request: {sum(counts.values()) / n:.0f}, summed op time {total / n / 1e3:.2f} ms "
          "(ops on the two threads overlap)\n")
    rows = [[op, f"{micros[op] / n:.0f}", f"{100 * micros[op] / total:.1f}",
             f"{counts[op] / n:.0f}"] for op, _ in micros.most_common(15)]
    print(common.markdown_table(["op type", "us per request", "share %", "count"], rows))
    shapes = gemm_shapes(config, args.length)
    print(f"\nGEMMs of one layer at {args.length} tokens (median of {5 * args.runs} runs each, "
          f"{args.threads} threads):\n")
    print(common.markdown_table(
        ["m x k x n", "TF variables us (GFLOP/s)", "TF constants us (GFLOP/s)",
         "ORT us (GFLOP/s)", "TF variables / ORT", "TF constants / ORT"],
        time_gemms(shapes, args.runs, args.threads)))
    lengths = sorted({16, 32, 128, args.length} if not args.quick else {args.length})
    print(f"\nEvery layer's feed-forward GEMMs chained in one call ({args.threads} threads; "
          "ms per call, GFLOP/s; run again with another --threads to see the scaling):\n")
    print(common.markdown_table(
        ["tokens", "threads", "TF ms (GFLOP/s)", "TF XLA ms (GFLOP/s)", "ORT ms (GFLOP/s)",
         "TF / ORT", "TF XLA / ORT"], time_ffn_chain(config, lengths, args.runs, args.threads)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
