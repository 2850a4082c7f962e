"""Evaluation metrics of the fine-tuning tasks, in plain Python/NumPy.

* `accuracy` (classification), `pearson` and `spearman` (regression, e.g. STS-B);
* `entity_f1`: entity-level precision/recall/F1 for NER, as `seqeval` computes it;
* `squad_em_f1`: the official SQuAD v1.1 / v2.0 exact match and F1.
"""

from __future__ import annotations

import collections
import re
import string
from collections.abc import Mapping, Sequence

import numpy as np

# ---------------------------------------------------------------------------- simple


def accuracy(y_true: Sequence, y_pred: Sequence) -> float:
    """Fraction of positions where `y_pred` equals `y_true`."""
    y_true, y_pred = _paired(y_true, y_pred)
    return float(np.mean(y_true == y_pred))


def pearson(x: Sequence[float], y: Sequence[float]) -> float:
    """Pearson correlation; NaN when either input is constant (no correlation defined)."""
    x, y = _paired(x, y, np.float64)
    if len(x) < 2:
        raise ValueError("Correlation needs at least 2 values.")
    dx, dy = x - x.mean(), y - y.mean()
    denominator = np.sqrt(np.sum(dx * dx) * np.sum(dy * dy))
    return float(np.sum(dx * dy) / denominator) if denominator > 0 else float("nan")


def average_ranks(values: Sequence[float]) -> np.ndarray:
    """1-based ranks; tied values share the mean of the ranks they span."""
    values = np.asarray(values, np.float64)
    order = np.argsort(values, kind="stable")
    ranks = np.empty(len(values), np.float64)
    sorted_values = values[order]
    i = 0
    while i < len(values):
        j = i
        while j + 1 < len(values) and sorted_values[j + 1] == sorted_values[i]:
            j += 1
        ranks[order[i:j + 1]] = (i + j) / 2 + 1  # mean of ranks i+1 .. j+1
        i = j + 1
    return ranks


def spearman(x: Sequence[float], y: Sequence[float]) -> float:
    """Spearman rank correlation: Pearson of the average ranks (ties share their mean)."""
    x, y = _paired(x, y, np.float64)
    return pearson(average_ranks(x), average_ranks(y))


def _paired(a, b, dtype=None):
    a, b = np.asarray(a, dtype), np.asarray(b, dtype)
    if a.shape != b.shape:
        raise ValueError(f"Inputs of different shapes {a.shape} and {b.shape}.")
    if a.size == 0:
        raise ValueError("Empty inputs.")
    return a, b


# ---------------------------------------------------------------------------- entities
SCHEMES = ("IOB1", "IOB2", "BIO")
# Strict-mode transition rules (prefix of previous tag, prefix of tag, type relation), the
# ones of seqeval's IOB1 / IOB2 schemes. "any" matches both type relations.
_STRICT = {
    "IOB1": {
        "start": {("O", "I", "any"), ("I", "I", "diff"), ("B", "I", "any"),
                  ("I", "B", "same"), ("B", "B", "same")},
        "inside": {("B", "I", "same"), ("I", "I", "same")},
        "end": {("I", "I", "diff"), ("I", "O", "any"), ("I", "B", "any"), ("B", "O", "any"),
                ("B", "I", "diff"), ("B", "B", "same")},
    },
    "IOB2": {
        "start": {("O", "B", "any"), ("I", "B", "any"), ("B", "B", "any")},
        "inside": {("B", "I", "same"), ("I", "I", "same")},
        "end": {("I", "O", "any"), ("I", "I", "diff"), ("I", "B", "any"), ("B", "O", "any"),
                ("B", "I", "diff"), ("B", "B", "any")},
    },
}


def _split_tag(tag: str) -> tuple[str, str]:
    """`("B", "PER")` from `"B-PER"`; `("O", "")` from `"O"`; a bare prefix gets type "_"."""
    if tag == "O":
        return "O", ""
    prefix, kind = tag[:1], tag[1:].lstrip("-") or "_"
    if prefix not in ("B", "I"):
        raise ValueError(f"Invalid tag {tag!r}: IOB1/IOB2 tags are O, B-TYPE or I-TYPE.")
    return prefix, kind


def _entities_default(tags: Sequence[str]) -> list[tuple[str, int, int]]:
    """Chunks by the conlleval rules (seqeval's default mode; IOB1 and IOB2 alike).

    A chunk begins at a B, or at an I following O or a tag of another type, and runs over
    the following I tags of its type.
    """
    chunks = []
    prev_prefix, prev_type, begin = "O", "", 0
    for i, tag in enumerate([*tags, "O"]):
        prefix, kind = _split_tag(tag)
        ends = prev_prefix != "O" and (prefix in ("B", "O") or kind != prev_type)
        if ends:
            chunks.append((prev_type, begin, i))
        if prefix == "B" or (prefix == "I" and (prev_prefix == "O" or kind != prev_type)):
            begin = i
        prev_prefix, prev_type = prefix, kind
    return chunks


