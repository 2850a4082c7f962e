"""The tagger's and span QA's contenders of `bench/litert_latency.py --task tag,squad`: a
random head on the encoder, as a Hugging Face `BertFor*` model (run by `tokenizers` + ONNX
Runtime with the post-processing a Hugging Face user writes) and as ours (the LiteRT files,
float32 and int8, the int8 file also through LiteRT's own `SignatureRunner`
(`litert_int8_runner`), and the SavedModel through TF Serving's loader, plain (`session`) and
exported with `--xla` (`session_xla`: the network XLA-compiled over length buckets))."""

from __future__ import annotations

import os
import sys

from bench.support import common
from bench.support.hf_models import write_hf_model
from bench.support.serving_contenders import hf_tokenizer

TAGS = ["B-LOC", "B-PER", "I-PER", "O", "B-MISC"]
SPAN_LENGTH = 128  # the tagger's and span QA's max_length, ours and ONNX Runtime's
QUESTIONS = ["what did he see?", "who spoke first?", "where was the ship?", "why?"]


def write_hf_head(model: str, root: str, task: str) -> str:
    """A Hugging Face `BertForTokenClassification` / `BertForQuestionAnswering` directory:
    the encoder of `write_hf_model(model)` and a random head (seed 0)."""
    import shutil

    import torch
    import transformers

    source = write_hf_model(model, root)
    torch.manual_seed(0)
    if task == "tag":
        hf = transformers.BertForTokenClassification.from_pretrained(
            source, num_labels=len(TAGS), id2label=dict(enumerate(TAGS)))
    else:
        hf = transformers.BertForQuestionAnswering.from_pretrained(source)
    path = os.path.join(root, f"hf-{task}")
    hf.eval().save_pretrained(path)
    shutil.copy(os.path.join(source, "vocab.txt"), os.path.join(path, "vocab.txt"))
    return path


