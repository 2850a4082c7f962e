"""CI's schedule: every test not marked `slow` in every landing, each `slow` test once in a
cycle of `CYCLE` landings, spread by its recorded seconds.

The rule for a test's author: mark a test over ~30 s `slow`. Nothing else: CI spreads the slow
tests by their seconds in `tests/durations.json` (which `scripts/test_durations.py --record`
regenerates from CI's JUnit log; a test not recorded yet counts `DEFAULT_SLOW_S`). A test that
builds one of the older environments names it, `slow(env="tf-2.12.1")`, so that the tests of
an environment share one landing and no landing builds two (`tests/support/ci_rules.py:
ENV_PYTHONS` says on which Pythons each has wheels).

How (`plan`): a file's slow tests go together, since they share its module fixtures, unless
they sum past `UNIT_MAX_S`; then each goes alone. An environment's tests go together. Longest
first, each such unit goes to the least loaded landing that can run it: one whose Python runs
every test of the unit (`ci_rules.python_bound`: torch is installed on the development Python
only) and, for an environment, one that builds no other. `.ci/run` exports the commit count as
`KERAS_BERT_ROTATION`; that run keeps the slow tests of landing `count % CYCLE`. Without it
(any local run) nothing is dropped. The plan is computed over the whole collection, before a
Python leaves tests out, so that every landing computes the same plan.

CI's Python rotates in the same cycle (`landing_python`). `.ci/run` asks this module which
(`python tests/support/schedule.py python COUNT`, before any install: pytest is imported
only where a run needs it). `python tests/support/schedule.py plan` prints every landing.
"""

from __future__ import annotations

import json
import os
import sys
from dataclasses import dataclass, field

# 16, not 12: each landing's slow tests at ~565 s of recorded time rather than ~740, which
# kept CI's own runs at 31-32 min with the README's tier (its target is under 30).
CYCLE = 16
DEVELOPMENT_PYTHON = "3.11"
# The other supported Pythons, each in one landing of the cycle (setup.cfg's classifiers).
PYTHON_SLOTS = {"3.10": 4, "3.12": 5, "3.13": 11}
# The slow tests' seconds one landing may carry: with the README's tier (830-1,000 s of test
# time) and the exhaustive pick (at most ~90 s), pytest's 2 workers take ~51% of the sum:
# ~17 min, ~20 with the install, on the AMD EPYC guests of CI's durations logs; under CI's 30
# on a machine 1.5x slower (docs/testing.md).
LANDING_BUDGET_S = 900
DEFAULT_SLOW_S = 60.0  # a slow test not in tests/durations.json yet: twice the slow bar
UNIT_MAX_S = 400.0  # a file's slow tests over this go to landings one by one
DURATIONS = os.path.join("tests", "durations.json")


def landing_python(turn: int) -> str:
    """The Python (`3.X`) of CI's run in the landing numbered `turn`."""
    return next((python for python, slot in PYTHON_SLOTS.items() if turn % CYCLE == slot),
                DEVELOPMENT_PYTHON)


def read_durations(root: str) -> dict[str, float]:
    """`tests/durations.json` under `root`: test id -> seconds (empty if there is none)."""
    path = os.path.join(root, DURATIONS)
    if not os.path.exists(path):
        return {}
    with open(path, encoding="utf-8") as f:
        return json.load(f)


def spread(item) -> bool:
    """Whether CI spreads `item` over the cycle: marked `slow`, not `exhaustive` (CI runs
    one of those per landing, `pick_exhaustive`)."""
    return (item.get_closest_marker("slow") is not None
            and item.get_closest_marker("exhaustive") is None)


def environment(item) -> str | None:
    """The older environment `item` builds (`slow(env=...)`), or None."""
    return next((m.kwargs["env"] for m in item.iter_markers("slow") if "env" in m.kwargs), None)


@dataclass
class Unit:
    """Slow tests that CI runs in one landing."""

    name: str  # "env:NAME", a file, or a test id
    items: list = field(default_factory=list)
    seconds: float = 0.0
    env: str | None = None


