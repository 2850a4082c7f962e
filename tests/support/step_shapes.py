"""Counts the step functions one Keras backend compiles while a classifier fits, validates,
evaluates and predicts on texts of every length, and writes them as JSON:

    KERAS_BACKEND=jax        python -m tests.support.step_shapes OUT.json
    KERAS_BACKEND=tensorflow python -m tests.support.step_shapes OUT.json --xla

A step function runs its Python body once per trace: under JAX once per input shape (each
trace is one XLA compilation). So wrapping the model's `train_step`, `test_step` and the
network's `predict_step` counts the compilations of each phase. The shapes of the batches
each phase was fed are recorded too: under TensorFlow with `jit_compile=True`, XLA compiles
one program per distinct shape whatever `tf.function` traced.

The texts hold 1 to 60 words of the tiny vocabulary (each word one piece; mostly short),
packed at 64: buckets 16, 32, 48 and 64, the rows grouped by length so that several
buckets are met. 64 training rows in batches of 8 leave no partial batch; the 20
validation rows leave a partial one of 4.
"""

from __future__ import annotations

import argparse
import collections
import json
import tempfile
from pathlib import Path

import keras
import numpy as np

SEQ = 64
BATCH = 8


def _texts(count: int, seed: int) -> tuple[list[str], list[str]]:
    from tests.support.tiny_data import FILLER

    rng = np.random.default_rng(seed)
    # Mostly short texts, as real ones are (a cube of a uniform draw), up to 60 words.
    texts = [" ".join(rng.choice(FILLER[:14], size=1 + int(59 * u ** 3)))
             for u in rng.uniform(size=count)]
    return texts, ["long" if len(t.split()) > 30 else "short" for t in texts]


def _counting(owner, method: str, counts: collections.Counter, shapes: dict, phase: str):
    """Wraps `owner.method` so each trace (a Python call) is counted under `phase`, with
    the width of the batch it traced for."""
    inner = getattr(owner, method)

    def traced(*args):  # (data) on TensorFlow, (state, data) on JAX
        counts[phase] += 1
        leaf = keras.tree.flatten(args[-1])[0]
        shapes[phase].append([-1 if d is None else int(d) for d in leaf.shape])
        return inner(*args)

    setattr(owner, method, traced)


def run(out: str, xla: bool) -> dict:
    from keras_bert import FitSchedule, TextClassifier
    from keras_bert.tasks.batches import Batching
    from keras_bert.training.backends import compiles_per_shape
    from tests.support.tiny_data import write_tiny_model_dir

    keras.utils.set_random_seed(0)
    with tempfile.TemporaryDirectory() as root:
        model_dir = write_tiny_model_dir(Path(root))
        clf = TextClassifier.from_pretrained(model_dir, labels=["long", "short"],
                                             seq_length=SEQ, precision="float32")
        clf.compile(schedule=FitSchedule(learning_rate=1e-3), jit_compile=True if xla
                    else None)
    counts: collections.Counter = collections.Counter()
    shapes: dict = collections.defaultdict(list)
    _counting(clf, "train_step", counts, shapes, "train")
    _counting(clf, "test_step", counts, shapes, "validate")
    _counting(clf.network, "predict_step", counts, shapes, "evaluate")
    texts, labels = _texts(64, seed=1)
    held_out = _texts(20, seed=2)
    clf.fit(texts, labels, batch_size=BATCH, epochs=3, seed=5, verbose=0,
            validation_data=held_out, group_by_length=2)
    clf.evaluate(*held_out, batch_size=BATCH)
    fed = {phase: sorted({tuple(s) for s in seen}) for phase, seen in shapes.items()}
    # The stream `fit` trained on: "auto" decided for this model's step, as `fit` decides.
    batching = Batching(group_by_length=2).resolved(SEQ, compiles_per_shape(clf.jit_compile))
    stream, _ = clf._stream(clf._rows(texts, labels), BATCH, 5, batching=batching)
    fed_widths = sorted({int(x["input_word_ids"].shape[1]) for x, _ in stream.take(3 * 8)})
    result = {"backend": keras.backend.backend(), "traces": dict(counts), "traced": fed,
              "train_widths": fed_widths, "jit_compile": clf.jit_compile}
    with open(out, "w", encoding="utf-8") as f:
        json.dump(result, f)
    return result


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("out")
    parser.add_argument("--xla", action="store_true")
    args = parser.parse_args(argv)
    run(args.out, args.xla)


if __name__ == "__main__":
    main()