def _matches(rules, prev: tuple[str, str], cur: tuple[str, str]) -> bool:
    relation = "same" if prev[1] == cur[1] else "diff"
    return (prev[0], cur[0], relation) in rules or (prev[0], cur[0], "any") in rules


def _entities_strict(tags: Sequence[str], scheme: str) -> list[tuple[str, int, int]]:
    """Chunks by seqeval's strict mode: only runs that start and end by the scheme count."""
    rules = _STRICT[scheme]
    tokens = [_split_tag(t) for t in [*tags, "O"]]
    chunks, i, prev = [], 0, ("O", "")
    while i < len(tokens):
        if _matches(rules["start"], prev, tokens[i]):
            end = i + 1
            while end < len(tokens) and _matches(rules["inside"], tokens[end - 1], tokens[end]):
                end += 1
            end = min(end, len(tokens) - 1)
            if _matches(rules["end"], tokens[end - 1], tokens[end]):
                chunks.append((tokens[i][1], i, end))
            i = end
        else:
            i += 1
        prev = tokens[i - 1]
    return chunks


def get_entities(tags: Sequence[str], scheme: str = "IOB2",
                 strict: bool = False) -> list[tuple[str, int, int]]:
    """Entities `(type, start, end)` (end exclusive) of one sentence's tags.

    Default mode (`strict=False`, seqeval's default and conlleval's): an entity is a
    maximal run of one type that begins at B or at an I after O / another type, so IOB1
    and IOB2 read alike. `strict=True` applies the scheme's rules (seqeval `mode="strict"`):
    in IOB2 an entity must begin with B (a stray I is no entity); in IOB1 a B may only
    follow a tag of its own type.
    """
    scheme = _scheme(scheme)
    return _entities_strict(tags, scheme) if strict else _entities_default(tags)


def _scheme(scheme: str) -> str:
    scheme = scheme.upper()
    if scheme not in SCHEMES:
        raise ValueError(f"Unknown tagging scheme {scheme!r}; use one of {SCHEMES}.")
    return "IOB2" if scheme == "BIO" else scheme


def _prf(correct: int, predicted: int, gold: int) -> dict[str, float]:
    precision = correct / predicted if predicted else 0.0
    recall = correct / gold if gold else 0.0
    f1 = 2 * precision * recall / (precision + recall) if precision + recall else 0.0
    return {"precision": precision, "recall": recall, "f1": f1}


def entity_f1(true_tags: Sequence, pred_tags: Sequence, scheme: str = "IOB2",
              strict: bool = False) -> dict:
    """Entity-level (exact span and type) micro precision, recall and F1.

    Args:
      true_tags, pred_tags: tags of one sentence (list of str) or of several (list of
        lists); the shapes must match.
      scheme: "IOB2" (alias "BIO") or "IOB1"; see `get_entities` for `strict`.

    Returns:
      `{"precision", "recall", "f1", "per_type": {type: {"precision", "recall", "f1",
      "support"}}}` (support = gold entities of the type). A ratio with a zero denominator
      is 0, as in seqeval.
    """
    if true_tags and isinstance(true_tags[0], str):
        true_tags, pred_tags = [true_tags], [pred_tags]
    if len(true_tags) != len(pred_tags):
        raise ValueError(f"{len(true_tags)} gold sentences but {len(pred_tags)} predicted.")
    gold, pred = set(), set()
    for k, (t, p) in enumerate(zip(true_tags, pred_tags, strict=True)):
        if len(t) != len(p):
            raise ValueError(f"sentence {k}: {len(t)} gold tags but {len(p)} predicted.")
        gold.update((k, *ent) for ent in get_entities(t, scheme, strict))
        pred.update((k, *ent) for ent in get_entities(p, scheme, strict))
    result = _prf(len(gold & pred), len(pred), len(gold))
    per_type = {}
    for kind in sorted({e[1] for e in gold | pred}):
        g = {e for e in gold if e[1] == kind}
        q = {e for e in pred if e[1] == kind}
        per_type[kind] = {**_prf(len(g & q), len(q), len(g)), "support": len(g)}
    result["per_type"] = per_type
    return result


# ---------------------------------------------------------------------------- SQuAD
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
