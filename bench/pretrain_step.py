"""Pretraining step throughput (MLM + NSP) of our `BertPretrainer` against Hugging Face and
keras-hub.

Contenders, each given the same in-memory batch (random ids, full mask, `--predictions`
distinct random masked positions per row, random NSP labels), timed in windows of `--steps`
training steps, round-robin (A, B, C, A, B, C, ...) after warm-up windows:

* `ours`       `keras_bert.BertPretrainer` (encoder + tied MLM head on the masked positions
               only + NSP head) compiled with `keras_bert.training.create_optimizer` (AdamW,
               weight decay 0.01 but not on LayerNorm/biases, warmup + linear decay, global
               norm clipping 1.0), trained with `model.fit` -- what `keras-bert pretrain`
               runs (`fit`, no `jit_compile`, `steps_per_execution` 1) -- on
               `tf.data.Dataset.from_tensors(batch).repeat()`: one `fit(..., epochs=1,
               steps_per_epoch=--steps)` call per window (the train function is traced once
               and reused by later `fit` calls); fp32;
* `ours_bf16`  the same under `dtype="mixed_bfloat16"` (bf16 matmuls, float32 variables and
               losses);
* `hf`         `transformers.BertForPreTraining` (PyTorch eager, fp32, `sdpa` attention),
               `torch.optim.AdamW(lr, weight_decay=0.01)` on all parameters, gradient
               clipping at 1.0; MLM labels -100 except at the masked positions. As HF does by
               default, its MLM head (transform + 30522-way decoder) runs over **every** token
               of the batch, not just the masked ones;
* `hf_masked`  the same model and optimizer, its MLM head applied to the masked positions only
               (`bert` -> gather the masked rows -> `cls.predictions`; `cls.seq_relationship`
               on the pooled output; the two cross-entropies summed), as ours computes it: the
               best ordinary configuration of the PyTorch peer;
* `keras_hub`  `keras_hub.models.BertMaskedLM` (no preprocessor; inputs `token_ids`,
               `segment_ids`, `padding_mask`, `mask_positions`; MLM head on the masked
               positions only, **no NSP head**) with `keras.optimizers.AdamW(lr,
               weight_decay=0.01, global_clipnorm=1.0)`, sparse categorical cross-entropy
               weighted by the mask weights (its default weighted accuracy metric kept), `fit`
               like ours.

All models have random weights and dropout 0.1 (training mode). Config: MiniLM-L6 (6 layers,
hidden 384, 12 heads, FFN 1536, vocab 30522), batch 32, seq 128, 20 predictions.

    .venv/bin/python bench/pretrain_step.py              # 2 steps x (1 + 3) windows: ~3-10 minutes
    .venv/bin/python bench/pretrain_step.py --quick      # smoke check (tiny config), < 1 min
"""

from __future__ import annotations

import argparse
import math
import os
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.support import common, sizes  # noqa: E402  (common: before TF/torch start)

# name: (num_layers, hidden_size, num_heads, intermediate_size, vocab_size); tiny: --quick
CONFIGS = sizes.table("minilm-l6", tiny=sizes.QUICK)
ALL_CONTENDERS = ("ours", "ours_bf16", "hf", "hf_masked", "keras_hub")
LEARNING_RATE = 1e-4


def parse_args(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--config", default="minilm-l6", choices=sorted(CONFIGS))
    p.add_argument("--batch", type=int, default=32)
    p.add_argument("--seq", type=int, default=128)
    p.add_argument("--predictions", type=int, default=20)
    p.add_argument("--steps", type=int, default=2, help="training steps per timed window")
    p.add_argument("--runs", type=int, default=3, help="timed windows (median reported)")
    p.add_argument("--warmup", type=int, default=1, help="untimed windows first")
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--contenders", default=",".join(ALL_CONTENDERS),
                   help=f"comma-separated subset of {','.join(ALL_CONTENDERS)}")
    p.add_argument("--quick", action="store_true",
                   help="tiny config, batch 4, seq 32, 5 predictions, 2 windows of 2 steps")
    p.add_argument("--quiet", action="store_true", help="no per-run log lines")
    args = p.parse_args(argv)
    if args.quick:
        args.config, args.batch, args.seq, args.predictions = "tiny", 4, 32, 5
        args.steps, args.runs, args.warmup = 2, 2, 1
    args.contenders = [c.strip() for c in args.contenders.split(",") if c.strip()]
    for c in args.contenders:
        if c not in ALL_CONTENDERS:
            p.error(f"unknown contender {c!r}")
    return args


