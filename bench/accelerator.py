"""Training where users train: BERT pretraining throughput (sequences/s, model FLOPs
utilisation) and a MiniLM fine-tuning run with its held-out accuracy, on any Keras backend,
from token ids, so that it runs on an accelerator image without TensorFlow (JAX alone).

Three steps (`bench/support/accelerator_data.py` holds what travels and what comes back,
`bench/support/accelerator_step.py` a pretraining row, its model FLOPs and MFU):

* `prepare DIR` (a machine with TensorFlow and TF Text): the Rotten Tomatoes ids, MiniLM's
  encoder as float16 arrays and, with `--wheels`, the wheels the GPU image lacks.
* `run --data DIR` (any backend: `KERAS_BACKEND=jax` on the GPU, through
  `scripts/device_accelerator.sh`): for each model, each of `--seqs` (128: 20 masked
  positions, 512: BERT's phase 2, 80) and each `--attention-dropout` (default 0, MosaicBERT's
  choice: the attention then takes JAX's fused kernel, cuDNN's on a GPU in bf16; 0.1 keeps
  the layer's own), the largest batch of `--batches` that fits (at 512, a quarter of those at
  128; tried largest first, an out-of-memory error tries the next), `model.fit` of
  `BertPretrainer` + BERT's AdamW on a static batch in `--precision` (default
  mixed_bfloat16): a warm-up fit (compilation) then a timed one of `--steps` steps. At the
  first seq, `--profile DIR` traces a few more steps of that fit
  (`bench/support/accelerator_profile.py`: the device time's shares), and `--float8` times
  the same model, seed, batch and steps with its Dense layers quantized for Keras' float8
  training, its last loss beside the bf16 row's. Then the fine-tuning: a classifier on
  MiniLM, `FitSchedule`'s AdamW, `--epochs` over the training ids, accuracy on the held-out
  ids. A part that fails is recorded with its error and the run goes on (one call is all a
  lent machine gives); `--json` is rewritten after each part. `--answers OUT` also writes
  the fine-tuned weights and held-out logits.
* `verify --answers OUT` (back here, with TensorFlow): the TF SavedModel export of those
  weights, loaded as TF Serving loads it, answers the held-out texts as the GPU did.

    .venv/bin/python bench/accelerator.py prepare .accelerator --wheels   # here (TensorFlow)
    bash scripts/device_accelerator.sh --answers "$OUT" --float8 --profile /tmp/accelerator-profile
    .venv/bin/python bench/accelerator.py verify --answers DIR             # here, after
    .venv/bin/python bench/accelerator.py profile DIR                      # the traces, here
    .venv/bin/python bench/accelerator.py --quick                          # CPU smoke check
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import sys
import time
from functools import partial
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.support import common  # noqa: E402  (no TensorFlow: runs on a JAX-only image)
from bench.support.accelerator_data import (  # noqa: E402
    ENCODER,
    IDS,
    LABELS,
    load_encoder,
    prepare,
    save_answers,
    verify,
)
from bench.support.accelerator_profile import (  # noqa: E402
    capture,
    profile_table,
    summarise_folders,
)
from bench.support.accelerator_step import (  # noqa: E402
    SEQ,
    batches_at,
    data_parallel_overhead,
    time_pretraining,
)


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
    traces = sub.add_parser("profile", help="the device time's shares in `run --profile` traces")
    traces.add_argument("folder", help="what `run --profile` wrote (a folder per model)")
    traces.add_argument("--json", help="also write the summaries here")
    for name in ("run", "quick"):
        run = sub.add_parser(name, help="measure" if name == "run" else
                             "prepare a tiny model and data, then measure it (CPU check)")
        run.add_argument("--data", default=".accelerator", help="what `prepare` wrote")
        run.add_argument("--models", default="base,large")
        run.add_argument("--batches", help="override BATCHES: comma-separated, largest first")
        run.add_argument("--steps", type=int, default=20, help="timed steps per row")
        run.add_argument("--seqs", default="128,512", help="sequence lengths, comma-separated")
        run.add_argument("--attention-dropout", default="0.0",
                         help="comma-separated: a row each (0: the fused attention)")
        run.add_argument("--data-parallel", action="store_true",
                         help="and, at the first seq, the step with no distribution against "
                         "Keras' DataParallel over the visible devices (interleaved)")
        run.add_argument("--float8", action="store_true", help="and a row with Keras' float8 "
                         "training of the Dense layers, at the first seq")
        run.add_argument("--profile", help="trace a few steps at the first seq into "
                         "PROFILE/<model> (JAX) and summarise them")
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
    for name in [] if args.skip_pretraining else args.models.split(","):
        _model_rows(name, args, result)
    if not args.skip_finetuning:
        result["finetuning"] = _part(args, lambda: finetune(args))
        _write(args, result)
    return result


def _model_rows(name: str, args, result: dict) -> None:
    """Model `name`'s rows, each written when measured: every seq x attention dropout; at the
    first seq, the profile after the first row's timed fit and, with `--float8`, the float8
    row (the first attention dropout, the batch that row fitted) after that seq's rows."""
    seqs = [int(s) for s in args.seqs.split(",")]
    dropouts = [float(d) for d in args.attention_dropout.split(",")]
    for seq in seqs:
        batches, reference = batches_at(name, seq, args), None
        for dropout in dropouts:
            profile = (os.path.join(args.profile, name)
                       if args.profile and reference is None and seq == seqs[0] else None)
            row = _part(args, partial(_pretraining_row, name, batches, args, seq, dropout,
                                      profile))
            reference = reference or row
            _add_row(args, result, {"model": name, "seq": seq, "attention_dropout": dropout,
                                    **row})
        if args.float8 and seq == seqs[0]:
            _add_row(args, result, {
                "model": name, "seq": seq, "attention_dropout": dropouts[0],
                "precision": f"float8/{args.precision}",
                **_part(args, partial(_float8_row, name, reference, args, seq, dropouts[0]))})
        if args.data_parallel and seq == seqs[0] and (reference or {}).get("batch"):
            result.setdefault("data_parallel", []).append(_part(args, partial(
                data_parallel_overhead, name, reference["batch"], args, seq)))
            _write(args, result)
            _free()


