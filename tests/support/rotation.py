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

CI's Python rotates in the same cycle (`landing_python`): the development Python, the only one
with torch's CPU wheel and the older environments' pinned sets, in most landings, and each
other supported Python in a slot whose shares all run there. `.ci/run` asks this module which
(`python tests/support/rotation.py python COUNT`), so it imports pytest only where marks are made.
"""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING, NamedTuple

if TYPE_CHECKING:
    import pytest


class Share(NamedTuple):
    every: int  # runs once in `every` landings
    slot: int  # ... in the landings whose commit count modulo `every` is `slot`
    seconds: int  # its test time in CI's durations logs (summed over its tests)


CYCLE = 12
LANDING_BUDGET_S = 560  # the rotating test time one landing may carry (docs/testing.md)

# Seconds: the largest figure seen for the share in CI's durations logs (docs/runs/
# ci-durations-*.md), a local `scripts/test.sh --full` run and a CI-tier run of slot 2
# (both 2026-11-27, docs/runs.md). The shares are spread so that every landing carries
# 509-540 s: a CI run of slot 2 with 761 s of shares took 1,728 s in all (2026-11-27).
SHARES: dict[str, Share] = {
    # The older environments (each builds its virtual environment; at most one per landing):
    # TF Serving 2.13-2.19's TF Text runtime once in three landings, TF 2.20.0 (the Kaggle
    # image) and the oldest supported versions once in six, Model Garden's environment
    # (tf-models-official 2.20.0) in slot 10, the only one without another environment or
    # another Python's turn.
    "env:tf-2.12.1": Share(3, 0, 110),
    "env:tf-2.20.0": Share(6, 1, 345),
    "env:oldest": Share(6, 2, 268),
    "env:tf-models-2.20.0": Share(12, 10, 180),
    # Once in twelve landings, by slot: the real-MiniLM runs (the documentation's commands in
    # four parts, the examples' learning runs, bf16/fp16 exports, hub ids, phases 1 + 2,
    # long documents, LiteRT), real processes killed and resumed, the examples without a
    # learning check, the notebook, and the benchmarks' --quick runs. The benchmarks that need
    # torch are not in slots 4, 5 and 11 (other Pythons: landing_python).
    "example:squad": Share(12, 0, 275),
    "notebook": Share(12, 0, 89),
    "example:export_and_serve": Share(12, 0, 44),
    "longdoc:minilm": Share(12, 1, 116),
    "bench:litert_latency.py": Share(12, 1, 45),
    "bench:serve_abuse.py": Share(12, 1, 30),
    "example:rotten_tomatoes_then_distill": Share(12, 2, 174),
    "bench:pretrain_step.py": Share(12, 2, 69),
    "readme:squad_serve": Share(12, 3, 237),
    "readme:python_block": Share(12, 3, 90),
    "example:distributed": Share(12, 3, 70),
    "bench:tokenizer_speed.py": Share(12, 3, 30),
    "readme:convert_pretrain": Share(12, 4, 390),
    "kill:finetune-twice": Share(12, 4, 88),
    "example:feature_extraction": Share(12, 4, 40),
    "readme:classify_serve": Share(12, 5, 300),
    "example:text_classifier": Share(12, 5, 143),
    "hubid:minilm": Share(12, 5, 65),
    "bench:client_codec.py": Share(12, 5, 15),
    "example:multilabel": Share(12, 6, 217),
    "phases": Share(12, 6, 116),
    "bench:long_document_defaults.py": Share(12, 6, 57),
    "bench:preprocessing_cost.py": Share(12, 6, 39),
    "litert:minilm": Share(12, 7, 102),
    "bench:finetune_step.py": Share(12, 7, 52),
    "bench:long_documents.py": Share(12, 7, 40),
    "bench:serving_latency.py": Share(12, 8, 153),
    "kill:pretrain-tfrecords": Share(12, 11, 77),
    "bench:encoder_forward.py": Share(12, 8, 42),
    "bench:beam_pipeline.py": Share(12, 9, 208),
    "precision:minilm": Share(12, 9, 121),
    "kill:pretrain-corpus": Share(12, 9, 70),
    "example:text_regressor": Share(12, 10, 183),
    "bench:accelerator.py": Share(12, 10, 89),
    "bench:serving_profile.py": Share(12, 10, 50),
    "example:pretrain_from_scratch": Share(12, 10, 38),
    "readme:tag_multilabel": Share(12, 11, 300),
    "example:ner": Share(12, 11, 133),
    "bench:text_classifier_fit.py": Share(12, 8, 71),
    "bench:pretraining_pipeline.py": Share(12, 11, 30),
}


# The shares that run on some Pythons only: the older environments install sets pinned with
# wheels for the development Python alone (PyPI, checked on 2026-11-27). Elsewhere their
# tests are left out, and say so (tests/support/ci_rules.py).
SHARE_PYTHONS: dict[str, tuple[tuple[str, ...], str]] = {
    "env:tf-2.12.1": (("3.11",), "TF 2.12.1, TF Text 2.12.1 and NumPy 1.24.3 have no wheels "
                                 "past Python 3.11, the runtime's pinned Markdown 3.11.3 none "
                                 "before it (tests/export/runtimes/tensorflow-2.12.1.txt)"),
    "env:tf-2.20.0": (("3.11",), "the Kaggle wheelhouse is built for the image's CPython 3.11; "
                                 "the TF 2.20.0 runtime's pins start at Python 3.11 (Keras "
                                 "3.15.1, NumPy 2.4.6) and TF Text 2.20.0 has no wheel for 3.13"),
    "env:tf-models-2.20.0": (("3.11",), "tests/checkpoints/tf-models-official-2.20.0.txt is "
                                        "the set uv resolved on Python 3.11 (NumPy 2.4.6 "
                                        "starts at 3.11); it is not resolved for the others"),
    "env:oldest": (("3.11",), "constraints-oldest.txt: TF Text 2.16.1 and Matplotlib 3.7.0 have "
                              "no wheels past Python 3.11, the pinned Hypothesis none before it"),
}

# CI's Python per landing (`landing_python`): the development Python, except in these slots of
# the cycle, which carry no share bound to it (SHARE_PYTHONS, nor a test marked `needs_torch`:
# `tests/test_suite_order.py` checks both), so that every share still runs once per period.
DEVELOPMENT_PYTHON = "3.11"
PYTHON_SLOTS: dict[str, int] = {"3.10": 4, "3.12": 5, "3.13": 11}


def landing_python(turn: int) -> str:
    """The Python (`3.X`) of CI's run in the landing numbered `turn`."""
    return next((python for python, slot in PYTHON_SLOTS.items() if turn % CYCLE == slot),
                DEVELOPMENT_PYTHON)


def share(name: str) -> pytest.MarkDecorator:
    """The `rotating` mark of the share `name` (`SHARES`)."""
    import pytest

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
    import pytest

    exhaustive = [item for item in items if item.get_closest_marker("exhaustive")]
    if rotation is None or not exhaustive:
        return None
    item = exhaustive[int(rotation) % len(exhaustive)]
    item.add_marker(pytest.mark.ci_pick)
    item.user_properties.append(("ci_pick", f"exhaustive {exhaustive.index(item) + 1} of "
                                            f"{len(exhaustive)}"))
    return item


if __name__ == "__main__":  # `python tests/support/rotation.py python COUNT`: that landing's Python
    if sys.argv[1:2] != ["python"] or len(sys.argv) != 3:
        raise SystemExit("usage: python tests/support/rotation.py python COUNT")
    print(landing_python(int(sys.argv[2])))