def make_batch(args, vocab):
    """One pretraining batch as NumPy arrays (the keys of `keras_bert.data`'s batches)."""
    import numpy as np

    rng = np.random.default_rng(0)
    batch, seq, preds = args.batch, args.seq, args.predictions
    ids = rng.integers(1000 if vocab > 2000 else 5, vocab, (batch, seq)).astype("int32")
    types = np.zeros((batch, seq), "int32")
    types[:, seq // 2:] = 1
    positions = np.sort(np.stack([rng.choice(np.arange(1, seq - 1), preds, replace=False)
                                  for _ in range(batch)]), axis=1).astype("int32")
    masked_ids = np.take_along_axis(ids, positions, axis=1)
    return {"input_word_ids": ids, "input_mask": np.ones((batch, seq), "int32"),
            "input_type_ids": types, "masked_lm_positions": positions,
            "masked_lm_ids": masked_ids,
            "masked_lm_weights": np.ones((batch, preds), "float32"),
            "next_sentence_labels": rng.integers(0, 2, (batch,)).astype("int32")}


def build_contenders(args, log):
    """The zero-argument callables (one window of training steps each) and facts to report."""
    import keras
    import tensorflow as tf

    import keras_bert
    from keras_bert.models.pretrainer import BertPretrainer
    from keras_bert.training.optimizer import create_optimizer

    layers, hidden, heads, intermediate, vocab = CONFIGS[args.config]
    data = make_batch(args, vocab)
    config = keras_bert.BertConfig(vocab_size=vocab, hidden_size=hidden, num_layers=layers,
                                   num_heads=heads, intermediate_size=intermediate)
    want = set(args.contenders)
    fns, losses = {}, {}
    keras.utils.set_random_seed(0)

    def keras_fit(name, model, dataset):
        def window():
            history = model.fit(dataset, epochs=1, steps_per_epoch=args.steps, verbose=0)
            losses[name] = float(history.history["loss"][-1])
        return window

    ours_ds = tf.data.Dataset.from_tensors({k: tf.constant(v) for k, v in data.items()}).repeat()
    for name, dtype in (("ours", None), ("ours_bf16", "mixed_bfloat16")):
        if name not in want:
            continue
        model = BertPretrainer(keras_bert.BertEncoder(config, dtype=dtype))
        model.compile(optimizer=create_optimizer(LEARNING_RATE, total_steps=10_000,
                                                 warmup_steps=1_000))
        fns[name] = keras_fit(name, model, ours_ds)
    if "keras_hub" in want:
        import keras_hub

        backbone = keras_hub.models.BertBackbone(
            vocabulary_size=vocab, num_layers=layers, num_heads=heads, hidden_dim=hidden,
            intermediate_dim=intermediate, max_sequence_length=512, num_segments=2)
        kh = keras_hub.models.BertMaskedLM(backbone, preprocessor=None)
        kh.compile(optimizer=keras.optimizers.AdamW(LEARNING_RATE, weight_decay=0.01,
                                                    global_clipnorm=1.0),
                   loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True),
                   weighted_metrics=[keras.metrics.SparseCategoricalAccuracy()])
        x = {"token_ids": tf.constant(data["input_word_ids"]),
             "segment_ids": tf.constant(data["input_type_ids"]),
             "padding_mask": tf.constant(data["input_mask"] > 0),
             "mask_positions": tf.constant(data["masked_lm_positions"])}
        kh_ds = tf.data.Dataset.from_tensors(
            (x, tf.constant(data["masked_lm_ids"]), tf.constant(data["masked_lm_weights"]))
        ).repeat()
        fns["keras_hub"] = keras_fit("keras_hub", kh, kh_ds)
    if want & {"hf", "hf_masked"}:
        fns.update(hf_contenders(args, data, want, losses, log))
    return fns, losses


def hf_contenders(args, data, want, losses, log) -> dict:
    """`hf` (stock `BertForPreTraining` loss, MLM head on every token) and `hf_masked` (MLM
    head on the masked positions only), each with its own model and AdamW."""
    import torch
    import transformers

    layers, hidden, heads, intermediate, vocab = CONFIGS[args.config]
    hf_config = transformers.BertConfig(
        vocab_size=vocab, hidden_size=hidden, num_hidden_layers=layers,
        num_attention_heads=heads, intermediate_size=intermediate, hidden_act="gelu")
    fns = {}
    for name in ("hf", "hf_masked"):
        if name not in want:
            continue
        torch.manual_seed(0)
        hf = transformers.BertForPreTraining(hf_config).train()
        log(f"  {name} attention implementation: "
            f"{getattr(hf.config, '_attn_implementation', '?')}")
        optimizer = torch.optim.AdamW(hf.parameters(), lr=LEARNING_RATE, weight_decay=0.01)
        fns[name] = hf_window(args, data, hf, optimizer, name, losses)
    return fns


