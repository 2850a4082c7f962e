"""SQuAD v1.1 / v2.0 extractive question answering data: reading and checking.

Reading: `data[].paragraphs[].context` and `qas[].id / question / answers[{text,
answer_start}] / is_impossible` (v2.0; absent means answerable). Every answer is checked
against its context (`context[answer_start:answer_start + len(text)] == text`).

Featurisation (windows over long contexts, answer labels) is `question_windows.py`, in
TensorFlow, shared by fine-tuning, the export and `keras-bert predict`; decoding is in the
export's graph (`serving.py`). A readable Python reference of both (the original
`run_squad.py`) lives in the tests. `read_questions` reads questions to answer (`keras-bert
predict`), `squad_examples` a Python user's questions and answers.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np

from keras_bert.tasks.inputs import as_list, text_examples
from keras_bert.tasks.readers import json_objects, no_rows, stdin_lines
from keras_bert.text.files import open_utf8


@dataclass(frozen=True)
class SquadAnswer:
    """A gold answer: its text and its first character in the context."""

    text: str
    start_char: int

    @property
    def end_char(self) -> int:
        """One past the answer's last character."""
        return self.start_char + len(self.text)


@dataclass(frozen=True)
class SquadExample:
    """One question about one context."""

    qas_id: str
    question: str
    context: str
    answers: tuple[SquadAnswer, ...] = ()
    is_impossible: bool = False
    title: str = ""


def read_squad(path) -> list[SquadExample]:
    """Reads a SQuAD v1.1 or v2.0 JSON file (see `parse_squad`)."""
    with open_utf8(path, bom=False) as f:
        try:
            data = json.load(f)
        except json.JSONDecodeError as e:
            raise ValueError(f"{path}: invalid JSON: {e}") from None
    return parse_squad(data, source=str(path))


def parse_squad(data: Mapping, source: str = "SQuAD data") -> list[SquadExample]:
    """SQuAD examples from the parsed JSON (`{"data": [...]}`).

    Raises:
      ValueError: naming the question id, for a missing field, a repeated id, an answer
        span outside the context, or an answer text that differs from the context at
        `answer_start`.
    """
    if not isinstance(data, Mapping) or not isinstance(data.get("data"), list):
        raise ValueError(f"{source}: expected a JSON object with a 'data' list.")
    examples: list[SquadExample] = []
    seen: set[str] = set()
    for a, article in enumerate(data["data"]):
        title = str(article.get("title", ""))
        for p, paragraph in enumerate(article.get("paragraphs", [])):
            context = paragraph.get("context")
            if not isinstance(context, str):
                raise ValueError(f"{source}: data[{a}].paragraphs[{p}] has no 'context' text.")
            for qa in paragraph.get("qas", []):
                example = _parse_question(qa, context, title, source, f"data[{a}]."
                                          f"paragraphs[{p}]")
                if example.qas_id in seen:
                    raise ValueError(f"{source}: question id {example.qas_id!r} is repeated.")
                seen.add(example.qas_id)
                examples.append(example)
    if not examples:
        raise ValueError(f"{source}: no questions found.")
    return examples


def _parse_question(qa: Mapping, context: str, title: str, source: str,
                    where: str) -> SquadExample:
    """One `qas` entry, with its answers verified against the context."""
    qas_id = qa.get("id")
    if qas_id is None:
        raise ValueError(f"{source}: a question in {where} has no 'id'.")
    qas_id = str(qas_id)
    question = qa.get("question")
    if not isinstance(question, str):
        raise ValueError(f"{source}: question {qas_id!r} has no 'question' text.")
    is_impossible = bool(qa.get("is_impossible", False))
    answers = []
    for k, answer in enumerate(qa.get("answers", [])):
        try:
            text, start = answer["text"], answer["answer_start"]
        except (KeyError, TypeError):
            raise ValueError(f"{source}: question {qas_id!r}: answer {k} needs 'text' and "
                             "'answer_start'.") from None
        if not isinstance(text, str) or not isinstance(start, int) or isinstance(start, bool):
            raise ValueError(f"{source}: question {qas_id!r}: answer {k} has a non-text "
                             "'text' or a non-integer 'answer_start'.")
        if start < 0 or start + len(text) > len(context):
            raise ValueError(
                f"{source}: question {qas_id!r}: answer {k} {text!r}: answer span outside the "
                f"context (characters {start}..{start + len(text)} of a {len(context)}-"
                "character context).")
        found = context[start:start + len(text)]
        if found != text:
            raise ValueError(
                f"{source}: question {qas_id!r}: answer {k}: mismatch between the answer text "
                f"{text!r} and the context at answer_start={start} ({found!r}).")
        answers.append(SquadAnswer(text, start))
    return SquadExample(qas_id, question, context, tuple(answers), is_impossible, title)


def read_questions(source: str) -> list:
    """`SquadExample`s from JSONL `{"question", "context"[, "id"]}` rows (a file, or `-`
    for stdin) or a SQuAD JSON file (`.json`)."""
    if source != "-" and os.path.splitext(source)[1].lower() == ".json":
        return read_squad(source)
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
        examples.append(SquadExample(str(row.get("id", number)), row["question"],
                                           row["context"]))
    return examples or no_rows(name)


def squad_examples(x, y=None, what: str = "x") -> list:
    """`SquadExample`s of `(question, context)` pairs `x` (as `text_examples` reads pairs)
    and answers `y`: per question `{"text", "start"}` (the answer's first character in the
    context), a `(text, start)` tuple, the answer text alone (its first occurrence in the
    context), or None / "" for no answer (SQuAD v2.0)."""
    pairs = text_examples(x, pair=True, what=what)
    if y is None:
        return [SquadExample(str(i), ex.text, ex.text_b) for i, ex in enumerate(pairs)]
    answers = as_list(y, "y")
    if len(answers) != len(pairs):
        raise ValueError(f"y has {len(answers)} answers for {len(pairs)} questions")
    out = []
    for i, (ex, answer) in enumerate(zip(pairs, answers, strict=True)):
        if answer is None or answer == "":
            out.append(SquadExample(str(i), ex.text, ex.text_b, (), True))
            continue
        if isinstance(answer, dict):
            text, start = answer.get("text"), answer.get("start")
        elif isinstance(answer, (tuple, list)) and len(answer) == 2:
            text, start = answer
        elif isinstance(answer, str):
            text, start = answer, ex.text_b.find(answer)
            if start < 0:
                raise ValueError(f"y[{i}] ({answer!r}) does not occur in its context")
        else:
            raise TypeError(f"y[{i}] is {answer!r}: an answer is {{'text', 'start'}}, "
                            "(text, start), its text, or None for no answer")
        if not isinstance(text, str) or not isinstance(start, (int, np.integer)):
            raise TypeError(f"y[{i}] is {answer!r}: text a string, start an int")
        if ex.text_b[int(start):int(start) + len(text)] != text:
            raise ValueError(f"y[{i}]: the context at {int(start)} reads "
                             f"{ex.text_b[int(start):int(start) + len(text)]!r}, not the "
                             f"answer {text!r}")
        out.append(SquadExample(str(i), ex.text, ex.text_b, (SquadAnswer(text, int(start)),)))
    return out
