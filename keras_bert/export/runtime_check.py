"""Runtime check: load a SavedModel in a real TensorFlow runtime, the way TF Serving does.

The op audit (`op_audit.py`) compares op NAMES with the registries of TF Serving releases.
It cannot see a kernel missing for an op's dtype or device ("No OpKernel was registered to
support Op ..."), nor variables the SaverDef does not restore ("Could not find variable
..."): only loading and running the graph shows those. `check_in_runtime(export, python)`
runs `session_bundle.py` (which imports only TensorFlow) with another interpreter, e.g. a
virtual environment holding `tensorflow==2.20.0` and `tensorflow-text==2.20.0`, the
runtime TF Serving 2.20 links: the export is restored through the Session loader (SaverDef
restore, `signature_def` tensors, TF Text as kernel libraries) and every signature runs on
inputs made from its `SignatureDef`.
"""

from __future__ import annotations

import dataclasses
import json
import os
import re
import subprocess
import sys

from keras_bert.environment import user_environment

SESSION_BUNDLE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "session_bundle.py")
_OP_PATTERNS = (re.compile(r"No OpKernel was registered to support Op '([^']+)'"),
                re.compile(r"Op type not registered '([^']+)'"))


@dataclasses.dataclass
class RuntimeReport:
    """What one runtime made of an export.

    Attributes:
      python: the interpreter that ran it.
      tensorflow: its TensorFlow version ("" when the run itself failed).
      load_error: why the Session loader failed, or None.
      signature_errors: signature -> error, for the signatures that failed to run.
      missing_ops: ops with no kernel (or no registration) in this runtime -> the
        signatures (or "load") where that showed.
    """

    python: str
    tensorflow: str
    load_error: str | None
    signature_errors: dict[str, str]
    missing_ops: dict[str, list[str]]

    @property
    def ok(self) -> bool:
        """True when the export loaded and every signature ran."""
        return self.load_error is None and not self.signature_errors

    def message(self) -> str:
        """One line, plus one per problem."""
        where = f"TensorFlow {self.tensorflow or '?'} ({self.python})"
        if self.ok:
            return f"loads and runs every signature in {where} through the Session loader"
        lines = [f"fails in {where}:"]
        if self.load_error:
            lines.append(f"  load: {_first_line(self.load_error)}")
        for name, error in sorted(self.signature_errors.items()):
            lines.append(f"  signature {name}: {_first_line(error)}")
        for op, wheres in sorted(self.missing_ops.items()):
            lines.append(f"  op {op}: no kernel in this runtime (in {', '.join(wheres)})")
        return "\n".join(lines)


def _first_line(message: str) -> str:
    lines = [line.strip() for line in message.splitlines() if line.strip()]
    useful = [line for line in lines if not line.endswith("Graph execution error:")]
    return (useful or lines or [""])[0][:300]


def missing_ops_in(message: str) -> list[str]:
    """Op names a TensorFlow error says have no kernel or no registration."""
    return sorted({m.group(1) for pattern in _OP_PATTERNS for m in pattern.finditer(message)})


def check_in_runtime(export_dir: str, python: str = sys.executable,
                     timeout: float = 600) -> RuntimeReport:
    """Loads `export_dir` with the interpreter `python` and runs each signature once."""
    env = user_environment(TF_CPP_MIN_LOG_LEVEL="3")
    env.pop("PYTHONPATH", None)
    # -I: the script's folder (keras_bert/export) is not put on sys.path.
    done = subprocess.run([python, "-I", SESSION_BUNDLE, os.path.abspath(export_dir)],
                          capture_output=True, text=True, env=env, timeout=timeout)
    lines = [line for line in done.stdout.splitlines() if line.startswith("{")]
    if done.returncode != 0 or not lines:
        error = done.stderr.strip()[-2000:] or f"exit status {done.returncode}"
        return RuntimeReport(python, "", f"the runtime could not run the check: {error}", {},
                             {op: ["load"] for op in missing_ops_in(error)})
    result = json.loads(lines[-1])
    errors = {name: error for name, error in result["signatures"].items() if error}
    missing: dict[str, list[str]] = {}
    for where, error in [("load", result["load_error"] or ""), *errors.items()]:
        for op in missing_ops_in(error):
            missing.setdefault(op, []).append(where)
    return RuntimeReport(python, result["tensorflow"], result["load_error"], errors, missing)