def export_head_onnx(hf_dir: str, task: str, path: str) -> str:
    """`hf_dir`'s head model as ONNX: `logits`, or `start_logits` and `end_logits`."""
    import contextlib

    import torch
    import transformers

    kind = (transformers.BertForTokenClassification if task == "tag"
            else transformers.BertForQuestionAnswering)
    outputs = ["logits"] if task == "tag" else ["start_logits", "end_logits"]

    class Logits(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.model = kind.from_pretrained(hf_dir).eval()

        def forward(self, input_ids, attention_mask, token_type_ids):
            found = self.model(input_ids=input_ids, attention_mask=attention_mask,
                               token_type_ids=token_type_ids)
            return tuple(found[name] for name in outputs)

    ids = torch.ones(2, 8, dtype=torch.long)
    batch, seq = torch.export.Dim("batch"), torch.export.Dim("seq", max=512)
    with contextlib.redirect_stdout(sys.stderr):
        torch.onnx.export(Logits(), (ids, ids.clone(), ids * 0), path, dynamo=True,
                          input_names=["input_ids", "attention_mask", "token_type_ids"],
                          output_names=outputs, dynamic_shapes=({0: batch, 1: seq},) * 3)
    return path


def hf_tagger(tokenizer, session):
    """What a Hugging Face user writes: words split on whitespace, encoded pre-tokenized,
    each word's label read at its first piece."""
    import numpy as np

    def run(text):
        words = text.split()
        encoded = tokenizer.encode(words, is_pretokenized=True)  # truncated at max_length
        ids = np.asarray([encoded.ids], np.int64)
        logits = session.run(None, {"input_ids": ids, "attention_mask": np.ones_like(ids),
                                    "token_type_ids": np.zeros_like(ids)})[0][0]
        first = {}
        for position, word in reversed(list(enumerate(encoded.word_ids))):
            first[word] = position
        return [TAGS[int(np.argmax(logits[first[w]]))] if w in first else "O"
                for w in range(len(words))]
    return run


def hf_answerer(tokenizer, session, settings: dict):
    """What a Hugging Face user writes (transformers' question-answering post-processing):
    the question and the context's overflowing windows, in each the `n_best` starts and
    ends inside the context, at most `max_answer_length` pieces apart; the best span over
    all windows by `start + end`, cut from the context by its character offsets."""
    import numpy as np

    n_best, longest = settings["n_best"], settings["max_answer_length"]

    def run(question, context):
        first = tokenizer.encode(question, context)
        windows = [first, *first.overflowing]
        width = max(len(w.ids) for w in windows)
        feeds = {name: np.asarray([getattr(w, key) + [0] * (width - len(w.ids))
                                   for w in windows], np.int64)
                 for name, key in (("input_ids", "ids"), ("attention_mask", "attention_mask"),
                                   ("token_type_ids", "type_ids"))}
        starts, ends = session.run(None, feeds)
        best, answer = -np.inf, ""
        for w, window in enumerate(windows):
            inside = [s == 1 for s in window.sequence_ids]
            for i in np.argsort(starts[w])[::-1][:n_best]:
                for j in np.argsort(ends[w])[::-1][:n_best]:
                    if inside[i] and inside[j] and i <= j < i + longest \
                            and starts[w][i] + ends[w][j] > best:
                        best = starts[w][i] + ends[w][j]
                        answer = context[window.offsets[i][0]:window.offsets[j][1]]
        return answer
    return run


def span_requests(task: str, texts: list[str]) -> list[tuple]:
    """The contenders' arguments for each text: `(text,)` for the tagger, `(question,
    context)` for span QA (the questions in turn)."""
    if task == "tag":
        return [(t,) for t in texts]
    return [(QUESTIONS[i % len(QUESTIONS)], t) for i, t in enumerate(texts)]


def build_spans(root: str, model: str, task: str, threads: int, max_length: int) -> dict:
    """The contenders for `task` (`tag` or `squad`): name -> function(text) -> the tags
    per word, or function(question, context) -> the answer."""
    import numpy as np

    from keras_bert.export.litert_runtime import LiteRTModel, make_interpreter, text_array
    from keras_bert.export.session_bundle import SessionBundle
    from keras_bert.tasks.task_conversion import convert
    from keras_bert.tasks.task_model import TextTaskModel

    hf_dir = write_hf_head(model, root, task)
    ours = TextTaskModel.load(convert(hf_dir, os.path.join(root, f"ours-{task}"),
                                      lower_case=True).path)
    lite = {q: LiteRTModel(ours.export(os.path.join(root, f"lite-{task}-{q}"),
                                       format="litert", tokenizer="fast-bert", quantize=q,
                                       max_length=max_length), num_threads=threads)
            for q in ("none", "int8")}
    bundles = {name: SessionBundle(ours.export(os.path.join(root, f"{name}-{task}"),
                                               precision="float32", target=None,
                                               max_length=max_length, xla=xla))
               for name, xla in (("session", False), ("session_xla", True))}
    onnx = export_head_onnx(hf_dir, task, os.path.join(root, f"{task}.onnx"))
    onnx_int8 = common.onnx_int8(onnx)
    tokenizer = hf_tokenizer(os.path.join(hf_dir, "vocab.txt"))
    tokenizer.no_padding()
    module = ours.serving_functions(None, max_length)
    # The int8 file through LiteRT's own `SignatureRunner`, which allocates on every call
    # (`LiteRTModel` allocates only when a shape changes: `litert_runtime.SignatureCall`), in
    # an interpreter of its own.
    with open(lite["int8"].path, "rb") as f:
        runner = make_interpreter(f.read(), threads).get_signature_runner("serving_default")
    if task == "tag":
        tokenizer.enable_truncation(max_length)
        ort = {n: hf_tagger(tokenizer, common.ort_session(p, threads)) for n, p in
               (("ort", onnx), ("ort_int8", onnx_int8))}

        def tags(outputs):
            return [t.decode() for t in outputs["labels"][0, :outputs["num_words"][0]]]
        return {"litert": lambda t: tags(lite["none"](t)),
                "litert_int8": lambda t: tags(lite["int8"](t)),
                "litert_int8_runner": lambda t: tags(runner(text=text_array(t))), **ort,
                **{name: lambda t, b=bundle: tags(b.run("serving_default", {
                    "text": np.array([t], dtype=object)})) for name, bundle in bundles.items()}}
    # Windows overlapping by a quarter of the length (Hugging Face's `stride` is the
    # overlap); the bench's contexts fit one window either way.
    tokenizer.enable_truncation(max_length, stride=max_length // 4, strategy="only_second")
    ort = {n: hf_answerer(tokenizer, common.ort_session(p, threads), module.decoding)
           for n, p in (("ort", onnx), ("ort_int8", onnx_int8))}
    return {"litert": lambda q, c: lite["none"](q, c)["answer"][0].decode(),
            "litert_int8": lambda q, c: lite["int8"](q, c)["answer"][0].decode(),
            "litert_int8_runner": lambda q, c: runner(question=text_array(q), context=text_array(
                c))["answer"][0].decode(), **ort,
            **{name: lambda q, c, b=bundle: b.run("serving_default", {
                "question": np.array([q], dtype=object),
                "context": np.array([c], dtype=object)})["answer"][0].decode()
               for name, bundle in bundles.items()}}
