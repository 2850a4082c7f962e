"""Where a LiteRT tagger's or span QA's batch-1 answer spends its time: the text graph cut
after each of its steps, each cut converted and timed on its own, and the network alone at
one length and at two lengths taking turns.

Rows (`--task tag`: the tagger's graph, `keras_bert/tasks/token_classification/
litert_tagger.py`; `--task squad`: span QA's, `question_answering/litert_answerer.py`):

* `text steps`        strings in, the packed windows out (words or pieces, windows, packing,
                      the max-context rule): everything before the network;
* `+ network`         the same and the network's logits;
* `+ span decoding`   (span QA) and `best_spans` / `best_windows`;
* `serving_default`   the whole graph, as the export writes it (answers cut from the text);
* `... one text repeated`  `serving_default` answering the same text every time: no tensor
                      changes size between calls, so nothing is prepared again;
* `network alone, one length` / `two lengths in turn`: the frozen network, ids in, at
                      `--length` + 2 tokens, and at that and one token less by turns (what a
                      change of length costs XNNPACK: it reshapes its plan).

Every file is called as `LiteRTModel` calls it (`litert_runtime.SignatureCall`, `--threads`
threads), contenders by turns of 20 calls after 10 untimed ones, medians. The model is
all-MiniLM-L6-v2 with a random head (`bench/support/litert_spans.py`), `--quantize` int8 or none.

    .venv/bin/python bench/litert_breakdown.py --task tag --threads 2
    .venv/bin/python bench/litert_breakdown.py --task squad --threads 2
    .venv/bin/python bench/litert_breakdown.py --quick      # smoke run, tiny model
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.support import common  # noqa: E402
from bench.support.litert_spans import QUESTIONS, SPAN_LENGTH, write_hf_head  # noqa: E402
from bench.support.texts import texts_of_length  # noqa: E402

STEPS = ("text steps", "+ network", "+ span decoding", "serving_default")


def parse_args(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--task", choices=("tag", "squad"), default="tag")
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--quantize", choices=("int8", "none"), default="int8")
    p.add_argument("--length", type=int, default=32, help="word pieces per text")
    p.add_argument("--runs", type=int, default=600, help="timed calls per row")
    p.add_argument("--quick", action="store_true", help="tiny random model, few runs")
    return p.parse_args(argv)


def cuts(task: str, graph) -> dict:
    """`{row: function of the strings}`: the graph cut after each step."""
    import tensorflow as tf

    from keras_bert.tasks.question_answering.span_decoding import best_spans, best_windows

    if task == "tag":
        def text_steps(text):
            return graph._words(text)["inputs"]

        def network(text):
            return graph.network(graph._words(text)["inputs"])
        return {"text steps": text_steps, "+ network": network,
                "serving_default": graph.serving_default}

    def text_steps(question, context):
        read = graph._windows(question, context)
        return {**read["inputs"], "max_context": tf.cast(read["max_context"], tf.int32)}

    def network(question, context):
        return graph.network(graph._windows(question, context)["inputs"])

    def decoded(question, context):
        read = graph._windows(question, context)
        out = graph.network(read["inputs"])
        start, end = (tf.cast(out[k], tf.float32) for k in ("start_logits", "end_logits"))
        win, begin = read["windows"], read["begin"]
        spans = best_spans(start, end, begin, begin + win.length,
                           start_mask=read["max_context"],
                           **dict(graph.decoding, allow_no_answer=False))
        return best_windows(spans, win.example, tf.size(context), start, end,
                            graph.decoding["allow_no_answer"],
                            graph.decoding["null_score_threshold"])
    return {"text steps": text_steps, "+ network": network, "+ span decoding": decoded,
            "serving_default": graph.serving_default}


def caller(fn, specs, quantize: str, threads: int):
    """`fn` traced for `specs`, converted as the export converts, called as `LiteRTModel`
    calls a signature."""
    import tensorflow as tf

    from keras_bert.export.litert import convert
    from keras_bert.export.litert_runtime import SignatureCall, make_interpreter

    traced = tf.function(fn, input_signature=specs, autograph=False).get_concrete_function()
    blob = convert({"serving_default": traced}, quantize)
    return SignatureCall(make_interpreter(blob, threads).get_signature_runner("serving_default"))


def rows(args, root: str) -> dict:
    """`{row: zero-argument call}`, each answering its next request."""
    import numpy as np
    import tensorflow as tf

    from keras_bert.models.encoder import INPUT_NAMES
    from keras_bert.tasks.task_conversion import convert
    from keras_bert.tasks.task_model import TextTaskModel

    model_name = "tiny" if args.quick else "minilm-l6"
    hf_dir = write_hf_head(model_name, root, args.task)
    model = TextTaskModel.load(convert(hf_dir, os.path.join(root, "ours"), lower_case=True).path)
    graph = model.in_precision("float32").serving_functions(None, SPAN_LENGTH).litert_graph()
    texts = texts_of_length(os.path.join(hf_dir, "vocab.txt"), args.length, 200)
    names = graph.text_inputs
    requests = [dict(zip(names, [np.array([t.encode()], object) for t in (
        (t,) if args.task == "tag" else (QUESTIONS[i % len(QUESTIONS)], t))], strict=True))
        for i, t in enumerate(texts)]
    specs = [tf.TensorSpec([None], tf.string, name=n) for n in names]
    made = {name: caller(fn, specs, args.quantize, args.threads)
            for name, fn in cuts(args.task, graph).items()}
    calls = {name: _turns(lambda c=call, i=i: c(requests[i]) for i in range(len(requests)))
             for name, call in made.items()}
    calls["serving_default, one text repeated"] = _turns(
        [lambda: made["serving_default"](requests[0])])
    ids_specs = [tf.TensorSpec([None, None], tf.int32, name=n) for n in INPUT_NAMES]
    alone = caller(lambda *ids: graph.network(dict(zip(INPUT_NAMES, ids, strict=True))),
                   ids_specs, args.quantize, args.threads)
    feeds = [_ids(n_tokens) for n_tokens in (args.length + 2, args.length + 1)]
    calls["network alone, one length"] = _turns([lambda: alone(feeds[0])])
    calls["network alone, two lengths in turn"] = _turns(
        [lambda: alone(feeds[0]), lambda: alone(feeds[1])])
    return calls


def _ids(n_tokens: int) -> dict:
    import numpy as np

    words = np.full([1, n_tokens], 7, np.int32)
    return {"input_word_ids": words, "input_mask": np.ones_like(words),
            "input_type_ids": np.zeros_like(words)}


def _turns(functions):
    """A zero-argument call running `functions` in turn, one per call."""
    functions, position = list(functions), [0]

    def call():
        functions[position[0] % len(functions)]()
        position[0] += 1
    return call


def main(argv=None) -> int:
    args = parse_args(argv)
    if args.quick:
        args.runs = 20
    common.configure_threads(args.threads)
    with tempfile.TemporaryDirectory() as root:
        calls = rows(args, root)
        timings = common.interleaved(calls, args.runs, warmup=3, block=20, block_warmup=10)
    p50 = {name: 1e3 * t.median for name, t in timings.items()}
    steps = [name for name in p50 if name in STEPS]  # the cuts, in the graph's order
    added = {name: p50[name] - p50[before] for before, name in zip(steps, steps[1:], strict=False)}
    table = [[name, f"{ms:.3f}", f"{added[name]:+.3f}" if name in added else ""]
             for name, ms in p50.items()]
    print(f"{'tiny' if args.quick else 'minilm-l6'} {args.task} LiteRT {args.quantize}, batch 1, "
          f"{args.length} word pieces, {args.threads} threads, {args.runs} calls each "
          f"({common.host_line(common.machine_description())})")
    print(common.markdown_table(["row", "p50 ms", "added by the step ms"], table))
    return 0


if __name__ == "__main__":
    sys.exit(main())
