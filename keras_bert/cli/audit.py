"""`keras-bert audit DIR [--target T] [--runtime PYTHON ...]`: will this SavedModel load in
the target model servers?

Two checks. The op-name audit lists every op of the SavedModel's graphs and function library
(read from `saved_model.pb`, nothing is loaded or run) and looks each NAME up in the op
registries of the target TensorFlow Serving releases (`keras_bert.export.op_audit`); it
cannot see kernels missing for a dtype or device, nor variables that do not restore. Each
`--runtime PYTHON` (an interpreter with `tensorflow` and `tensorflow-text`, e.g. TF 2.20.0 +
TF Text 2.20.0, what TF Serving 2.20 links) then loads the export the way TF Serving does
(Session, SaverDef restore, `signature_def` tensors, TF Text as kernel libraries) and runs
every signature once (`keras_bert.export.runtime_check`), naming ops without a kernel
there. Exit status 0 when everything passes, 1 when something does not, 2 when DIR is not
a SavedModel or the target is unknown.
"""

from __future__ import annotations

import dataclasses
import json
import sys


def register(subparsers) -> None:
    """Adds the `audit` subcommand."""
    from keras_bert.export.op_audit import DEFAULT_TARGET, TARGETS

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
    p.add_argument("--runtime", action="append", default=[], metavar="PYTHON",
                   help="also load and run the export with this Python interpreter's "
                        "TensorFlow, as TF Serving loads it (repeatable)")
    p.add_argument("--json", action="store_true", help="print the report as one JSON object")
    p.set_defaults(run=run)


def run(args) -> int:
    """Audits `args.saved_model` (op names, then each runtime); prints the reports; 0 when
    every check passes, 1 when not."""
    from keras_bert.export.op_audit import audit
    from keras_bert.export.runtime_check import check_in_runtime

    report = audit(args.saved_model, args.target)
    runtimes = [check_in_runtime(args.saved_model, python) for python in args.runtime]
    ok = report.ok and all(r.ok for r in runtimes)
    if args.json:
        result = {"saved_model": report.source, "target": report.target.name,
                  "ok": report.ok, "num_ops": len(report.ops),
                  "missing": {op: {"used_in": where, "reached_from": sorted(
                      {s for fn in where for s in report.reached_from.get(fn, [])}),
                      "hint": report.hints[op]} for op, where in report.missing.items()}}
        if args.list_ops:
            result["ops"] = report.ops
        result["runtimes"] = [dataclasses.asdict(r) | {"ok": r.ok} for r in runtimes]
        result["ok"] = ok
        print(json.dumps(result, indent=2))
    else:
        if args.list_ops:
            for op, where in report.ops.items():
                mark = "MISSING " if op in report.missing else ""
                print(f"{mark}{op}: {', '.join(where)}")
        stream = sys.stdout if report.ok else sys.stderr
        print(("ok: " if report.ok else "error: ") + report.message(), file=stream)
        for runtime in runtimes:
            stream = sys.stdout if runtime.ok else sys.stderr
            print(("ok: " if runtime.ok else "error: ") + runtime.message(), file=stream)
    return 0 if ok else 1
