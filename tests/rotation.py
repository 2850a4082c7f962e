"""CI's rotation: the runs too slow for every landing, each in one slot of a 12-landing cycle.

What rotates repeats, at full scale, with real weights, in another runtime or through a real
signal, what other tests check in every run (docs/testing.md lists what each run keeps).
`.ci/run` exports the commit count as `KERAS_BERT_ROTATION`; a share runs when that number
modulo its `every` equals its slot, so each runs once in `every` landings; a local run (no
`KERAS_BERT_ROTATION`) runs them all.

`SHARES` is the one home of the cycle: each share's period, slot and its seconds of test time
in CI's durations logs (the figures' sources are in the comments). The periods divide
`CYCLE`, so a landing's load is the sum of the shares of its slot, and
`tests/test_suite_order.py` keeps every landing's sum under `LANDING_BUDGET_S`. Small
alternations of parametrized cases (`rotating(every=2)` by position: the kill-and-resume
kinds, the accumulating optimizers, the dense all-reduce controls) are not shares.
"""

from __future__ import annotations

from typing import NamedTuple

import pytest


class Share(NamedTuple):
    every: int  # runs once in `every` landings
    slot: int  # ... in the landings whose commit count modulo `every` is `slot`
    seconds: int  # its test time in CI's durations logs (summed over its tests)


CYCLE = 12
LANDING_BUDGET_S = 520  # the rotating test time one landing may carry (docs/testing.md)

# Figures: sessions 19-21's durations logs (docs/runs/ci-durations-session2*.md, CI's own),
# the largest seen; "~" where no logged run has the share alone (an estimate from the
# README's whole run, 870-890 s for the four parts in session 18, or from a neighbour).
SHARES: dict[str, Share] = {
    # The older environments, one per landing (each builds its virtual environment).
    "env:tf-2.12.1": Share(3, 0, 133),  # matrix share 110 + runtime_check's export 23
    "env:oldest": Share(3, 1, 200),  # tests/test_oldest_supported.py: 173-221
    "env:tf-2.20.0": Share(3, 2, 168),  # matrix share 111 + Kaggle wheelhouse 57
    # Real processes and the examples without learning checks, once in six landings.
    "kill:finetune-twice": Share(6, 0, 88),
    "example:export_and_serve": Share(6, 1, 44),
    "kill:pretrain-corpus": Share(6, 2, 70),
    "example:pretrain_from_scratch": Share(6, 3, 38),
    "example:feature_extraction": Share(6, 3, 40),  # 30-39
    "notebook": Share(6, 4, 89),  # 65-89
    "kill:pretrain-tfrecords": Share(6, 5, 77),
    # The real-MiniLM learning runs (README parts, examples) and the benchmarks' --quick
    # runs, once in twelve landings.
    "readme:squad_serve": Share(12, 0, 237),
    "bench:tokenizer_speed.py": Share(12, 0, 30),  # ~
    "bench:pretrain_accelerator.py": Share(12, 1, 89),
    "bench:encoder_forward.py": Share(12, 1, 29),
    "example:multilabel": Share(12, 2, 217),
    "bench:preprocessing_cost.py": Share(12, 2, 33),
    "example:squad": Share(12, 3, 275),
    "bench:beam_pipeline.py": Share(12, 4, 164),
    "example:text_classifier": Share(12, 5, 143),
    "example:distributed": Share(12, 5, 70),
    "bench:serving_profile.py": Share(12, 5, 34),
    "readme:tag_multilabel": Share(12, 6, 220),  # ~
    "bench:pretraining_pipeline.py": Share(12, 6, 30),  # ~
    "example:rotten_tomatoes_then_distill": Share(12, 7, 174),
    "bench:text_classifier_fit.py": Share(12, 7, 71),
    "readme:convert_pretrain": Share(12, 8, 200),  # ~
    "bench:finetune_step.py": Share(12, 8, 44),
    "readme:classify_serve": Share(12, 9, 220),  # ~
    "readme:python_block": Share(12, 9, 30),  # ~
    "bench:serve_abuse.py": Share(12, 9, 29),
    "bench:serving_latency.py": Share(12, 10, 127),
    "example:ner": Share(12, 11, 127),
    "example:text_regressor": Share(12, 11, 60),  # ~
    "bench:pretrain_step.py": Share(12, 11, 69),
}


def share(name: str) -> pytest.MarkDecorator:
    """The `rotating` mark of the share `name` (`SHARES`)."""
    every, slot, _ = SHARES[name]
    return pytest.mark.rotating(every=every, slot=slot, share=name)


def landing_load(turn: int) -> tuple[int, list[str]]:
    """(seconds, names): the shares that run in the landing numbered `turn`."""
    names = [name for name, s in SHARES.items() if turn % s.every == s.slot]
    return sum(SHARES[name].seconds for name in names), names


def rotation_share(items, rotation: str | None) -> tuple[list, list]:
    """`(kept, deselected)`. With `rotation` (an integer: `.ci/run` passes the commit count
    as `KERAS_BERT_ROTATION`), a test marked `rotating(every=N)` runs when its slot is
    `rotation` modulo `N`, so that it runs once in `N` landings; without it (any local run),
    every test runs. The slot is the mark's `slot`, else the case's position among the
    cases of its parametrized test."""
    if rotation is None:
        return list(items), []
    turn = int(rotation)
    kept, dropped, seen = [], [], {}
    for item in items:
        mark = item.get_closest_marker("rotating")
        if mark is None:
            kept.append(item)
            continue
        group = item.nodeid.split("[", 1)[0]
        position = seen[group] = seen.get(group, -1) + 1
        slot, every = mark.kwargs.get("slot", position), mark.kwargs["every"]
        (kept if slot % every == turn % every else dropped).append(item)
    return kept, dropped


def pick_exhaustive(items, rotation: str | None):
    """Marks `ci_pick` (and records it in the durations log) the exhaustive test at position
    `rotation` modulo their number, so that CI's run (`-m "not exhaustive or ci_pick"`,
    `.ci/run`) carries one, each once in as many landings as there are; None without
    `rotation` or when the collection holds none."""
    exhaustive = [item for item in items if item.get_closest_marker("exhaustive")]
    if rotation is None or not exhaustive:
        return None
    item = exhaustive[int(rotation) % len(exhaustive)]
    item.add_marker(pytest.mark.ci_pick)
    item.user_properties.append(("ci_pick", f"exhaustive {exhaustive.index(item) + 1} of "
                                            f"{len(exhaustive)}"))
    return item
