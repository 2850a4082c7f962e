"""`keras-bert audit DIR [--target T]`: will this SavedModel load in the target model servers?

Lists every op of the SavedModel's graphs and function library (read from `saved_model.pb`,
nothing is loaded or run) and checks it against the op registries of the target TensorFlow
Serving releases (`keras_bert.serving.op_audit`). Exit status 0 when every op is
registered, 1 when some are not (each named with the functions that use it and the
signatures that reach them), 2 when DIR is not a SavedModel or the target is unknown.
"""

from __future__ import annotations

import json
import sys


def register(subparsers) -> None:
    """Adds the `audit` subcommand."""
    from keras_bert.serving.op_audit import DEFAULT_TARGET, TARGETS

    targets = "; ".join(f"{name}: {t.description}" for name, t in TARGETS.items())
    p = subparsers.add_parser(
        "audit", help="check that a SavedModel only uses ops a TF Serving release registers",
        description=__doc__.split("\n\n", 1)[1])
    p.add_argument("saved_model", help="SavedModel directory (e.g. BASE_DIR/1), any exporter")
    p.add_argument("--target", default=DEFAULT_TARGET,
                   help=f"model servers the graph must load in (default {DEFAULT_TARGET}): "
                        f"{targets}; or comma-separated op-list files (one op per line, "
                        "their union is one release)")
    p.add_argument("--list-ops", action="store_true",
                   help="also print every op with the functions that use it")
    p.add_argument("--json", action="store_true", help="print the report as one JSON object")
    p.set_defaults(run=run)


def run(args) -> int:
    """Audits `args.saved_model`; prints the report; 0 when compatible, 1 when not."""
    from keras_bert.serving.op_audit import audit

    report = audit(args.saved_model, args.target)
    if args.json:
        result = {"saved_model": report.source, "target": report.target.name,
                  "ok": report.ok, "num_ops": len(report.ops),
                  "missing": {op: {"used_in": where, "reached_from": sorted(
                      {s for fn in where for s in report.reached_from.get(fn, [])}),
                      "hint": report.hints[op]} for op, where in report.missing.items()}}
        if args.list_ops:
            result["ops"] = report.ops
        print(json.dumps(result, indent=2))
    else:
        if args.list_ops:
            for op, where in report.ops.items():
                mark = "MISSING " if op in report.missing else ""
                print(f"{mark}{op}: {', '.join(where)}")
        stream = sys.stdout if report.ok else sys.stderr
        print(("ok: " if report.ok else "error: ") + report.message(), file=stream)
    return 0 if report.ok else 1
