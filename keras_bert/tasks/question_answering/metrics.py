"""`squad_em_f1`: the official SQuAD v1.1 / v2.0 exact match and F1 of answers, in plain
Python."""

from __future__ import annotations

import collections
import re
import string
from collections.abc import Mapping

_ARTICLES = re.compile(r"\b(a|an|the)\b", re.UNICODE)
_PUNCTUATION = frozenset(string.punctuation)


def normalize_answer(text: str) -> str:
    """The official normalisation: lower-case, drop punctuation, articles, extra spaces."""
    text = "".join(ch for ch in text.lower() if ch not in _PUNCTUATION)
    text = _ARTICLES.sub(" ", text)
    return " ".join(text.split())


def exact_match(prediction: str, gold: str) -> float:
    """1.0 when the normalised strings are equal."""
    return float(normalize_answer(prediction) == normalize_answer(gold))


def token_f1(prediction: str, gold: str, version_2: bool = True) -> float:
    """Bag-of-tokens F1 of the normalised strings.

    When one side normalises to nothing: v2.0 scores 1.0 if both do (no-answer matches
    no-answer) else 0.0; v1.1 scores 0.0.
    """
    pred_tokens = normalize_answer(prediction).split()
    gold_tokens = normalize_answer(gold).split()
    if version_2 and (not pred_tokens or not gold_tokens):
        return float(pred_tokens == gold_tokens)
    common = collections.Counter(pred_tokens) & collections.Counter(gold_tokens)
    same = sum(common.values())
    if same == 0:
        return 0.0
    precision, recall = same / len(pred_tokens), same / len(gold_tokens)
    return 2 * precision * recall / (precision + recall)


def _gold_questions(dataset) -> list[tuple[str, list[str], bool]]:
    """`(id, gold answer texts, is_impossible)` from SQuAD JSON or `SquadExample`s."""
    if isinstance(dataset, Mapping):
        dataset = dataset["data"]
    questions = []
    for item in dataset:
        if hasattr(item, "qas_id"):
            questions.append((item.qas_id, [a.text for a in item.answers], item.is_impossible))
            continue
        for paragraph in item["paragraphs"]:
            for qa in paragraph["qas"]:
                questions.append((str(qa["id"]), [a["text"] for a in qa.get("answers", [])],
                                  bool(qa.get("is_impossible", False))))
    return questions


def squad_em_f1(predictions: Mapping[str, str], dataset, version: str | None = None) -> dict:
    """The official SQuAD exact match and F1 (in percent), max over the gold answers.

    Args:
      predictions: `{question id: predicted text}` ("" = no answer).
      dataset: the SQuAD JSON (`{"data": [...]}` or its `data` list) or `SquadExample`s.
      version: "1.1" or "2.0"; default "2.0" when any question is unanswerable.

    v2.0 rules: gold answers that normalise to nothing are dropped and a question without
    gold answers has the single gold "" (so an empty prediction scores 1). A question
    without a prediction scores 0 (v1.1's rule; it keeps totals comparable).

    Returns:
      `{"exact_match", "f1", "total"}`, plus for v2.0 `has_answer_*` and `no_answer_*`
      (`exact_match`, `f1`, `total`) when such questions exist.
    """
    questions = _gold_questions(dataset)
    if not questions:
        raise ValueError("The dataset holds no question.")
    if version is None:
        version = "2.0" if any(q[2] for q in questions) else "1.1"
    if version not in ("1.1", "2.0"):
        raise ValueError(f"version must be '1.1' or '2.0', got {version!r}")
    v2 = version == "2.0"
    scores = {}
    for qid, golds, _ in questions:
        if v2:
            golds = [g for g in golds if normalize_answer(g)] or [""]
        elif not golds:
            raise ValueError(f"question {qid!r} has no gold answer (SQuAD v1.1).")
        prediction = predictions.get(qid)
        if prediction is None:
            scores[qid] = (0.0, 0.0, golds != [""])
            continue
        em = max(exact_match(prediction, g) for g in golds)
        f1 = max(token_f1(prediction, g, v2) for g in golds)
        scores[qid] = (em, f1, golds != [""])
    result = _averages(list(scores.values()))
    if v2:
        for name, has_answer in (("has_answer", True), ("no_answer", False)):
            subset = [s for s in scores.values() if s[2] == has_answer]
            if subset:
                result.update({f"{name}_{k}": v for k, v in _averages(subset).items()})
    return result


def _averages(scores) -> dict:
    n = len(scores)
    return {"exact_match": 100.0 * sum(s[0] for s in scores) / n,
            "f1": 100.0 * sum(s[1] for s in scores) / n, "total": n}
