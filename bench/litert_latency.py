"""Batch-1 latency of the LiteRT export, text in, against tokenizers + ONNX Runtime and our
SavedModel through TF Serving's loader; and (`--classifier`) the int8 file's held-out
accuracy on the Rotten Tomatoes task against the float32 file's.

Contenders (the same weights, the same texts, tokenization included on every side; each
answers the pooler output of all-MiniLM-L6-v2 for one text):

* `litert`       our `--format litert` export (`TextEmbedder`, `--pooling pooled`), float32,
                 in `ai-edge-litert`'s interpreter with TF Text's TFLite kernels
                 (`keras_bert.export.litert_runtime.LiteRTModel`);
* `litert_int8`  the same exported with `--quantize int8` (dynamic range);
* `ort`          HF `tokenizers` (`BertWordPieceTokenizer`) + ONNX Runtime float32 (the HF
                 model exported as `bench/serving_latency.py` exports it);
* `ort_int8`     the same ONNX file through `onnxruntime.quantization.quantize_dynamic`
                 (int8 weights, dynamic range);
* `session`      our SavedModel export of the same embedder, loaded as TF Serving loads it
                 (`SessionBundle`), `serving_default` fed the raw string.

`--task tag,squad` adds `litert_int8_runner` (the int8 file through LiteRT's own
`SignatureRunner`) and `session_xla` (the SavedModel exported with `--xla`).

One process; each runtime measured two ways, side by side, every one with `--threads`
threads and its runtime's default settings otherwise (ONNX Runtime: full graph
optimisation): back to back, contenders taking turns by blocks of `--block` requests (each
block opened by `--block-warmup` untimed ones; `common.interleaved`), as a server answering
a stream of requests with one runtime sees it; and call by call, where each batch-1 call
finds the weights out of the caches after another runtime's call. Before timing, each
contender's vectors on the texts are compared with `ort`'s (cosine printed). Texts
(`--corpus`): `spans`, corpus spans of `--length` word pieces (every request the same
length); `rotten-tomatoes`, the first `--texts` held-out Rotten Tomatoes snippets
(`examples/classify_rotten_tomatoes.py`'s split), each of its own length, so that
consecutive requests change length (what a change costs LiteRT is in this figure: its
interpreter resizes the network's tensors).

    .venv/bin/python bench/litert_latency.py --threads 2 --length 32 --runs 300
    .venv/bin/python bench/litert_latency.py --threads 2 --corpus rotten-tomatoes --texts 200
    .venv/bin/python bench/litert_latency.py --classifier RT_MODEL_DIR   # + int8 accuracy
    .venv/bin/python bench/litert_latency.py --quick                     # smoke run, tiny model

`--task tag,squad` times the tagger and span QA instead (`SpanKind`: the same weights, a
random head on the encoder, as a Hugging Face `BertFor*` model and ours): our LiteRT files
(tags per word; answers with offsets) against `tokenizers` + ONNX Runtime with
the post-processing a Hugging Face user writes (the first piece's label per word; the best
`start + end` span over the overflowing windows, cut by the offsets) and our SavedModel, in
the same two modes side by side: back to back by blocks of `--block` requests (as a server
answering a stream sees it; short turns, so that a slow spell of the host falls on every
contender alike rather than on the one whose turn it was), and interleaved call by call.

    .venv/bin/python bench/litert_latency.py --task tag,squad --texts 200 --runs 600
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.support import common  # noqa: E402
from bench.support.hf_models import write_hf_model, write_onnx  # noqa: E402
from bench.support.litert_spans import SPAN_LENGTH, build_spans, span_requests  # noqa: E402
from bench.support.serving_contenders import hf_tokenizer  # noqa: E402
from bench.support.texts import held_out_reviews, texts_of_length  # noqa: E402

CONTENDERS = ("litert", "litert_int8", "litert_int8_runner", "ort", "ort_int8", "session",
              "session_xla")


def parse_args(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--length", type=int, default=32, help="word pieces per text")
    p.add_argument("--corpus", choices=("spans", "rotten-tomatoes"), default="spans",
                   help="spans: corpus spans of --length word pieces; rotten-tomatoes: "
                        "held-out review snippets of mixed lengths")
    p.add_argument("--texts", type=int, default=64, help="distinct texts, used in turn")
    p.add_argument("--runs", type=int, default=300, help="timed requests per contender")
    p.add_argument("--classifier", help="a fine-tuned Rotten Tomatoes classifier directory: "
                                        "also compare int8 and float32 held-out accuracy")
    p.add_argument("--held-out", type=int, default=2000, help="held-out snippets (--classifier)")
    p.add_argument("--block", type=int, default=20,
                   help="requests per turn back to back (each turn opened by --block-warmup "
                        "untimed ones); the call-by-call columns take turns by request, "
                        "every call after another runtime's (cold caches)")
    # After another runtime's turn each runtime answers slower for a while, up to 2x at
    # first (the other's threads still spinning, its own weights out of the caches): ONNX
    # Runtime for 3-8 requests after LiteRT, LiteRT for up to 39 after ONNX Runtime, whose
    # threads spin longer (bench/runtime_switch.py; bench/RESULTS.md, "LiteRT taggers and
    # span QA against ONNX Runtime int8"). A server answering one model does not see that.
    p.add_argument("--block-warmup", type=int, default=40,
                   help="untimed requests opening each turn back to back")
    p.add_argument("--contenders", default=",".join(CONTENDERS),
                   help=f"comma-separated, of {', '.join(CONTENDERS)} (ort and ort_int8 always "
                        "run: the ratios' references)")
    p.add_argument("--task", default="embed",
                   help="comma-separated: embed (the embedder's pooled output, above), tag "
                        "(the tagger), squad (span QA)")
    p.add_argument("--quick", action="store_true", help="tiny random model, few runs")
    return p.parse_args(argv)


def build(root: str, model: str, threads: int) -> dict:
    """The contenders: name -> function(text) -> pooled vector `[1, hidden]`."""
    import numpy as np

    from keras_bert.checkpoints import convert
    from keras_bert.export.litert_runtime import LiteRTModel
    from keras_bert.export.session_bundle import SessionBundle
    from keras_bert.tasks import TextEmbedder

    hf_dir = write_hf_model(model, root)
    ours = convert(hf_dir, os.path.join(root, "ours"), lower_case=True).path
    embedder = TextEmbedder.from_pretrained(ours, pooling="pooled", seq_length=128)
    lite = {q: embedder.export(os.path.join(root, f"lite-{q}"), format="litert",
                               tokenizer="fast-bert", quantize=q) for q in ("none", "int8")}
    saved = embedder.export(os.path.join(root, "saved"), precision="float32", target=None)
    onnx = write_onnx(hf_dir, os.path.join(root, "model.onnx"))
    onnx_int8 = common.onnx_int8(onnx)
    tokenizer = hf_tokenizer(os.path.join(hf_dir, "vocab.txt"))

    def ort_fn(path):
        options_session = common.ort_session(path, threads)
        names = [i.name for i in options_session.get_inputs()]

        def run(text):
            encoded = tokenizer.encode_batch_fast([text])
            feeds = {"input_ids": [e.ids for e in encoded],
                     "attention_mask": [e.attention_mask for e in encoded],
                     "token_type_ids": [e.type_ids for e in encoded]}
            return options_session.run(None, {n: np.asarray(feeds[n], np.int64)
                                              for n in names})[0]
        return run

    litert = {q: LiteRTModel(path, num_threads=threads) for q, path in lite.items()}
    bundle = SessionBundle(saved)
    return {"litert": lambda t: litert["none"]([t])["embedding"],
            "litert_int8": lambda t: litert["int8"]([t])["embedding"],
            "ort": ort_fn(onnx), "ort_int8": ort_fn(onnx_int8),
            "session": lambda t: bundle.run("serving_default", {
                "text": np.array([t], dtype=object)})["embedding"]}


def agreement(contenders: dict, texts: list[str]) -> dict[str, float]:
    """Each contender's least cosine with `ort`'s vectors over `texts`."""
    import numpy as np

    ref = np.concatenate([contenders["ort"](t) for t in texts])
    out = {}
    for name, fn in contenders.items():
        got = np.concatenate([fn(t) for t in texts])
        cos = np.sum(got * ref, -1) / (np.linalg.norm(got, axis=-1) * np.linalg.norm(ref, axis=-1))
        out[name] = float(cos.min())
    return out


def latency(contenders: dict, texts: list[str], runs: int, block: int,
            block_warmup: int = 0) -> dict:
    """Median and p90 milliseconds per request, each contender's texts in the same order,
    turns taken by blocks of `block` requests, each opened by `block_warmup` untimed ones
    (`common.interleaved`)."""
    position = dict.fromkeys(contenders, 0)

    def request(name):
        def call():
            contenders[name](texts[position[name] % len(texts)])
            position[name] += 1
        return call
    timings = common.interleaved({name: request(name) for name in contenders}, runs,
                                 warmup=5, log=None, block=block, block_warmup=block_warmup)
    return {name: {"p50_ms": 1e3 * t.median,
                   "p90_ms": 1e3 * common.percentile(t.seconds, 90)}
            for name, t in timings.items()}


def request_texts(args, vocab: str) -> tuple[list[str], str]:
    """The texts the contenders answer, and a line saying what they are."""
    if args.corpus == "spans":
        return (texts_of_length(vocab, args.length, args.texts),
                f"{args.length} word pieces")
    texts = [text for text, _ in held_out_reviews(args.texts)]
    pieces = [sum(e.attention_mask) - 2 for e in hf_tokenizer(vocab).encode_batch(texts)]
    return texts, (f"{len(texts)} held-out Rotten Tomatoes snippets, {min(pieces)}-"
                   f"{max(pieces)} word pieces (mean {sum(pieces) / len(pieces):.1f})")


def accuracy(classifier_dir: str, root: str, held_out: int, threads: int) -> list[list]:
    """Held-out Rotten Tomatoes accuracy of the classifier's float32 and int8 LiteRT files,
    and how often their labels agree."""
    from keras_bert.export.litert_runtime import LiteRTModel
    from keras_bert.tasks.task_dir import export_model
    from keras_bert.tasks.task_model import TextTaskModel

    labels = set(TextTaskModel.load(classifier_dir).labels.names)
    rows = [(t, y) for t, y in held_out_reviews() if y in labels][:held_out]
    answers = {}
    for q in ("none", "int8"):
        exported = export_model(classifier_dir, os.path.join(root, f"clf-{q}"),
                                format="litert", tokenizer="fast-bert", quantize=q)
        with LiteRTModel(exported.path, num_threads=threads) as model:
            answers[q] = [model.predict([t])[0]["label"] for t, _ in rows]
    acc = {q: sum(a == y for a, (_, y) in zip(v, rows, strict=True)) / len(rows)
           for q, v in answers.items()}
    same = sum(a == b for a, b in zip(answers["none"], answers["int8"], strict=True)) / len(rows)
    return [["float32", f"{100 * acc['none']:.2f}", "-"],
            ["int8", f"{100 * acc['int8']:.2f}", f"{100 * same:.2f}"]]


def chosen(contenders: dict, names: str) -> dict:
    """The `--contenders` among `contenders`, with `ort` and `ort_int8` (the ratios'
    references) always; a task without one of the names leaves it out."""
    keep = {"ort", "ort_int8", *names.split(",")}
    return {name: fn for name, fn in contenders.items() if name in keep}


def _spread(fn):
    return lambda request: fn(*request)


def span_report(contenders: dict, requests: list[tuple], args) -> str:
    """The table of one task: p50 back to back and call by call, ratios to ORT fp32 and
    int8 (back to back), and how often each contender answers as `ort` does."""
    calls = {name: _spread(fn) for name, fn in contenders.items()}
    ref = [calls["ort"](r) for r in requests]
    agree = {name: 100 * sum(fn(r) == a for r, a in zip(requests, ref, strict=True))
             / len(requests) for name, fn in calls.items()}
    modes = {"back to back": latency(calls, requests, args.runs, args.block,
                                     args.block_warmup),
             "call by call": latency(calls, requests, args.runs, 1)}
    b2b = modes["back to back"]
    rows = [[name, *(f"{modes[m][name]['p50_ms']:.2f}" for m in modes),
             f"{b2b['ort']['p50_ms'] / b2b[name]['p50_ms']:.2f}x",
             f"{b2b['ort_int8']['p50_ms'] / b2b[name]['p50_ms']:.2f}x", f"{agree[name]:.1f}"]
            for name in calls]
    return common.markdown_table(["contender", "back to back p50 ms", "call by call p50 ms",
                                  "ort fp32 / it", "ort int8 / it", "answers as ort %"], rows)


def embed_report(args, root: str, model: str, log) -> None:
    """The embedder's table (and `--classifier`'s accuracy table), printed."""
    log(f"{model}: writing the exports and the ONNX files ...")
    contenders = chosen(build(root, model, args.threads), args.contenders)
    vocab = os.path.join(write_hf_model(model, root), "vocab.txt")
    texts, what = request_texts(args, vocab)
    cosines = agreement(contenders, texts)
    log("least cosine with ort: " + ", ".join(f"{k} {v:.5f}" for k, v in cosines.items()))
    result = latency(contenders, texts, args.runs, args.block, args.block_warmup)
    by_call = latency(contenders, texts, args.runs, 1)
    rows = [[name, f"{r['p50_ms']:.2f}", f"{r['p90_ms']:.2f}",
             f"{result['ort']['p50_ms'] / r['p50_ms']:.2f}x",
             f"{result['ort_int8']['p50_ms'] / r['p50_ms']:.2f}x",
             f"{by_call[name]['p50_ms']:.2f}",
             f"{by_call['ort']['p50_ms'] / by_call[name]['p50_ms']:.2f}x",
             f"{by_call['ort_int8']['p50_ms'] / by_call[name]['p50_ms']:.2f}x",
             f"{cosines[name]:.5f}"]
            for name, r in result.items()]
    print(f"{model}, batch 1, {what}, {args.threads} threads, {args.runs} requests each, "
          f"back to back by blocks of {args.block} (after {args.block_warmup} untimed) and "
          f"call by call "
          f"({common.host_line(common.machine_description())})")
    print(common.markdown_table(["contender", "back to back p50 ms", "p90 ms", "ort fp32 / it",
                                 "ort int8 / it", "call by call p50 ms", "ort fp32 / it",
                                 "ort int8 / it", "least cosine vs ort"], rows))
    if args.classifier:
        print(common.markdown_table(["LiteRT file", "held-out accuracy %",
                                     "labels equal to float32 %"],
                                    accuracy(args.classifier, root, args.held_out,
                                             args.threads)))


def main(argv=None) -> int:
    args = parse_args(argv)
    if args.quick:
        args.runs, args.texts, args.held_out, args.block_warmup = 5, 4, 20, 1
    common.configure_threads(args.threads)
    model = "tiny" if args.quick else "minilm-l6"

    def log(message):
        print(message, file=sys.stderr, flush=True)

    with tempfile.TemporaryDirectory() as root:
        for task in args.task.split(","):
            if task == "embed":
                embed_report(args, root, model, log)
                continue
            log(f"{model} {task}: writing the exports and the ONNX files ...")
            contenders = chosen(build_spans(root, model, task, args.threads, SPAN_LENGTH),
                                args.contenders)
            vocab = os.path.join(write_hf_model(model, root), "vocab.txt")
            texts, what = request_texts(args, vocab)
            requests = span_requests(task, texts)
            print(f"{model} {task}, batch 1, {what}, {args.threads} threads, {args.runs} "
                  f"requests each, back to back by blocks of {args.block} (after "
                  f"{args.block_warmup} untimed) and call by call "
                  f"({common.host_line(common.machine_description())})")
            print(span_report(contenders, requests, args))
    return 0


if __name__ == "__main__":
    sys.exit(main())
