"""The durations log of a test run: where the time went, from pytest's JUnit XML.

    python scripts/test_durations.py ci-logs/junit.xml                 # print the summary
    python scripts/test_durations.py ci-logs/junit.xml --markdown F    # also write it as F
    python scripts/test_durations.py ci-logs/junit.xml --record tests/durations.json

Prints the run's totals, the time per test file (setup and teardown of module fixtures
included, as JUnit XML counts them) and the slowest tests. `.ci/run` prints it after every
run; docs/runs/ci-durations-*.md are such summaries, committed with the host they ran on.
`--record` writes the seconds of the run's passed tests into the table CI's schedule reads
(`tests/support/schedule.py`), keeping the figures of the tests the run did not hold.
"""

from __future__ import annotations

import argparse
import collections
import json
import os
import sys
import xml.etree.ElementTree as ET


def read_cases(path: str) -> list[dict]:
    """The test cases of a JUnit XML file: nodeid-like name, file, seconds and outcome."""
    cases = []
    for case in ET.parse(path).getroot().iter("testcase"):
        outcome = "passed"
        for child in case:
            if child.tag in ("failure", "error", "skipped"):
                outcome = {"failure": "failed", "error": "error", "skipped": "skipped"}[child.tag]
        module = case.get("classname", "")
        file = module.split(".")
        # classname is `tests.pkg.test_mod` or `tests.pkg.test_mod.TestClass`
        while file and not file[-1].startswith("test_"):
            file.pop()
        properties = {p.get("name"): p.get("value") for p in case.iter("property")}
        classes = module.split(".")[len(file):]
        cases.append({"file": "/".join(file) + ".py" if file else module,
                      "nodeid": "::".join(["/".join(file) + ".py" if file else module,
                                           *classes, case.get("name", "")]),
                      "name": f"{module}::{case.get('name')}",
                      "seconds": float(case.get("time", 0) or 0), "outcome": outcome,
                      # tests/support/resource_log.py: CPU of the test's process and its children
                      "cpu": float(properties.get("cpu_s", "nan")),
                      "child_cpu": float(properties.get("child_cpu_s", "nan")),
                      "threads": int(properties.get("threads", 0)),
                      # tests/support/schedule.py: pick_exhaustive
                      "ci_pick": properties.get("ci_pick")})
    return cases


def summary(cases: list[dict], slowest: int = 40) -> str:
    """A Markdown summary: totals, per-file times, the slowest tests."""
    if not cases:
        raise ValueError("the JUnit XML holds no test case")
    total = sum(c["seconds"] for c in cases)
    outcomes = collections.Counter(c["outcome"] for c in cases)
    per_file = collections.defaultdict(lambda: [0.0, 0])
    for c in cases:
        per_file[c["file"]][0] += c["seconds"]
        per_file[c["file"]][1] += 1
    lines = [f"{len(cases)} tests, {total:.0f} s of test time in all "
             f"({', '.join(f'{n} {k}' for k, n in sorted(outcomes.items()))}); "
             f"over 30 s: {sum(c['seconds'] > 30 for c in cases)}", "",
             "| file | tests | seconds | share |", "| --- | ---: | ---: | ---: |"]
    lines[1:1] = [f"Exhaustive pick ({c['ci_pick']}): `{c['name']}`, {c['seconds']:.1f} s, "
                  f"{c['outcome']}" for c in cases if c["ci_pick"]] + [""] * any(
                      c["ci_pick"] for c in cases)
    for file, (seconds, count) in sorted(per_file.items(), key=lambda kv: -kv[1][0]):
        share = seconds / total if total else 0.0  # instant tests: 0.0 s in all
        lines.append(f"| `{file}` | {count} | {seconds:.1f} | {share:.1%} |")
    lines += ["", f"Slowest {slowest} tests:", "", "| test | seconds |", "| --- | ---: |"]
    for c in sorted(cases, key=lambda c: -c["seconds"])[:slowest]:
        lines.append(f"| `{c['name']}` | {c['seconds']:.1f} |")
    lines += _waiting(cases, slowest // 2)
    return "\n".join(lines) + "\n"


def _waiting(cases: list[dict], count: int) -> list[str]:
    """The tests whose wall time ran furthest ahead of the CPU their process and its
    waited-for children used, and the most threads a file's tests left alive (none when
    the XML has no `tests/support/resource_log.py` properties)."""
    measured = [c for c in cases if c["cpu"] == c["cpu"]]  # not NaN
    if not measured:
        return []
    lines = ["", f"Wall time ahead of CPU (the {count} largest gaps: waiting for a neighbour "
             "on the other core, a child not waited for, or a sleep):", "",
             "| test | seconds | CPU s | children's CPU s | threads after |",
             "| --- | ---: | ---: | ---: | ---: |"]
    for c in sorted(measured, key=lambda c: c["cpu"] + c["child_cpu"] - c["seconds"])[:count]:
        lines.append(f"| `{c['name']}` | {c['seconds']:.1f} | {c['cpu']:.1f} | "
                     f"{c['child_cpu']:.1f} | {c['threads']} |")
    threads = collections.defaultdict(int)
    for c in measured:
        threads[c["file"]] = max(threads[c["file"]], c["threads"])
    top = sorted(threads.items(), key=lambda kv: -kv[1])[:10]
    lines += ["", "Most threads alive after a file's tests: " + ", ".join(
        f"`{file}` {n}" for file, n in top)]
    return lines


def record(cases: list[dict], path: str) -> tuple[int, int]:
    """Writes the seconds of each passed case into the JSON table at `path` (test id ->
    seconds, one a line), over the figures it held; returns (recorded, new)."""
    table = {}
    if os.path.exists(path):
        with open(path, encoding="utf-8") as f:
            table = json.load(f)
    passed = {c["nodeid"]: round(c["seconds"], 1) for c in cases if c["outcome"] == "passed"}
    new = len(set(passed) - set(table))
    table.update(passed)
    with open(path, "w", encoding="utf-8") as f:
        f.write(json.dumps(table, indent=0, sort_keys=True) + "\n")
    return len(passed), new


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("junit_xml")
    parser.add_argument("--slowest", type=int, default=40)
    parser.add_argument("--markdown", help="also write the summary to this file")
    parser.add_argument("--record", metavar="JSON",
                        help="write the passed tests' seconds into this table "
                             "(tests/durations.json: CI's schedule reads it)")
    args = parser.parse_args(argv)
    cases = read_cases(args.junit_xml)
    if args.record:
        recorded, new = record(cases, args.record)
        print(f"{args.record}: {recorded} tests recorded, {new} of them new")
        return 0
    text = summary(cases, args.slowest)
    sys.stdout.write(text)
    if args.markdown:
        with open(args.markdown, "w", encoding="utf-8") as f:
            f.write(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
