"""Pretraining throughput on an accelerator: sequences/s and model FLOP utilisation (MFU) of
`keras-bert pretrain`'s training step for BERT-base and BERT-large at sequence length 128
and 512, with and without XLA (`jit_compile`) and mixed precision.

Each variant is `BertPretrainer` + `create_optimizer` (AdamW, clipping 1.0) trained with
`model.fit` on a static-shape batch (`tf.data.Dataset.from_tensors(batch).repeat()`: fixed
batch and sequence length, as `pretrain` gives with `drop_remainder`), the path `keras-bert
pretrain --jit-compile --precision ...` runs. Variants are timed round-robin in windows of
`--steps` steps after a warm-up window (tracing, XLA compilation, autotuning); medians.

Model FLOPs per sequence (forward; training = 3x): every layer `24 s h^2` (QKV, output,
FFN) `+ 4 s^2 h` (scores, probabilities x values), the MLM head at the `p` masked positions
only `p (2 h^2 + 2 h V)`, pooler + NSP `2 h^2 + 4 h`; embeddings and norms not counted. MFU
= achieved model FLOP/s over the device's dense peak for the variant's precision (`--peak`
or the table below by device name; unknown devices print FLOP/s only).

    .venv/bin/python bench/pretrain_accelerator.py                  # on a GPU: base + large
    .venv/bin/python bench/pretrain_accelerator.py --quick          # CPU smoke check, < 1 min
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench import common  # noqa: E402  (thread pools before TF starts)

CONFIGS = {  # name: (layers, hidden, heads, intermediate, vocab)
    "base": (12, 768, 12, 3072, 30522),
    "large": (24, 1024, 16, 4096, 30522),
    "tiny": (2, 128, 2, 512, 30522),  # --quick
}
# Dense peak TFLOP/s by device-name fragment: (float32 without tensor cores / TF32 off,
# bf16/fp16 tensor cores). Vendor datasheets, SXM parts unless named.
PEAKS = {"H200": (67.0, 989.0), "H100 PCIe": (51.0, 756.0), "H100": (67.0, 989.0),
         "A100": (19.5, 312.0), "L4": (30.3, 121.0), "A10G": (31.2, 125.0),
         "V100": (15.7, 125.0), "T4": (8.1, 65.0)}


def model_flops(layers, hidden, vocab, seq, predictions) -> float:
    """Training FLOPs per sequence (3 x forward; see the module docstring)."""
    forward = layers * (24 * seq * hidden**2 + 4 * seq**2 * hidden)
    forward += predictions * (2 * hidden**2 + 2 * hidden * vocab) + 2 * hidden**2 + 4 * hidden
    return 3.0 * forward


def device_peak(name: str, mixed: bool, override: float | None) -> float | None:
    if override:
        return override
    for fragment, (fp32, half) in PEAKS.items():
        if fragment.lower() in name.lower():
            return half if mixed else fp32
    return None


def make_batch(batch, seq, predictions, vocab):
    import numpy as np

    rng = np.random.default_rng(0)
    positions = np.sort(np.stack([rng.choice(np.arange(1, seq - 1), predictions,
                                             replace=False) for _ in range(batch)]), axis=1)
    ids = rng.integers(1000, vocab, (batch, seq))
    types = np.zeros((batch, seq))
    types[:, seq // 2:] = 1
    return {"input_word_ids": ids.astype("int32"), "input_mask": np.ones((batch, seq), "int32"),
            "input_type_ids": types.astype("int32"),
            "masked_lm_positions": positions.astype("int32"),
            "masked_lm_ids": np.take_along_axis(ids, positions, 1).astype("int32"),
            "masked_lm_weights": np.ones((batch, predictions), "float32"),
            "next_sentence_labels": rng.integers(0, 2, (batch,)).astype("int32")}


def build(config_name, seq, batch, precision, jit):
    """A zero-argument window of training steps for one variant, and its model."""
    import keras
    import tensorflow as tf

    from keras_bert import BertConfig, BertEncoder
    from keras_bert.models import BertPretrainer
    from keras_bert.training import create_optimizer

    layers, hidden, heads, intermediate, vocab = CONFIGS[config_name]
    config = BertConfig(vocab_size=vocab, hidden_size=hidden, num_layers=layers,
                        num_heads=heads, intermediate_size=intermediate,
                        max_position_embeddings=max(512, seq))
    keras.utils.set_random_seed(0)
    model = BertPretrainer(BertEncoder(config, dtype=None if precision == "float32"
                                       else precision))
    model.compile(optimizer=create_optimizer(1e-4, total_steps=100_000, warmup_steps=1_000),
                  jit_compile=jit)
    predictions = max(1, round(seq * 20 / 128))  # BERT: 20 at 128, 80 at 512
    data = make_batch(batch, seq, predictions, vocab)
    dataset = tf.data.Dataset.from_tensors({k: tf.constant(v) for k, v in data.items()}
                                           ).repeat()
    return model, dataset, predictions


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--configs", default="base,large")
    p.add_argument("--seqs", default="128,512")
    p.add_argument("--batch-128", type=int, default=64, help="batch at sequence length 128")
    p.add_argument("--batch-512", type=int, default=16, help="batch at sequence length 512")
    p.add_argument("--steps", type=int, default=20, help="training steps per timed window")
    p.add_argument("--runs", type=int, default=3)
    p.add_argument("--peak", type=float, help="device peak TFLOP/s (overrides the table)")
    p.add_argument("--threads", type=int, default=0, help="CPU threads (0: TF's default)")
    p.add_argument("--quick", action="store_true", help="tiny model, seq 32, batch 4, CPU")
    args = p.parse_args()
    seqs = [int(s) for s in args.seqs.split(",")]
    configs = args.configs.split(",")
    batches = {128: args.batch_128, 512: args.batch_512}
    if args.quick:
        configs, seqs, batches, args.steps, args.runs = ["tiny"], [32], {32: 4}, 2, 1
    if args.threads:
        common.configure_threads(args.threads)
    import tensorflow as tf

    from keras_bert.training.precision import detect_precision

    gpus = tf.config.list_physical_devices("GPU")
    device = (tf.config.experimental.get_device_details(gpus[0]).get("device_name", "GPU")
              if gpus else common.host_line(common.machine_description()))
    auto, reason = detect_precision()
    mixed = auto if auto != "float32" else "mixed_bfloat16"
    print(f"device: {device}; mixed precision variant: {mixed} (`--precision auto` picks "
          f"{auto} here: {reason}); TF {tf.__version__}; "
          f"{common.machine_description()['date']}")
    rows = []
    for config_name in configs:
        for seq in seqs:
            batch = batches.get(seq, 8)
            variants = {}
            for precision in ("float32", mixed):
                for jit in (False, True):
                    name = f"{precision} {'xla' if jit else 'no-xla'}"
                    try:
                        model, dataset, predictions = build(config_name, seq, batch, precision,
                                                            jit)
                        model.fit(dataset, epochs=1, steps_per_epoch=args.steps, verbose=0)
                        variants[name] = (model, dataset, precision)
                    except Exception as error:  # noqa: BLE001 - a variant may not fit/compile
                        rows.append([config_name, seq, batch, name, "failed",
                                     f"{type(error).__name__}: {str(error)[:80]}", "", ""])
            seconds = {name: [] for name in variants}
            for round_ in range(args.runs):
                names = list(variants)
                names = names[round_ % len(names):] + names[:round_ % len(names)]
                for name in names:
                    model, dataset, _ = variants[name]
                    start = time.perf_counter()
                    history = model.fit(dataset, epochs=1, steps_per_epoch=args.steps,
                                        verbose=0)
                    float(history.history["loss"][-1])
                    seconds[name].append(time.perf_counter() - start)
            layers, hidden, _, _, vocab = CONFIGS[config_name]
            flops = model_flops(layers, hidden, vocab, seq, predictions)
            for name, values in seconds.items():
                per_s = batch * args.steps / statistics.median(values)
                achieved = per_s * flops / 1e12
                peak = device_peak(device, variants[name][2] != "float32", args.peak)
                rows.append([config_name, seq, batch, name, f"{per_s:.1f}", f"{achieved:.2f}",
                             f"{100 * achieved / peak:.1f}%" if peak else "n/a",
                             f"{statistics.median(values) / args.steps * 1000:.1f}"])
            del variants
    print(common.markdown_table(["model", "seq", "batch", "variant", "sequences/s",
                                 "model TFLOP/s", "MFU", "ms/step"], rows))
    return 0


if __name__ == "__main__":
    sys.exit(main())