def hf_window(args, data, hf, optimizer, name, losses):
    """One window of `args.steps` PyTorch training steps of `hf` (see `hf_contenders`)."""
    import numpy as np
    import torch

    ids, mask, types = (torch.from_numpy(data[k].astype("int64"))
                        for k in ("input_word_ids", "input_mask", "input_type_ids"))
    nsp_labels = torch.from_numpy(data["next_sentence_labels"].astype("int64"))
    positions = torch.from_numpy(data["masked_lm_positions"].astype("int64"))
    masked_ids = torch.from_numpy(data["masked_lm_ids"].astype("int64"))
    labels = np.full(data["input_word_ids"].shape, -100, "int64")
    np.put_along_axis(labels, data["masked_lm_positions"].astype("int64"),
                      data["masked_lm_ids"].astype("int64"), axis=1)
    labels = torch.from_numpy(labels)
    cross_entropy = torch.nn.CrossEntropyLoss()

    def stock_loss():
        return hf(input_ids=ids, attention_mask=mask, token_type_ids=types, labels=labels,
                  next_sentence_label=nsp_labels).loss

    def masked_loss():
        out = hf.bert(input_ids=ids, attention_mask=mask, token_type_ids=types)
        rows = torch.gather(out.last_hidden_state, 1,
                            positions[..., None].expand(-1, -1, out.last_hidden_state.shape[-1]))
        mlm_logits = hf.cls.predictions(rows)
        nsp_logits = hf.cls.seq_relationship(out.pooler_output)
        return (cross_entropy(mlm_logits.reshape(-1, mlm_logits.shape[-1]), masked_ids.reshape(-1))
                + cross_entropy(nsp_logits, nsp_labels))

    compute_loss = stock_loss if name == "hf" else masked_loss

    def window():
        for _ in range(args.steps):
            loss = compute_loss()
            loss.backward()
            torch.nn.utils.clip_grad_norm_(hf.parameters(), 1.0)
            optimizer.step()
            optimizer.zero_grad(set_to_none=True)
        losses[name] = float(loss.detach())

    return window


def main(argv=None):
    args = parse_args(argv)
    threads = common.configure_threads(args.threads)
    import keras

    machine = common.machine_description()
    log = (lambda s: None) if args.quiet else (lambda s: print(s, flush=True))
    print("# Pretraining step throughput\n")
    print(f"machine: {machine}")
    print(f"threads: {threads}; keras {keras.__version__}")
    print(f"config {args.config} {CONFIGS[args.config]}, batch {args.batch}, seq {args.seq}, "
          f"{args.predictions} predictions, {args.steps} steps per window, {args.warmup} "
          f"warm-up + {args.runs} timed windows\n")
    fns, losses = build_contenders(args, log)
    timings = common.interleaved(fns, args.runs, args.warmup, log)
    rows = []
    for name, t in timings.items():
        steps_s = args.steps / t.median
        rows.append([name, f"{1000 * t.median / args.steps:.0f} ({1000 * t.best / args.steps:.0f})",
                     f"{steps_s:.3f}", f"{args.steps / t.best:.3f}",
                     f"{steps_s * args.batch:.1f}", f"{losses.get(name, math.nan):.3f}",
                     f"{t.cpu_per_wall:.2f}"])
    print()
    print(common.markdown_table(
        ["contender", "ms/step median (best)", "steps/s median", "steps/s best",
         "examples/s median", "last loss", "busy cores"], rows))
    summary = []
    pairs = [("ours", "hf"), ("ours", "hf_masked"), ("ours", "keras_hub"), ("ours_bf16", "ours"),
             ("ours_bf16", "hf"), ("hf_masked", "hf"), ("keras_hub", "hf")]
    for a, b in pairs:
        if a in timings and b in timings:
            ta, tb = timings[a], timings[b]
            summary.append([f"{a} / {b}", f"{tb.median / ta.median:.2f}x",
                            f"{tb.best / ta.best:.2f}x"])
    print()
    print(common.markdown_table(["ratio (steps/s)", "median", "best"], summary))
    print(f"\nload average at the end: {common.load_average()} "
          f"(anything above ~{args.threads} means other processes competed for the cores)")


if __name__ == "__main__":
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    main()
