#!/usr/bin/env python3
"""Regenerates `keras_bert/export/oplists/` from the real TensorFlow / TF Text releases.

For each release below, a throwaway virtual environment is created OUTSIDE the repository
(`--work`, default `/tmp/oplist-venvs`) with `python3.11 -m venv`, the pinned wheels are
installed from PyPI, and a fresh process of that environment lists the global C++ op
registry (`TF_GetAllOpList`, the registry the loader checks `"Op type not registered"`
against):

- `tf-<v>-core.txt`: every op registered after `import tensorflow`;
- `tf-text-<v>.txt`: the ops added by `import tensorflow_text` (plus explicitly loading
  every op library shipped in the package, in case one is loaded lazily): the difference.

Files are sorted, one op name per line. `SOURCE.md` records the exact versions, the Python
version, the date and this command. The environments are deleted afterwards unless
`--keep-venvs`.

    python3 scripts/generate_oplists.py            # all releases (~2.5 GB each while running)
    python3 scripts/generate_oplists.py --only 2.20

The same file, run inside one of those environments as `--dump`, does the listing.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import shutil
import subprocess
import sys

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
OUT = os.path.join(REPO, "keras_bert", "export", "oplists")

# (name, pip requirements, TF Text version or None for a core-only list)
RELEASES = [
    # TF Text 2.12.1 requires tensorflow>=2.12,<2.13: its ops are listed with TF 2.12.1.
    ("2.12", ["tensorflow==2.12.1", "tensorflow-text==2.12.1"], "2.12.1"),
    # Core only: the core of TF Serving 2.13, the oldest release of the default target.
    ("2.13", ["tensorflow==2.13.1"], None),
    ("2.20", ["tensorflow==2.20.0", "tensorflow-text==2.20.0"], "2.20.0"),
]


def _registered_ops() -> set[str]:
    """Names of every op in the process-wide C++ op registry."""
    from tensorflow.core.framework import op_def_pb2
    from tensorflow.python.client import pywrap_tf_session as c_api

    buf = c_api.TF_GetAllOpList()
    try:
        op_list = op_def_pb2.OpList.FromString(c_api.TF_GetBuffer(buf))
    finally:
        c_api.TF_DeleteBuffer(buf)
    return {op.name for op in op_list.op}


def dump(with_text: bool) -> dict:
    """Runs inside a release's environment: the core and TF Text op names, as JSON."""
    import glob

    import tensorflow as tf

    core = _registered_ops()
    result = {"python": sys.version.split()[0], "tensorflow": tf.__version__,
              "tensorflow_git": tf.version.GIT_VERSION, "core": sorted(core)}
    if with_text:
        import tensorflow_text as tf_text

        after_import = _registered_ops()
        lazily = []
        package = os.path.dirname(tf_text.__file__)
        for lib in sorted(glob.glob(os.path.join(package, "**", "*.so"), recursive=True)):
            try:
                tf.load_op_library(lib)
            except Exception as e:  # noqa: BLE001 -- pybind modules are not op libraries
                lazily.append(f"{os.path.relpath(lib, package)}: not loaded ({type(e).__name__})")
        after_all = _registered_ops()
        result.update(tensorflow_text=tf_text.__version__, text=sorted(after_all - core),
                      added_by_explicit_load=sorted(after_all - after_import),
                      removed=sorted(core - after_all), not_op_libraries=lazily)
    return result


def _run(cmd: list[str]) -> str:
    print("+", " ".join(cmd), flush=True)
    return subprocess.run(cmd, check=True, stdout=subprocess.PIPE, text=True).stdout


def _write(name: str, ops: list[str]) -> None:
    with open(os.path.join(OUT, name), "w") as f:
        f.write("".join(op + "\n" for op in sorted(ops)))
    print(f"wrote {name}: {len(ops)} ops")


def main(argv=None) -> int:
    """Creates the environments, lists the ops, writes the files."""
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--dump", choices=("core", "text"), help=argparse.SUPPRESS)
    p.add_argument("--work", default="/tmp/oplist-venvs")
    p.add_argument("--python", default="python3.11")
    p.add_argument("--only", action="append", help="release name(s) to regenerate")
    p.add_argument("--keep-venvs", action="store_true")
    args = p.parse_args(argv)
    if args.dump:
        print(json.dumps(dump(args.dump == "text")))
        return 0
    os.makedirs(OUT, exist_ok=True)
    os.makedirs(args.work, exist_ok=True)
    records = []
    for name, requirements, text_version in RELEASES:
        if args.only and name not in args.only:
            continue
        venv = os.path.join(args.work, "tf" + name.replace(".", ""))
        if not os.path.exists(os.path.join(venv, "bin", "python")):
            _run([args.python, "-m", "venv", venv])
        py = os.path.join(venv, "bin", "python")
        _run([py, "-m", "pip", "install", "-q", *requirements])
        mode = "text" if text_version else "core"
        info = json.loads(_run([py, os.path.abspath(__file__), "--dump", mode]).splitlines()[-1])
        _write(f"tf-{name}-core.txt", info["core"])
        if text_version:
            assert info["tensorflow_text"] == text_version, info["tensorflow_text"]
            _write(f"tf-text-{text_version}.txt", info["text"])
            for key in ("added_by_explicit_load", "removed", "not_op_libraries"):
                if info[key]:
                    print(f"  {key}: {info[key]}")
        frozen = _run([py, "-m", "pip", "freeze"]).split()
        records.append((name, info, [r for r in frozen if r.lower().startswith("tensorflow")]))
        if not args.keep_venvs:
            shutil.rmtree(venv)
    today = datetime.date.today().isoformat()
    for name, info, frozen in records:
        print(f"{today} release {name}: python {info['python']}, tensorflow {info['tensorflow']}"
              f" ({info['tensorflow_git']}), text {info.get('tensorflow_text')}; {frozen}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
