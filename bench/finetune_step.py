"""Fine-tuning step throughput: a sentence classifier, ours against Hugging Face on PyTorch.

Contenders, each given the same in-memory batch (random ids of full length, random labels of
`--classes` classes), timed in windows of `--steps` training steps, round-robin after warm-up
windows:

* `ours`       what `keras-bert finetune --task classify` builds and runs: the task kind's
               `BertClassifier` on a `BertEncoder`, compiled by the task kind
               (cross-entropy on logits, accuracy) with `create_optimizer` (AdamW, decay 0.01
               but not on LayerNorm/biases, warmup + linear decay, clipping at 1.0), trained
               with `model.fit` on `tf.data.Dataset.from_tensors(batch).repeat()`; fp32;
* `ours_bf16`  the same under `mixed_bfloat16`;
* `hf`         `transformers.BertForSequenceClassification` (PyTorch eager, SDPA, fp32) with
               `torch.optim.AdamW(lr, weight_decay=0.01)`, clipping at 1.0, its own loss.

All with random weights and dropout 0.1 (training mode). Default config: MiniLM-L6 (6 layers,
384 wide, 12 heads, FFN 1536, vocab 30522), batch 32, seq 128.

    .venv/bin/python bench/finetune_step.py              # MiniLM-L6: a few minutes
    .venv/bin/python bench/finetune_step.py --quick      # tiny config: a smoke check
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.support import common, sizes  # noqa: E402  (common: before TF/torch start)

# name: (num_layers, hidden_size, num_heads, intermediate_size, vocab_size); tiny: --quick
CONFIGS = sizes.table("minilm-l6", "base", tiny=sizes.QUICK)
ALL_CONTENDERS = ("ours", "ours_bf16", "hf")
LEARNING_RATE = 5e-5


def parse_args(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--config", default="minilm-l6", choices=sorted(CONFIGS))
    p.add_argument("--batch", type=int, default=32)
    p.add_argument("--seq", type=int, default=128)
    p.add_argument("--classes", type=int, default=2)
    p.add_argument("--steps", type=int, default=3, help="training steps per timed window")
    p.add_argument("--runs", type=int, default=5, help="timed windows (median reported)")
    p.add_argument("--warmup", type=int, default=1, help="untimed windows first")
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--contenders", default=",".join(ALL_CONTENDERS))
    p.add_argument("--quick", action="store_true", help="tiny config, batch 4, seq 32")
    args = p.parse_args(argv)
    if args.quick:
        args.config, args.batch, args.seq, args.steps, args.runs = "tiny", 4, 32, 2, 2
    args.contenders = args.contenders.split(",")
    for name in args.contenders:
        if name not in ALL_CONTENDERS:
            p.error(f"unknown contender {name!r}")
    return args


def ours(args, ids, labels, dtype, losses, name):
    """A window of `args.steps` `model.fit` steps of the classify task kind's model."""
    import keras
    import tensorflow as tf

    import keras_bert
    from keras_bert.tasks.text_classification.model import TextClassifier
    from keras_bert.training.optimizer import create_optimizer

    layers, hidden, heads, intermediate, vocab = CONFIGS[args.config]
    config = keras_bert.BertConfig(vocab_size=vocab, hidden_size=hidden, num_layers=layers,
                                   num_heads=heads, intermediate_size=intermediate)
    model = TextClassifier._build_network(
        keras_bert.BertEncoder(config, dtype=dtype), TextClassifier.config_class(),
        list(range(args.classes)))
    model.compile(optimizer=create_optimizer(LEARNING_RATE, 10_000, 1_000, 0.01),
                  loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True),
                  jit_compile=False)
    features = {"input_word_ids": ids, "input_mask": tf.ones_like(ids),
                "input_type_ids": tf.zeros_like(ids)}
    dataset = tf.data.Dataset.from_tensors((features, labels)).repeat()

    def window():
        history = model.fit(dataset, epochs=1, steps_per_epoch=args.steps, verbose=0)
        losses[name] = float(history.history["loss"][-1])

    return window


def hf(args, ids, labels, losses):
    """A window of `args.steps` PyTorch steps of `BertForSequenceClassification`."""
    import torch
    import transformers

    layers, hidden, heads, intermediate, vocab = CONFIGS[args.config]
    torch.manual_seed(0)
    model = transformers.BertForSequenceClassification(transformers.BertConfig(
        vocab_size=vocab, hidden_size=hidden, num_hidden_layers=layers,
        num_attention_heads=heads, intermediate_size=intermediate,
        num_labels=args.classes)).train()
    optimizer = torch.optim.AdamW(model.parameters(), lr=LEARNING_RATE, weight_decay=0.01)
    inputs = {"input_ids": torch.from_numpy(ids.astype("int64")),
              "attention_mask": torch.ones(ids.shape, dtype=torch.long),
              "token_type_ids": torch.zeros(ids.shape, dtype=torch.long),
              "labels": torch.from_numpy(labels.astype("int64"))}

    def window():
        for _ in range(args.steps):
            loss = model(**inputs).loss
            loss.backward()
            torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            optimizer.step()
            optimizer.zero_grad(set_to_none=True)
        losses["hf"] = float(loss.detach())

    return window


def main(argv=None) -> int:
    args = parse_args(argv)
    threads = common.configure_threads(args.threads)
    import keras
    import numpy as np

    info = common.machine_description()
    print(f"# fine-tuning step: {args.config}, batch {args.batch}, seq {args.seq}, "
          f"{common.host_line(info)}, threads {threads}, {info['date']}\n")
    keras.utils.set_random_seed(0)
    rng = np.random.default_rng(0)
    vocab = CONFIGS[args.config][4]
    ids = rng.integers(1000 if vocab > 2000 else 5, vocab, (args.batch, args.seq)).astype("int32")
    labels = rng.integers(0, args.classes, (args.batch,)).astype("int32")
    losses, fns = {}, {}
    for name, dtype in (("ours", None), ("ours_bf16", "mixed_bfloat16")):
        if name in args.contenders:
            fns[name] = ours(args, ids, labels, dtype, losses, name)
    if "hf" in args.contenders:
        fns["hf"] = hf(args, ids, labels, losses)
    timings = common.interleaved(fns, args.runs, args.warmup,
                                 lambda line: print(line, file=sys.stderr, flush=True))
    rows = [[name, f"{1e3 * t.median / args.steps:.0f} ({1e3 * t.best / args.steps:.0f})",
             f"{args.batch * args.steps / t.median:.1f}", f"{losses.get(name, float('nan')):.3f}",
             f"{t.cpu_per_wall:.2f}"] for name, t in timings.items()]
    print(common.markdown_table(["contender", "ms/step median (best)", "examples/s median",
                                 "last loss", "busy cores"], rows))
    summary = [[f"{a} / {b}", f"{timings[b].median / timings[a].median:.2f}x",
                f"{timings[b].best / timings[a].best:.2f}x"]
               for a, b in (("ours", "hf"), ("ours_bf16", "ours"), ("ours_bf16", "hf"))
               if a in timings and b in timings]
    print()
    print(common.markdown_table(["ratio (steps/s)", "median", "best"], summary))
    print(f"\nload average at the end: {common.load_average()}")
    return 0


if __name__ == "__main__":
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    sys.exit(main())
