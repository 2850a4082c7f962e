"""`entity_f1`: entity-level precision, recall and F1 of tag sequences, as `seqeval`
computes them (IOB1 / IOB2 schemes, default and strict modes), in plain Python."""

from __future__ import annotations

from collections.abc import Sequence

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
