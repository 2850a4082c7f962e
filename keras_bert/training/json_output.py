"""Strict JSON for the files a job writes (`metrics.json`, `history.json`): NaN and
infinities become `null`, NumPy numbers plain ones."""

from __future__ import annotations

import json
import math

import numpy as np


def finite(value):
    """`value` with NaN/inf floats replaced by None, recursively (strict JSON)."""
    if isinstance(value, dict):
        return {k: finite(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [finite(v) for v in value]
    if isinstance(value, (float, np.floating)):
        return float(value) if math.isfinite(value) else None
    if isinstance(value, np.integer):
        return int(value)
    return value


def write_json(path: str, value) -> None:
    """Writes `value` as indented strict JSON."""
    with open(path, "w", encoding="utf-8") as f:
        json.dump(finite(value), f, indent=2)
        f.write("\n")


__all__ = ["finite", "write_json"]
