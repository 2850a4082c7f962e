"""What XNNPACK's settings do for the LiteRT export's float32 network on this CPU, against
ONNX Runtime float32 on the same ids: the network alone (ids in, the pooler output out,
batch 1, no tokenizer), so that only the runtimes' kernels differ.

Contenders (all-MiniLM-L6-v2, the network as `keras_bert.export.litert_graph` freezes it):

* `interpreter`            the export's form: traced for any length, `ai-edge-litert`'s
                           `Interpreter`, `--threads` threads (`LiteRTModel`'s default: every
                           CPU the process may use);
* `interpreter_1_thread`   the same at LiteRT's own default of one thread;
* `interpreter_static`     traced for exactly `[1, length]` (static shapes per length);
* `interpreter_latest`     `experimental_default_delegate_latest_features` (XNNPACK's
                           newest operators);
* `compiled`               the same static file through LiteRT's `CompiledModel` API
                           (XNNPACK as its CPU accelerator), whose `CpuOptions` take
                           XNNPACK's flags;
* `compiled_fp16`          with XNNPACK's `FORCE_FP16` flag (fp16 inference of fp32
                           operators; needs fp16 arithmetic, ARM or AVX512-FP16);
* `compiled_ynnpack`       `enable_ynnpack` (YNNPACK before XNNPACK, where the build has it);
* `ort`                    ONNX Runtime float32 (the ratios' reference), `--threads` threads.

Each contender's pooler output is compared with the Keras network's (max difference
printed); those that cannot be created say why and are left out. Turns by blocks of 20
requests, each opened by 3 untimed ones (`common.interleaved`), medians.

    .venv/bin/python bench/litert_xnnpack.py --threads 2 --length 32 --runs 600
    .venv/bin/python bench/litert_xnnpack.py --quick     # smoke run, tiny random model
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.support import common  # noqa: E402
from bench.support.hf_models import write_hf_model, write_onnx  # noqa: E402

FORCE_FP16 = 0x4  # TFLITE_XNNPACK_DELEGATE_FLAG_FORCE_FP16 (xnnpack_delegate.h)
DEFAULT_FLAGS = 0x3  # QS8 | QU8, XNNPACK's defaults


def parse_args(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--length", type=int, default=32, help="word pieces per request")
    p.add_argument("--runs", type=int, default=600, help="timed requests per contender")
    p.add_argument("--quick", action="store_true", help="tiny random model, few runs")
    return p.parse_args(argv)


def tflite_network(encoder, length: int | None) -> bytes:
    """The frozen network as a LiteRT file: `[1, length]` ids (None: any length) -> pooled."""
    import tensorflow as tf

    from keras_bert.export.litert_graph import frozen_network

    network = frozen_network(encoder)
    specs = [tf.TensorSpec([1, length], tf.int32, name=n) for n in ("ids", "mask", "types")]

    @tf.function(input_signature=specs)
    def pooled(ids, mask, types):
        out = network({"input_word_ids": ids, "input_mask": mask, "input_type_ids": types})
        return {"pooled": out["pooled_output"]}
    holder = tf.Module()
    holder.pooled = pooled  # the converter names the signature after the holder's function
    return tf.lite.TFLiteConverter.from_concrete_functions(
        [pooled.get_concrete_function()], holder).convert()


def interpreter(blob: bytes, feed: dict, threads: int, latest: bool = False):
    from ai_edge_litert.interpreter import Interpreter

    runner = Interpreter(model_content=blob, num_threads=threads,
                         experimental_default_delegate_latest_features=latest
                         ).get_signature_runner()
    return lambda: runner(**feed)["pooled"]


def compiled(blob: bytes, feed: dict, threads: int, width: int, flags: int | None = None,
             ynnpack: bool = False):
    """The file through `CompiledModel`; its `[1, width]` output read back as float32."""
    import numpy as np
    from ai_edge_litert.compiled_model import CompiledModel
    from ai_edge_litert.cpu_options import CpuOptions
    from ai_edge_litert.options import Options

    options = Options(cpu_options=CpuOptions(num_threads=threads, xnnpack_flags=flags,
                                             enable_ynnpack=ynnpack))
    model = CompiledModel.from_buffer(blob, options=options)
    inputs, outputs = model.create_input_buffers(0), model.create_output_buffers(0)
    names = model.get_signature_by_index(0)["inputs"]

    def call():
        for buffer, name in zip(inputs, names, strict=True):
            buffer.write(feed[name])
        model.run_by_index(0, inputs, outputs)
        return np.asarray(outputs[0].read(width, np.float32))[None]
    return call


def contenders(hf_dir: str, root: str, length: int, threads: int) -> tuple[dict, object]:
    """name -> zero-argument call answering the pooler output; and the Keras reference."""
    import numpy as np

    from keras_bert.checkpoints import load_hf_dir

    encoder = load_hf_dir(hf_dir)
    rng = np.random.default_rng(0)
    ids = np.concatenate([[2], rng.integers(5, 1000, length), [3]]).astype(np.int32)[None]
    feed = {"ids": ids, "mask": np.ones_like(ids), "types": np.zeros_like(ids)}
    reference = np.asarray(encoder({"input_word_ids": ids, "input_mask": feed["mask"],
                                    "input_type_ids": feed["types"]})["pooled_output"])
    width = reference.shape[-1]
    dynamic, static = tflite_network(encoder, None), tflite_network(encoder, ids.shape[1])
    onnx = write_onnx(hf_dir, os.path.join(root, "model.onnx"))
    session = common.ort_session(onnx, threads)
    ort_feed = {"input_ids": ids.astype(np.int64), "attention_mask": feed["mask"].astype(
        np.int64), "token_type_ids": feed["types"].astype(np.int64)}
    makers = {
        "interpreter": lambda: interpreter(dynamic, feed, threads),
        "interpreter_1_thread": lambda: interpreter(dynamic, feed, 1),
        "interpreter_static": lambda: interpreter(static, feed, threads),
        "interpreter_latest": lambda: interpreter(dynamic, feed, threads, latest=True),
        "compiled": lambda: compiled(static, feed, threads, width),
        "compiled_fp16": lambda: compiled(static, feed, threads, width,
                                          DEFAULT_FLAGS | FORCE_FP16),
        "compiled_ynnpack": lambda: compiled(static, feed, threads, width, ynnpack=True),
        "ort": lambda: (lambda: session.run(None, ort_feed)[0]),
    }
    found = {}
    for name, make in makers.items():
        try:
            found[name] = make()
        except Exception as error:  # a runtime build without the feature: say so, go on
            print(f"{name}: not created ({str(error).splitlines()[0][:120]})", file=sys.stderr)
    return found, reference


def main(argv=None) -> int:
    import numpy as np

    args = parse_args(argv)
    if args.quick:
        args.runs, args.length = 20, 8
    common.configure_threads(args.threads)
    model = "tiny" if args.quick else "minilm-l6"
    with tempfile.TemporaryDirectory() as root:
        calls, reference = contenders(write_hf_model(model, root), root, args.length,
                                      args.threads)
        diffs = {name: float(np.abs(np.asarray(call()) - reference).max())
                 for name, call in calls.items()}
        timings = common.interleaved(calls, args.runs, warmup=3, block=20, block_warmup=3)
    ort = timings["ort"].median
    rows = [[name, f"{1e3 * t.median:.3f}", f"{ort / t.median:.2f}x", f"{diffs[name]:.1e}"]
            for name, t in timings.items()]
    print(f"{model} network, ids in, batch 1, {args.length + 2} tokens, {args.threads} "
          f"threads, {args.runs} requests each by blocks of 20 "
          f"({common.host_line(common.machine_description())})")
    print(common.markdown_table(["contender", "p50 ms", "ort / it",
                                 "max diff vs Keras"], rows))
    return 0


if __name__ == "__main__":
    sys.exit(main())
