"""SQuAD v1.1 / v2.0 extractive question answering data: reading and checking.

Reading: `data[].paragraphs[].context` and `qas[].id / question / answers[{text,
answer_start}] / is_impossible` (v2.0; absent means answerable). Every answer is checked
against its context (`context[answer_start:answer_start + len(text)] == text`).

Featurisation (windows over long contexts, answer labels) is `keras_bert.text.
question_windows`, in TensorFlow, shared by fine-tuning, the export and `keras-bert
predict`; decoding is in the export's graph (`keras_bert.tasks.span_qa_serving`). A readable
Python reference of both (the original `run_squad.py`) lives in the tests.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass

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
