"""Training where users train: BERT pretraining throughput (sequences/s, model FLOPs
utilisation) and a MiniLM fine-tuning run with its held-out accuracy, on any Keras backend,
from token ids, so that it runs on an accelerator image without TensorFlow (JAX alone).

Three steps (`bench/accelerator_data.py` holds what travels and what comes back):

* `prepare DIR` (a machine with TensorFlow and TF Text): the Rotten Tomatoes ids, MiniLM's
  encoder as float16 arrays and, with `--wheels`, the wheels the GPU image lacks.
* `run --data DIR` (any backend: `KERAS_BACKEND=jax` on the GPU, through
  `scripts/device_accelerator.sh`): for each model, the largest batch of `--batches` that fits
  (tried largest first; an out-of-memory error tries the next), `model.fit` of
  `BertPretrainer` + BERT's AdamW on a static batch (seq 128, 20 masked positions, the
  precision `--precision`, default mixed_bfloat16), a warm-up fit (compilation) then a timed
  one of `--steps` steps; then the fine-tuning: a classifier on MiniLM, `FitSchedule`'s AdamW,
  `--epochs` over the training ids, accuracy on the held-out ids. A part that fails is
  recorded with its error and the run goes on (one call is all a lent machine gives);
  `--json` is rewritten after each part. `--answers OUT` also writes the fine-tuned weights
  and held-out logits.
* `verify --answers OUT` (back here, with TensorFlow): the TF SavedModel export of those
  weights, loaded as TF Serving loads it, answers the held-out texts as the GPU did.

Model FLOPs per sequence (forward; training = 3x): every layer `24 s h^2` (QKV, output,
FFN) `+ 4 s^2 h` (scores, probabilities x values), the MLM head at the `p` masked positions
only `p (2 h^2 + 2 h V)`, pooler + NSP `2 h^2 + 4 h`; embeddings and norms not counted. MFU
= achieved model FLOP/s over the device's dense peak for the precision (`--peak`, or the
table below by device name; unknown devices print FLOP/s only).

    .venv/bin/python bench/accelerator.py prepare .accelerator --wheels   # here (TensorFlow)
    bash scripts/device_accelerator.sh --answers "$OUT"                    # on the GPU
    .venv/bin/python bench/accelerator.py verify --answers DIR             # here, after
    .venv/bin/python bench/accelerator.py --quick                          # CPU smoke check
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench import common  # noqa: E402  (no TensorFlow: runs on a JAX-only image)
from bench.accelerator_data import (  # noqa: E402
    ENCODER,
    IDS,
    LABELS,
    load_encoder,
    prepare,
    save_answers,
    verify,
)

CONFIGS = {  # name: (layers, hidden, heads, intermediate, vocab)
    "base": (12, 768, 12, 3072, 30522),
    "large": (24, 1024, 16, 4096, 30522),
    "tiny": (2, 128, 2, 512, 30522),
}
# The batches tried per model at sequence length 128, largest first: the first fits an
# H200's 139 GiB by an activation estimate (~34 bytes per token per hidden unit and layer in
# bf16), the others are the fall-backs for 80 GB and 40 GB cards.
BATCHES = {"base": (1024, 512, 256, 128), "large": (512, 256, 128, 64), "tiny": (8,)}
# Dense peak TFLOP/s by device-name fragment: (float32 without tensor cores, bf16/fp16
# tensor cores). Vendor datasheets, SXM parts unless named.
PEAKS = {"H200": (67.0, 989.0), "H100 PCIe": (51.0, 756.0), "H100": (67.0, 989.0),
         "A100": (19.5, 312.0), "L4": (30.3, 121.0), "A10G": (31.2, 125.0),
         "V100": (15.7, 125.0), "T4": (8.1, 65.0)}
SEQ = 128
PREDICTIONS = 20  # BERT's masked positions at 128


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


def device_name() -> str:
    """The accelerator Keras computes on (its name as the backend reports it), or the CPU."""
    import keras

    if keras.backend.backend() == "jax":
        import jax

        device = jax.devices()[0]
        if device.platform != "cpu":
            return f"{device.device_kind} ({device.platform}, {len(jax.devices())} device(s))"
    elif keras.backend.backend() == "tensorflow":
        import tensorflow as tf

        gpus = tf.config.list_physical_devices("GPU")
        if gpus:
            return tf.config.experimental.get_device_details(gpus[0]).get("device_name", "GPU")
    return common.host_line(common.machine_description())


def is_out_of_memory(error: BaseException) -> bool:
    """Whether `error` is a device allocation failure (XLA's RESOURCE_EXHAUSTED, TF's OOM)."""
    text = f"{type(error).__name__}: {error}".lower()
    return any(s in text for s in ("resource_exhausted", "resourceexhausted", "out of memory",
                                   "oom when allocating"))


def largest_fitting(batches, attempt):
    """`(batch, attempt(batch))` for the first of `batches` (largest first) whose attempt
    does not run out of device memory; other errors propagate. `(None, None)` when none fits."""
    for batch in batches:
        try:
            return batch, attempt(batch)
        except Exception as error:  # noqa: BLE001 - only allocation failures are skipped
            if not is_out_of_memory(error):
                raise
            print(f"  batch {batch}: out of device memory, trying a smaller one", flush=True)
            _free()
    return None, None


def _free() -> None:
    import keras

    keras.backend.clear_session()
    gc.collect()
    if keras.backend.backend() == "jax":
        import jax

        jax.clear_caches()


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


def time_pretraining(name: str, batch: int, args) -> dict:
    """`model.fit` of BERT `name`'s pretraining step at `batch`: a warm-up fit of 2 steps
    (tracing, compilation), then `args.steps` timed steps, as one fit."""
    import keras
    import numpy as np

    from keras_bert import BertConfig, BertEncoder
    from keras_bert.models import BertPretrainer
    from keras_bert.training.optimizer import create_optimizer

    layers, hidden, heads, intermediate, vocab = CONFIGS[name]
    config = BertConfig(vocab_size=vocab, hidden_size=hidden, num_layers=layers,
                        num_heads=heads, intermediate_size=intermediate,
                        max_position_embeddings=512)
    keras.utils.set_random_seed(0)
    policy = None if args.precision == "float32" else args.precision
    model = BertPretrainer(BertEncoder(config, dtype=policy))
    model.compile(optimizer=create_optimizer(1e-4, total_steps=100_000, warmup_steps=1_000),
                  jit_compile=args.jit_compile)
    one = pretraining_batch(batch, SEQ, PREDICTIONS, vocab)
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
    flops = per_second * model_flops(layers, hidden, vocab, SEQ, PREDICTIONS) / 1e12
    peak = device_peak(args.device, args.precision != "float32", args.peak)
    del model
    return {"model": name, "batch": batch, "sequences_per_s": per_second,
            "model_tflops": flops, "mfu": None if peak is None else flops / peak,
            "ms_per_step": 1000 * seconds / args.steps, "warm_up_s": compile_seconds,
            "last_loss": last_loss}


# ----- fine-tuning on ids -------------------------------------------------------------------

def finetune(args) -> dict:
    """MiniLM + a classifier head on the Rotten Tomatoes ids: `fit` for `args.epochs`
    epochs, then accuracy on the held-out ids."""
    import keras
    import numpy as np

    from keras_bert.models.encoder import INPUT_NAMES
    from keras_bert.tasks.text_classification.network import BertClassifier
    from keras_bert.training.fit_schedule import FitSchedule
    from keras_bert.training.precision import training_precision

    with np.load(os.path.join(args.data, IDS)) as data:
        splits = {part: ({k: data[f"{part}_{k}"].astype("int32") for k in INPUT_NAMES},
                         data[f"{part}_labels"].astype("int32")) for part in ("train", "test")}
    (x, y), (test_x, test_y) = splits["train"], splits["test"]
    precision = training_precision(args.finetune_precision)
    keras.utils.set_random_seed(args.seed)
    network = BertClassifier(load_encoder(os.path.join(args.data, ENCODER), precision),
                             len(LABELS))
    steps = -(-len(y) // args.finetune_batch) * args.epochs
    network.compile(optimizer=FitSchedule().optimizer(steps),
                    loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True),
                    jit_compile=args.jit_compile)
    start = time.perf_counter()
    history = network.fit(x, y, batch_size=args.finetune_batch, epochs=args.epochs,
                          shuffle=True, verbose=0)
    seconds = time.perf_counter() - start
    logits = network.predict(test_x, batch_size=256, verbose=0)
    accuracy = float(np.mean(np.argmax(logits, axis=-1) == test_y))
    saved = {}
    if args.answers:  # for `verify`: the TF export must answer as this network does
        saved = {"answers": save_answers(network, os.path.join(args.data, ENCODER),
                                         test_x, logits, args.answers, len(LABELS))}
    return {**saved, "train": len(y), "held_out": len(test_y), "epochs": args.epochs,
            "precision": precision, "fit_s": seconds,
            "examples_per_s": len(y) * args.epochs / seconds,
            "accuracy": accuracy, "majority": float(max(np.mean(test_y), 1 - np.mean(test_y))),
            "last_loss": float(history.history["loss"][-1])}


# ----- the command line -------------------------------------------------------------------

def parse_args(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = p.add_subparsers(dest="command", required=True)
    prep = sub.add_parser("prepare", help="ids, encoder arrays, wheels (needs TensorFlow)")
    prep.add_argument("out")
    prep.add_argument("--train", type=int, default=4000)
    prep.add_argument("--held-out", type=int, default=2000)
    prep.add_argument("--wheels", action="store_true")
    prep.add_argument("--quick", action="store_true", help="random-tiny, embedded sentences")
    check = sub.add_parser("verify", help="here, with TensorFlow: the TF export of the "
                           "weights `run --answers` fine-tuned, against its answers")
    check.add_argument("--data", default=".accelerator", help="what `prepare` wrote")
    check.add_argument("--answers", required=True, help="what `run --answers` wrote")
    check.add_argument("--train", type=int, default=4000)
    check.add_argument("--held-out", type=int, default=2000)
    check.add_argument("--quick", action="store_true", help="the data was prepared --quick")
    for name in ("run", "quick"):
        run = sub.add_parser(name, help="measure" if name == "run" else
                             "prepare a tiny model and data, then measure it (CPU check)")
        run.add_argument("--data", default=".accelerator", help="what `prepare` wrote")
        run.add_argument("--models", default="base,large")
        run.add_argument("--batches", help="override BATCHES: comma-separated, largest first")
        run.add_argument("--steps", type=int, default=20, help="timed steps per model")
        run.add_argument("--precision", default="mixed_bfloat16",
                         choices=("float32", "mixed_bfloat16", "mixed_float16"))
        run.add_argument("--finetune-precision", default="auto")
        run.add_argument("--jit-compile", default=None, choices=("true", "false"),
                         help="XLA; default: the device's (backends.default_jit_compile)")
        run.add_argument("--epochs", type=int, default=2)
        run.add_argument("--finetune-batch", type=int, default=32)
        run.add_argument("--seed", type=int, default=0)
        run.add_argument("--peak", type=float, help="device peak TFLOP/s (overrides PEAKS)")
        run.add_argument("--skip-pretraining", action="store_true")
        run.add_argument("--skip-finetuning", action="store_true")
        run.add_argument("--json", help="also write the results here (after each part)")
        run.add_argument("--strict", action="store_true",
                         help="a failing part stops the run (default: recorded, run goes on)")
        run.add_argument("--answers", help="a folder for the fine-tuned weights and held-out "
                         "logits, for `verify` on a machine with TensorFlow")
    return p.parse_args(argv)


def measure(args) -> dict:
    """The pretraining rows and the fine-tuning result (see the module docstring)."""
    import keras

    from keras_bert.training.backends import default_jit_compile

    args.jit_compile = (default_jit_compile() if args.jit_compile is None
                        else args.jit_compile == "true")
    args.device = device_name()
    result = {"device": args.device, "backend": keras.backend.backend(),
              "keras": keras.__version__, "jit_compile": args.jit_compile,
              "date": common.machine_description()["date"], "pretraining": []}
    if keras.backend.backend() == "jax":
        import jax

        result["jax"] = jax.__version__
    print(f"device: {args.device}; Keras {keras.__version__} on {result['backend']} "
          f"{result.get('jax', '')}; jit_compile {args.jit_compile}", flush=True)
    models = [] if args.skip_pretraining else args.models.split(",")
    for name in models:
        batches = ([int(b) for b in args.batches.split(",")] if args.batches
                   else BATCHES[name])
        row = _part(args, lambda n=name, b=batches: _pretraining_row(n, b, args))
        result["pretraining"].append({"model": name, **row})
        _write(args, result)
        _free()
    if not args.skip_finetuning:
        result["finetuning"] = _part(args, lambda: finetune(args))
        _write(args, result)
    return result


def _pretraining_row(name: str, batches, args) -> dict:
    batch, row = largest_fitting(batches, lambda b: time_pretraining(name, b, args))
    return row if row is not None else {"batch": None, "note": f"no batch of {batches} fits"}


def _part(args, compute) -> dict:
    """`compute()`, or `{"error": ...}` when it raised: on a lent machine one call is all
    there is, so a failing part must not lose the parts measured before and after it
    (`args.strict`, as the tests run it, raises instead)."""
    try:
        row = compute()
    except Exception as error:  # noqa: BLE001 - reported with its traceback, then recorded
        if args.strict:
            raise
        import traceback

        traceback.print_exc()
        row = {"error": f"{type(error).__name__}: {error}"[:2000]}
    print(f"  {json.dumps(row)}", flush=True)
    return row


def _write(args, result: dict) -> None:
    """The results so far, to `args.json` (written after each part)."""
    if args.json:
        Path(args.json).write_text(json.dumps(result, indent=2), encoding="utf-8")


def report(result: dict, precision: str) -> str:
    """The tables bench/RESULTS.md records, one per part that ran (none for a skipped one)."""
    rows = [[r["model"], SEQ, r.get("batch") or "-", precision,
             f"{r['sequences_per_s']:.1f}" if "sequences_per_s" in r
             else r.get("note") or r.get("error", ""),
             f"{r.get('model_tflops', 0):.2f}",
             f"{100 * r['mfu']:.1f}%" if r.get("mfu") else "n/a",
             f"{r.get('ms_per_step', 0):.1f}"] for r in result["pretraining"]]
    parts = [common.markdown_table(["model", "seq", "batch", "precision", "sequences/s",
                                    "model TFLOP/s", "MFU", "ms/step"], rows)] if rows else []
    tune = result.get("finetuning")
    if tune and "error" in tune:
        parts.append(f"fine-tuning failed: {tune['error']}")
    elif tune:
        parts.append(common.markdown_table(
            ["fine-tuning", "train / held-out", "epochs", "precision", "fit s", "examples/s",
             "held-out accuracy", "majority"],
            [["MiniLM, Rotten Tomatoes", f"{tune['train']} / {tune['held_out']}",
              tune["epochs"], tune["precision"], f"{tune['fit_s']:.1f}",
              f"{tune['examples_per_s']:.1f}", f"{tune['accuracy']:.4f}",
              f"{tune['majority']:.4f}"]]))
    return "\n\n".join(parts)


def main(argv=None) -> dict | None:
    argv = sys.argv[1:] if argv is None else list(argv)
    if argv[:1] == ["--quick"]:  # as every benchmark's smoke check is called (tests/test_bench.py)
        argv = ["quick", *argv[1:]]
    args = parse_args(argv)
    if args.command == "prepare":
        prepare(args)
        return None
    if args.command == "verify":
        return verify(args)
    if args.command == "quick":  # a tiny model and data of its own, in a folder it removes
        import tempfile

        args.models, args.batches, args.steps, args.epochs = "tiny", "8", 2, 1
        args.strict = True
        with tempfile.TemporaryDirectory() as folder:
            args.data = folder
            prepare(argparse.Namespace(out=folder, quick=True, wheels=False))
            result = measure(args)
    else:
        result = measure(args)
    print(f"device: {result['device']}; backend {result['backend']}; jit_compile "
          f"{result['jit_compile']}; {result['date']}")
    print(report(result, args.precision))
    _write(args, result)
    return result


if __name__ == "__main__":
    main()