def units(items, durations: dict[str, float]) -> list[Unit]:
    """The slow tests of `items` grouped as `plan` places them, each with its seconds (its
    figure in `durations`, else `DEFAULT_SLOW_S`)."""
    groups: dict[str, Unit] = {}
    for item in filter(spread, items):
        env = environment(item)
        name = f"env:{env}" if env else item.nodeid.split("::")[0]
        unit = groups.setdefault(name, Unit(name, env=env))
        unit.items.append(item)
        unit.seconds += durations.get(item.nodeid, DEFAULT_SLOW_S)
    found = []
    for unit in groups.values():
        if unit.env is None and unit.seconds > UNIT_MAX_S and len(unit.items) > 1:
            found += [Unit(i.nodeid, [i], durations.get(i.nodeid, DEFAULT_SLOW_S))
                      for i in unit.items]
        else:
            found.append(unit)
    return found


def plan(found: list[Unit]) -> list[list[Unit]]:
    """The units of each landing of the cycle: longest first, each to the least loaded
    landing whose Python runs all its tests and that builds no other environment."""
    from tests.support.ci_rules import python_bound

    landings: list[list[Unit]] = [[] for _ in range(CYCLE)]
    loads = [0.0] * CYCLE
    for unit in sorted(found, key=lambda u: (-u.seconds, u.name)):
        allowed = [turn for turn in range(CYCLE)
                   if not any(python_bound(i, landing_python(turn)) for i in unit.items)
                   and not (unit.env and any(u.env for u in landings[turn]))]
        if not allowed:
            raise ValueError(f"no landing of the cycle can run {unit.name}: its tests need "
                             "another Python, or every landing builds another environment")
        turn = min(allowed, key=lambda t: (loads[t], t))
        landings[turn].append(unit)
        loads[turn] += unit.seconds
    return landings


def landing_line(landings: list[list[Unit]], turn: int, durations: dict[str, float]) -> str:
    """What the report says about landing `turn`'s slow tests."""
    units_here = landings[turn % CYCLE]
    tests = [i for u in units_here for i in u.items]
    guessed = sum(i.nodeid not in durations for i in tests)
    loads = [sum(u.seconds for u in landing) for landing in landings]
    return (f"CI landing {turn} (slot {turn % CYCLE} of {CYCLE}, Python "
            f"{landing_python(turn)}): {len(tests)} slow tests, "
            f"{loads[turn % CYCLE]:.0f} s by {DURATIONS} ({guessed} not recorded, counted "
            f"{DEFAULT_SLOW_S:.0f} s each); the cycle's landings {min(loads):.0f}-"
            f"{max(loads):.0f} s, budget {LANDING_BUDGET_S} s")


def select(config, items) -> list[list[Unit]] | None:
    """The collection's CI rules, before `-m` deselects (`tests/conftest.py`): leaves out
    what this Python cannot run (`ci_rules.leave_out_for_python`), marks this landing's
    exhaustive test, and with `KERAS_BERT_ROTATION` keeps this landing's slow tests only.
    Returns the cycle's plan (None without a rotation number)."""
    from tests.support import ci_rules

    rotation = os.environ.get("KERAS_BERT_ROTATION")
    durations = read_durations(str(config.rootpath))
    landings = plan(units(items, durations)) if rotation is not None else None
    ci_rules.leave_out_for_python(config, items)
    pick_exhaustive(items, rotation)
    if landings is None:
        return None
    here = {i.nodeid for u in landings[int(rotation) % CYCLE] for i in u.items}
    dropped = [i for i in items if spread(i) and i.nodeid not in here]
    if dropped:
        config.hook.pytest_deselected(items=dropped)
        items[:] = [i for i in items if not spread(i) or i.nodeid in here]
    ci_rules.report(config, landing_line(landings, int(rotation), durations))
    return landings


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


# The files that mark a test `needs_torch` (they import torch and transformers: ~7 s of a
# process' CPU on a Zen 5, before any test of theirs runs) are one unit of xdist's work, so
# that one worker pays for the import and the other does not (`work_unit`).
TORCH_UNIT = "the files of needs_torch tests"


def work_unit(nodeid: str, root: str, marks_torch: dict[str, bool]) -> str:
    """The unit of xdist's work (`--dist loadfile`) `nodeid` belongs to: its file, or
    `TORCH_UNIT` for a file whose source marks a test `needs_torch` (`marks_torch`
    caches the answer per file; xdist's controller, which asks, collects nothing)."""
    file = nodeid.split("::")[0]
    if file not in marks_torch:
        try:
            with open(os.path.join(root, file), encoding="utf-8") as f:
                marks_torch[file] = "mark.needs_torch" in f.read()
        except OSError:
            marks_torch[file] = False
    return TORCH_UNIT if marks_torch[file] else file


