"""`SpanQATask`: extractive question answering (SQuAD v1.1 / v2.0).

Data: SQuAD JSON (`keras_bert.tasks.squad.read_squad`), featurised by
`keras_bert.text.question_windows` (the function the export runs): one training example per
window, labelled with the answer's columns or `[CLS]`. Model: `BertSpanQA` (its own loss).
Evaluation: the export's answer function run in process on the eval questions, scored with
the official exact match and F1. Export: `SpanQAServingModule`.
"""

from __future__ import annotations

import os

import numpy as np
import tensorflow as tf

from keras_bert.models.span_qa import BertSpanQA
from keras_bert.tasks import metrics, squad
from keras_bert.tasks.readers import json_objects, no_rows, stdin_lines
from keras_bert.tasks.span_qa_serving import SpanQAServingModule
from keras_bert.tasks.task import (
    PREDICT_BATCH,
    Task,
    examples_dataset,
    featurise_in_chunks,
    run_in_batches,
    text_of,
)
from keras_bert.text.question_windows import question_windows

FEATURE_CHUNK = 256  # questions featurised per call


class SpanQATask(Task):
    """Extractive QA; metrics: exact match and F1."""

    name = "squad"

    def build_model(self, encoder, spec: dict, labels=None):
        """A `BertSpanQA`."""
        return BertSpanQA(encoder)

    def compile(self, model, optimizer) -> None:
        """`BertSpanQA` brings its loss (start and end cross-entropy)."""
        model.compile(optimizer=optimizer, jit_compile=False)

    def features(self, examples, preprocessor, spec: dict) -> dict[str, np.ndarray]:
        """The windows of `examples` at the preprocessor's length: the three inputs and
        `start_positions` / `end_positions`, one row per window, examples in order."""
        def featurise(chunk):
            starts, ends = zip(*(_answer_bytes(ex) for ex in chunk), strict=True)
            out = question_windows(
                preprocessor, tf.constant([ex.question for ex in chunk]),
                tf.constant([ex.context for ex in chunk]), int(spec["max_query_length"]),
                int(spec["doc_stride"]), tf.constant(starts, tf.int64),
                tf.constant(ends, tf.int64))
            _check_answers(chunk, starts, out["answer_tokens"].numpy())
            return {**out["inputs"], "start_positions": out["start_positions"],
                    "end_positions": out["end_positions"]}

        return featurise_in_chunks(examples, FEATURE_CHUNK, featurise)

    def dataset(self, features: dict, batch_size: int,
                shuffle_seed: int | None = None) -> tf.data.Dataset:
        """`(inputs, {"start_positions", "end_positions"})` batches."""
        targets = {k: features[k] for k in ("start_positions", "end_positions")}
        inputs = {k: v for k, v in features.items() if k not in targets}
        return examples_dataset(inputs, targets, batch_size, shuffle_seed)

    def read_rows(self, path: str, job, labels=None) -> list:
        """`SquadExample`s of the SQuAD JSON file `path`."""
        return squad.read_squad(path)

    def score_questions(self, module, examples, batch_size: int = PREDICT_BATCH) -> dict:
        """The official exact match and F1 of the answers the export's function (`module`)
        gives `examples` (`SquadExample`s with gold answers)."""
        answers = self.predict(module, examples, batch_size)
        return metrics.squad_em_f1({a["id"]: a["answer"] for a in answers}, examples)

    def serving_module(self, model, preprocessor, labels, spec: dict,
                       null_score_threshold: float = 0.0, **options):
        """`answer`, `start`, `end`, `score`, `has_answer` from `question` and `context`."""
        return SpanQAServingModule(
            model, preprocessor, max_query_length=int(spec.get("max_query_length", 64)),
            doc_stride=int(spec.get("doc_stride", 128)),
            allow_no_answer=bool(spec.get("version_2", False)),
            null_score_threshold=null_score_threshold)

    def read_inputs(self, source: str, spec: dict, text_column=None, text_b_column=None):
        """`SquadExample`s from JSONL `{"question", "context"[, "id"]}` rows (a file or
        `-`) or a SQuAD JSON file."""
        return read_questions(source)

    def predict(self, module, inputs, batch_size: int = PREDICT_BATCH) -> list[dict]:
        """`{"id", "answer", "start", "end", "score", "has_answer"}` per question
        (CHARACTER offsets in the context; `None` and `""` for no answer)."""
        out = run_in_batches(module.text_function(),
                             {"question": [ex.question for ex in inputs],
                              "context": [ex.context for ex in inputs]}, batch_size)
        results = []
        for i, ex in enumerate(inputs):
            start, end = int(out["start"][i]), int(out["end"][i])
            raw = ex.context.encode("utf-8")
            found = bool(out["has_answer"][i])
            results.append({
                "id": ex.qas_id, "answer": text_of(out["answer"][i]),
                "start": len(raw[:start].decode("utf-8")) if found else None,
                "end": len(raw[:end].decode("utf-8")) if found else None,
                "score": float(out["score"][i]), "has_answer": found})
        return results


def _answer_bytes(example) -> tuple[int, int]:
    """UTF-8 byte span of the first gold answer (`(-1, -1)` without one)."""
    if not example.answers or example.is_impossible:
        return -1, -1
    answer = example.answers[0]
    start = len(example.context[:answer.start_char].encode("utf-8"))
    return start, start + len(answer.text.encode("utf-8"))


def _check_answers(examples, starts, answer_tokens) -> None:
    for ex, start, (first, _) in zip(examples, starts, answer_tokens, strict=True):
        if start >= 0 and first < 0:
            raise ValueError(f"question {ex.qas_id!r}: the answer {ex.answers[0].text!r} "
                             "covers no token of the context.")


def read_questions(source: str) -> list:
    """`SquadExample`s from JSONL `{"question", "context"[, "id"]}` rows (a file, or `-`
    for stdin) or a SQuAD JSON file (`.json`)."""
    if source != "-" and os.path.splitext(source)[1].lower() == ".json":
        return squad.read_squad(source)
    if source == "-":
        rows = list(json_objects(stdin_lines(), "stdin"))
    else:
        with open(source, encoding="utf-8-sig") as f:
            rows = list(json_objects(enumerate(f, start=1), source))
    name = "stdin" if source == "-" else source
    examples = []
    for number, row in rows:
        if not isinstance(row.get("question"), str) or not isinstance(row.get("context"), str):
            raise ValueError(f"{name}: line {number}: expected a JSON object with 'question' "
                             "and 'context' strings")
        examples.append(squad.SquadExample(str(row.get("id", number)), row["question"],
                                           row["context"]))
    return examples or no_rows(name)
