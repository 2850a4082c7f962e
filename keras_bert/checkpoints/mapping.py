"""Mapping tables: canonical variable names <-> a checkpoint format's names, and the safe load.

A table is a list of `Rule(ours, theirs, transpose)` where both names may hold `{i}` for the
layer index. `assign_checked` validates every variable (missing, extra, wrong shape) before it
assigns any, so a failed import leaves the model untouched.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Iterable, Mapping

import numpy as np


class CheckpointMismatchError(ValueError):
    """A checkpoint does not fit the model: names the missing, extra or mis-shaped variables."""


@dataclasses.dataclass(frozen=True)
class Rule:
    """One line of a mapping table; `transpose` when the format stores kernels as `[out, in]`."""

    ours: str
    theirs: str
    transpose: bool = False

    def _pattern(self, name: str) -> re.Pattern:
        return re.compile(re.escape(name).replace(r"\{i\}", r"(?P<i>\d+)") + "$")

    def to_theirs(self, ours: str) -> str | None:
        m = self._pattern(self.ours).match(ours)
        return None if m is None else self.theirs.format(**m.groupdict())

    def to_ours(self, theirs: str) -> str | None:
        m = self._pattern(self.theirs).match(theirs)
        return None if m is None else self.ours.format(**m.groupdict())


def _find(table: Iterable[Rule], name: str, direction: str) -> tuple[str, Rule] | None:
    for rule in table:
        mapped = getattr(rule, direction)(name)
        if mapped is not None:
            return mapped, rule
    return None


def to_format(table: list[Rule], ours: Mapping[str, np.ndarray]) -> dict[str, np.ndarray]:
    """Renames (and transposes) canonical arrays to a format's names."""
    out = {}
    for name, value in ours.items():
        found = _find(table, name, "to_theirs")
        if found is None:
            raise CheckpointMismatchError(f"No mapping for our variable {name!r}")
        theirs, rule = found
        value = np.asarray(value)
        out[theirs] = value.T if rule.transpose else value
    return out


def from_format(table: list[Rule], theirs: Mapping[str, np.ndarray],
                ignore: Iterable[str] = ()) -> tuple[dict[str, np.ndarray], list[str], dict]:
    """Renames a format's arrays to canonical names.

    Returns `(arrays, ignored, origin)`: names matching a regex in `ignore` are skipped (and
    listed); any other name without a rule raises `CheckpointMismatchError` naming it;
    `origin` maps each canonical name back to the format's name (for error messages).
    """
    ignore_res = [re.compile(p) for p in ignore]
    out, ignored, unknown, origin = {}, [], [], {}
    for name in sorted(theirs):
        found = _find(table, name, "to_ours")
        if found is None:
            (ignored if any(r.search(name) for r in ignore_res) else unknown).append(name)
            continue
        ours, rule = found
        value = np.asarray(theirs[name])
        out[ours] = value.T if rule.transpose else value
        origin[ours] = name
    if unknown:
        raise CheckpointMismatchError(
            f"{len(unknown)} checkpoint variable(s) match nothing in the model: "
            f"{_listing(unknown)}")
    return out, ignored, origin


def assign_checked(targets: Mapping[str, object], arrays: Mapping[str, np.ndarray],
                   source: str = "checkpoint", optional: Iterable[str] = (),
                   origin: Mapping[str, str] | None = None) -> list[str]:
    """Assigns `arrays` to the variables `targets` (same keys) after validating all of them.

    Variables whose canonical name matches a regex in `optional` may be absent from `arrays`
    (they keep their initial values); their names are returned. `origin` (canonical -> the
    format's name) makes error messages show both names.
    """
    origin = origin or {}

    def named(name: str) -> str:
        return f"{name} ({origin[name]})" if name in origin else name

    optional_res = [re.compile(p) for p in optional]
    absent = sorted(set(targets) - set(arrays))
    kept = [n for n in absent if any(r.search(n) for r in optional_res)]
    missing = [n for n in absent if n not in kept]
    extra = [named(n) for n in sorted(set(arrays) - set(targets))]
    bad_shape = [f"{named(name)}: model {tuple(targets[name].shape)} vs {source} "
                 f"{tuple(np.shape(arrays[name]))}"
                 for name in sorted(set(targets) & set(arrays))
                 if tuple(targets[name].shape) != tuple(np.shape(arrays[name]))]
    problems = []
    if missing:
        problems.append(f"missing from the {source}: {_listing(missing)}")
    if extra:
        problems.append(f"in the {source} but not in the model: {_listing(extra)}")
    if bad_shape:
        problems.append(f"wrong shape: {_listing(bad_shape)}")
    if problems:
        raise CheckpointMismatchError("Cannot load weights; " + "; ".join(problems))
    for name, variable in targets.items():
        if name in arrays:
            variable.assign(np.asarray(arrays[name], dtype=variable.dtype))
    return kept


def _listing(names: list[str], limit: int = 10) -> str:
    shown = ", ".join(names[:limit])
    return shown + (f" (and {len(names) - limit} more)" if len(names) > limit else "")