def longest_files_first(items, durations: dict[str, float], root: str) -> None:
    """Sorts the run's units of work (`work_unit`: a file, or the files of needs_torch
    tests) by their recorded seconds, longest first, so that two xdist workers (`--dist
    loadfile`) end together; a unit's tests keep their order."""
    marks_torch: dict[str, bool] = {}
    unit = {item.nodeid: work_unit(item.nodeid, root, marks_torch) for item in items}
    per_unit: dict[str, float] = {}
    for item in items:
        per_unit[unit[item.nodeid]] = per_unit.get(unit[item.nodeid], 0.0) + durations.get(
            item.nodeid, DEFAULT_SLOW_S if spread(item) else 0.0)
    items.sort(key=lambda item: -per_unit[unit[item.nodeid]])


def collect_only(args: list[str], plugin) -> None:
    """`pytest --collect-only ARGS` in this process, `plugin`'s hooks taking what they need
    and the listing swallowed; a collection that fails raises with the end of its output.
    In a process that collected the suite already (an xdist worker), the test modules are
    not imported again, so this costs about a second, not a fresh TensorFlow process."""
    import contextlib
    import io

    import pytest

    with contextlib.redirect_stdout(io.StringIO()) as out:
        code = pytest.main(["--collect-only", "-q", "-p", "no:cacheprovider", "-p",
                            "no:xdist", *args], plugins=[plugin])
    if code != 0:
        raise RuntimeError(f"the collection of {' '.join(args)} failed ({code}):\n"
                           + out.getvalue()[-3000:])


def plan_rows() -> list[dict]:
    """Collects the suite in this process (from the repository's root, without a landing
    number, so that no slow test is dropped) and returns each landing of its plan: its
    number, Python, seconds, units and the tests its Python cannot run. In a process that
    collected the suite already (an xdist worker), the test modules are not imported again."""
    import pytest

    from tests.support.ci_rules import python_bound

    class Capture:
        landings = None

        @pytest.hookimpl(wrapper=True, tryfirst=True)  # before a Python leaves any out
        def pytest_collection_modifyitems(self, config, items):
            Capture.landings = plan(units(items, read_durations(str(config.rootpath))))
            return (yield)

    rotation = os.environ.pop("KERAS_BERT_ROTATION", None)  # plan() over every test
    try:
        collect_only(["-m", ""], Capture())
    finally:
        if rotation is not None:
            os.environ["KERAS_BERT_ROTATION"] = rotation
    return [{"landing": turn, "python": landing_python(turn),
             "seconds": round(sum(u.seconds for u in landing), 1),
             "units": {u.name: [i.nodeid for i in u.items] for u in landing},
             # the landing's tests its Python cannot run: none, if the plan is right
             "left_out": [i.nodeid for u in landing for i in u.items
                          if python_bound(i, landing_python(turn))]}
            for turn, landing in enumerate(Capture.landings)]


def _print_plan(as_json: bool) -> int:
    """Prints each landing of the suite's plan (`plan_rows`)."""
    rows = plan_rows()
    if as_json:
        print(json.dumps(rows))
        return 0
    for row in rows:
        print(f"landing {row['landing']:2d}  Python {row['python']}  {row['seconds']:6.0f} s  "
              + ", ".join(f"{name} ({len(ids)})" for name, ids in row["units"].items()))
    return 0


if __name__ == "__main__":
    # `python tests/support/schedule.py python COUNT`: that landing's Python;
    # `python tests/support/schedule.py plan [--json]`: the cycle's landings.
    if sys.argv[1:2] == ["python"] and len(sys.argv) == 3:
        print(landing_python(int(sys.argv[2])))
    elif sys.argv[1:2] == ["plan"]:
        sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.dirname(
            os.path.abspath(__file__)))))
        sys.exit(_print_plan("--json" in sys.argv))
    else:
        raise SystemExit("usage: python tests/support/schedule.py python COUNT | plan [--json]")
