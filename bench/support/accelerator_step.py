"""One pretraining row of `bench/accelerator.py run`: BERT base or large at a sequence
length and an attention dropout, in the run's precision or with Keras' float8 training, the
largest batch that fits, its timed `fit`, its model FLOP/s and MFU.

Model FLOPs per sequence (forward; training = 3x): every layer `24 s h^2` (QKV, output,
FFN) `+ 4 s^2 h` (scores, probabilities x values), the MLM head at the `p` masked positions
only `p (2 h^2 + 2 h V)`, pooler + NSP `2 h^2 + 4 h`; embeddings and norms not counted. MFU
= achieved model FLOP/s over the device's dense peak for the precision (`--peak`, or the
table below by device name; unknown devices print FLOP/s only; float8 rows against the bf16
peak, so that their MFU compares with the bf16 row's).
"""

from __future__ import annotations

import time

from bench.support import sizes

CONFIGS = sizes.table("base", "large", "tiny")  # name: (layers, hidden, heads, intermediate, vocab)
# The batches tried per model at sequence length 128, largest first: the first fits an
# H200's 139 GiB by an activation estimate (~34 bytes per token per hidden unit and layer in
# bf16), the others are the fall-backs for 80 GB and 40 GB cards.
BATCHES = {"base": (1024, 512, 256, 128), "large": (512, 256, 128, 64), "tiny": (8,)}
# Dense peak TFLOP/s by device-name fragment: (float32 without tensor cores, bf16/fp16
# tensor cores). Vendor datasheets, SXM parts unless named.
PEAKS = {"H200": (67.0, 989.0), "H100 PCIe": (51.0, 756.0), "H100": (67.0, 989.0),
         "A100": (19.5, 312.0), "L4": (30.3, 121.0), "A10G": (31.2, 125.0),
         "V100": (15.7, 125.0), "T4": (8.1, 65.0)}
SEQ = 128  # the length BATCHES are for
PREDICTIONS = {128: 20, 512: 80}  # BERT's masked positions (phases 1 and 2); else 15%


def masked_positions(seq: int) -> int:
    return PREDICTIONS.get(seq, max(1, round(0.15 * seq)))


def batches_at(name: str, seq: int, args) -> list[int]:
    """The batches tried at `seq`: those at 128 (`--batches` or BATCHES) over `seq / 128`
    when longer (about the same activation memory), the same when shorter."""
    batches = [int(b) for b in args.batches.split(",")] if args.batches else BATCHES[name]
    return [max(1, b * SEQ // seq) if seq > SEQ else b for b in batches]


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


def pretraining_batch(batch: int, seq: int, predictions: int, vocab: int) -> dict:
    """A batch of pretraining features (random ids, sorted masked positions, both NSP
    labels), as arrays."""
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


def pretrainer(name: str, args, dropout: float, float8: bool):
    """BERT `name`'s pretrainer (seed 0, attention dropout `dropout`) compiled with BERT's
    AdamW; with `float8`, its Dense layers quantized for Keras' float8 training (scaled
    float8 matrix products, e4m3 forward and e5m2 gradients) after the same initial weights
    are drawn."""
    import keras

    from keras_bert import BertConfig, BertEncoder
    from keras_bert.models import BertPretrainer
    from keras_bert.training.optimizer import create_optimizer

    layers, hidden, heads, intermediate, vocab = CONFIGS[name]
    config = BertConfig(vocab_size=vocab, hidden_size=hidden, num_layers=layers,
                        num_heads=heads, intermediate_size=intermediate,
                        max_position_embeddings=512, attention_dropout=dropout)
    keras.utils.set_random_seed(0)
    policy = None if args.precision == "float32" else args.precision
    model = BertPretrainer(BertEncoder(config, dtype=policy))
    if float8:
        model.quantize("float8", filters=lambda layer: isinstance(layer, keras.layers.Dense))
    model.compile(optimizer=create_optimizer(1e-4, total_steps=100_000, warmup_steps=1_000),
                  jit_compile=args.jit_compile)
    return model


def time_pretraining(name: str, batch: int, args, seq: int = SEQ, dropout: float = 0.0,
                     float8: bool = False, after=None) -> dict:
    """`model.fit` of BERT `name`'s pretraining step at `batch` x `seq`: a warm-up fit of 2
    steps (tracing, compilation), then `args.steps` timed steps, as one fit; then
    `after(model, data, batch)` (the profile), whose dict joins the row."""
    import numpy as np

    layers, hidden, _, _, vocab = CONFIGS[name]
    model = pretrainer(name, args, dropout, float8)
    one = pretraining_batch(batch, seq, masked_positions(seq), vocab)
    data = {k: np.concatenate([v] * args.steps) for k, v in one.items()}
    start = time.perf_counter()
    warm_up = model.fit({k: v[:2 * batch] for k, v in data.items()}, batch_size=batch,
                        verbose=0, shuffle=False)
    float(warm_up.history["loss"][-1])
    compile_seconds = time.perf_counter() - start
    start = time.perf_counter()
    history = model.fit(data, batch_size=batch, verbose=0, shuffle=False)
    last_loss = float(history.history["loss"][-1])  # the last step has finished
    seconds = time.perf_counter() - start
    per_second = batch * args.steps / seconds
    flops = per_second * model_flops(layers, hidden, vocab, seq, masked_positions(seq)) / 1e12
    peak = device_peak(args.device, args.precision != "float32", args.peak)
    extra = after(model, data, batch) if after else {}
    del model
    return {"model": name, "seq": seq, "attention_dropout": dropout,
            "precision": f"float8/{args.precision}" if float8 else args.precision,
            "batch": batch, "sequences_per_s": per_second, "model_tflops": flops,
            "mfu": None if peak is None else flops / peak,
            "ms_per_step": 1000 * seconds / args.steps, "warm_up_s": compile_seconds,
            "last_loss": last_loss, **extra}


def data_parallel_overhead(name: str, batch: int, args, seq: int = SEQ, rounds: int = 5) -> dict:
    """BERT `name`'s pretraining step at `batch` x `seq`, built and fit with no
    distribution and under Keras' `DataParallel` over every visible device (the package's
    `distribution="data_parallel"`, `keras_bert.training.distribution`), the same seed and
    batch: a warm-up fit of each, then `rounds` interleaved fits of `args.steps` steps each,
    medians. On one device the layer should cost nothing (a ratio of about 1.0)."""
    import contextlib

    import keras
    import numpy as np

    from bench.support import common
    from keras_bert.training.distribution import get_distribution

    vocab = CONFIGS[name][4]
    one = pretraining_batch(batch, seq, masked_positions(seq), vocab)
    data = {k: np.concatenate([v] * args.steps) for k, v in one.items()}
    distribution = get_distribution("data_parallel")
    plain = pretrainer(name, args, 0.0, False)
    with distribution.scope():
        spread = pretrainer(name, args, 0.0, False)

    def fit(model, scope):
        with scope:
            history = model.fit(data, batch_size=batch, verbose=0, shuffle=False)
        return float(history.history["loss"][-1])  # the last step has finished

    timings = common.interleaved(
        {"none": lambda: fit(plain, contextlib.nullcontext()),
         "data_parallel": lambda: fit(spread, distribution.scope())}, rounds, warmup=1)
    none, spread_ms = (1000 * timings[k].median / args.steps for k in ("none", "data_parallel"))
    return {"model": name, "seq": seq, "batch": batch, "devices": len(keras.distribution.
                                                                      list_devices()),
            "ms_per_step_none": none, "ms_per_step_data_parallel": spread_ms,
            "data_parallel_over_none": spread_ms / none, "rounds": rounds}