def _float8_row(name: str, reference: dict, args, seq: int, dropout: float) -> dict:
    if not reference.get("batch"):
        return {"note": "no bf16 row to compare"}
    row = time_pretraining(name, reference["batch"], args, seq, dropout, float8=True)
    return {**row, "bf16_last_loss": reference["last_loss"]}


def _add_row(args, result: dict, row: dict) -> None:
    result["pretraining"].append(row)
    _write(args, result)
    _free()


def _pretraining_row(name: str, batches, args, seq: int, dropout: float,
                     profile: str | None) -> dict:
    def traced(model, data, batch):  # a failed profile must not lose the row's figures
        return {"profile": _part(args, lambda: capture(model, data, batch, profile))}

    batch, row = largest_fitting(batches, lambda b: time_pretraining(
        name, b, args, seq, dropout, after=traced if profile else None))
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
    rows = [[r.get("model", "-"), r.get("seq", SEQ), r.get("attention_dropout", "-"),
             r.get("batch") or "-", r.get("precision", precision),
             f"{r['sequences_per_s']:.1f}" if "sequences_per_s" in r
             else r.get("note") or r.get("error", ""),
             f"{r.get('model_tflops', 0):.2f}",
             f"{100 * r['mfu']:.1f}%" if r.get("mfu") else "n/a",
             f"{r.get('ms_per_step', 0):.1f}", _loss(r)] for r in result["pretraining"]]
    parts = [common.markdown_table(["model", "seq", "attention dropout", "batch", "precision",
                                    "sequences/s", "model TFLOP/s", "MFU", "ms/step",
                                    "last loss"], rows)] if rows else []
    traced = {r["model"]: r["profile"] for r in result["pretraining"] if "profile" in r}
    if any("shares" in p for p in traced.values()):
        parts.append(profile_table({m: p for m, p in traced.items() if "shares" in p}))
    parts += [f"profile of {m}: {p.get('note') or p.get('error')}"
              for m, p in traced.items() if "shares" not in p]
    overhead = [[r["model"], r["seq"], r["batch"], r["devices"],
                 f"{r['ms_per_step_none']:.1f}", f"{r['ms_per_step_data_parallel']:.1f}",
                 f"{r['data_parallel_over_none']:.3f}x"]
                for r in result.get("data_parallel", []) if "devices" in r]
    if overhead:
        parts.append(common.markdown_table(
            ["data parallel", "seq", "batch", "devices", "ms/step, none (median)",
             "ms/step, DataParallel (median)", "DataParallel / none"], overhead))
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


def _loss(row: dict) -> str:
    """The last step's loss; a float8 row's beside its bf16 row's."""
    if "last_loss" not in row:
        return "-"
    if "bf16_last_loss" in row:
        return f"{row['last_loss']:.4f} (bf16 {row['bf16_last_loss']:.4f})"
    return f"{row['last_loss']:.4f}"


def main(argv=None) -> dict | None:
    argv = sys.argv[1:] if argv is None else list(argv)
    # "--quick": as every benchmark's smoke check is called (tests/bench/test_benchmarks.py)
    if argv[:1] == ["--quick"]:
        argv = ["quick", *argv[1:]]
    args = parse_args(argv)
    if args.command == "prepare":
        prepare(args)
        return None
    if args.command == "verify":
        return verify(args)
    if args.command == "profile":
        summaries = summarise_folders(args.folder)
        print(profile_table(summaries))
        _write(args, summaries)
        return summaries
    if args.command == "quick":  # a tiny model and data of its own, in a folder it removes
        import tempfile

        # The new paths too, kept short: a second seq of 64 (10 masked positions), float8,
        # the profile and its summary.
        args.models, args.batches, args.steps, args.epochs = "tiny", "8", 2, 1
        args.seqs, args.float8, args.strict = "128,64", True, True
        import keras

        args.data_parallel = keras.backend.backend() == "jax"  # Keras' distribution is JAX's
        with tempfile.TemporaryDirectory() as folder:
            args.data, args.profile = folder, os.path.join(folder, "profile")
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
