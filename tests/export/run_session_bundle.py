"""Runs exported SavedModels as TensorFlow Serving does, in a process without keras_bert.

    python tests/export/run_session_bundle.py JOBS.json

`JOBS.json` is a list of `{"export": DIR, "signature": NAME, "inputs": IN.npz,
"outputs": OUT.npz}`. Each export is loaded once through the Session-based SavedModel
loader (`tf.compat.v1.saved_model.loader.load`: SaverDef restore, then `signature_def`
tensors) with TF Text present only as its kernel libraries (`tf.load_op_library`), as the
model server links them. Outputs go to OUT.npz; an error goes to OUT.npz + ".error" (its
type and message), so a caller can compare refusals too.

Runs under any TensorFlow 2.12+ (the runtime-matrix tests run it in virtual environments
holding only `tensorflow` and `tensorflow-text`). It loads
`keras_bert/export/session_bundle.py` by file path (that file imports only TensorFlow) and
fails if the `keras_bert` package gets imported.
"""

import importlib.util
import json
import os
import sys

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def save_arrays(path: str, arrays: dict) -> None:
    """`np.savez` without pickles (NumPy 1.x and 2.x read each other's files): a string
    array is stored as its concatenated bytes, lengths and shape."""
    plain = {}
    for name, value in arrays.items():
        value = np.asarray(value)
        if value.dtype.kind in "OSU":
            items = [v if isinstance(v, bytes) else str(v).encode("utf-8")
                     for v in value.ravel()]
            plain[f"{name}.bytes"] = np.frombuffer(b"".join(items), np.uint8)
            plain[f"{name}.lengths"] = np.array([len(v) for v in items], np.int64)
            plain[f"{name}.shape"] = np.array(value.shape, np.int64)
        else:
            plain[name] = value
    np.savez(path, **plain)


def load_arrays(path: str) -> dict:
    """What `save_arrays` wrote (strings as object arrays of bytes)."""
    arrays = {}
    with np.load(path) as data:
        for key in data.files:
            name, _, part = key.rpartition(".")
            if part == "bytes":
                raw, lengths = data[key].tobytes(), data[f"{name}.lengths"]
                ends = np.cumsum(lengths)
                items = [raw[end - n:end] for end, n in zip(ends, lengths, strict=True)]
                values = np.empty(len(items), dtype=object)
                values[:] = items
                arrays[name] = values.reshape(tuple(data[f"{name}.shape"]))
            elif part not in ("lengths", "shape"):
                arrays[key] = data[key]
    return arrays


def main(manifest: str) -> None:
    spec = importlib.util.spec_from_file_location(
        "session_bundle", os.path.join(ROOT, "keras_bert", "export", "session_bundle.py"))
    session_bundle = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(session_bundle)
    import tensorflow as tf

    with open(manifest, encoding="utf-8") as f:
        jobs = json.load(f)
    bundles = {}
    for job in jobs:
        if job["export"] not in bundles:
            bundles[job["export"]] = session_bundle.SessionBundle(job["export"])
        try:
            outputs = bundles[job["export"]].run(job["signature"], load_arrays(job["inputs"]))
        except tf.errors.OpError as e:
            with open(job["outputs"] + ".error", "w", encoding="utf-8") as f:
                f.write(f"{type(e).__name__}: {e.message}")
            continue
        save_arrays(job["outputs"], outputs)
    assert "tensorflow_text" not in sys.modules, "the TF Text Python package was imported"
    assert not any(name.startswith("keras_bert") for name in sys.modules), "keras_bert imported"
    print(f"tensorflow {tf.__version__}: {len(jobs)} job(s), {len(bundles)} export(s)")


if __name__ == "__main__":
    main(sys.argv[1])
