"""A SavedModel loaded the way TensorFlow Serving loads it: a `SavedModelBundle`.

TF Serving's C++ server imports the MetaGraph tagged `serve` into a Session, runs the
SaverDef's restore op on `variables/`, runs the main (init) op, then feeds and fetches the
tensors named by each `signature_def`. `tf.compat.v1.saved_model.loader.load` is the same
loader in Python; `SessionBundle` wraps it and runs signatures by their tensor names. An
export that only the object-based loader (`tf.saved_model.load`) can run fails here, as it
would in the model server ("Could not find variable ...").

This file imports nothing but TensorFlow and the standard library, so that a virtual
environment holding only `tensorflow` (and TF Text's op libraries, see
`load_tf_text_op_libraries`) can run it by path, as the runtime-matrix tests do.
"""

from __future__ import annotations

import glob
import importlib.util
import os

import numpy as np
import tensorflow as tf

SERVE_TAG = "serve"


def tf_text_op_library_paths() -> list[str]:
    """The TF Text kernel libraries (`tensorflow_text/python/ops/*.so`) of this environment,
    found without importing the `tensorflow_text` Python package."""
    spec = importlib.util.find_spec("tensorflow_text")
    if spec is None or not spec.submodule_search_locations:
        raise ImportError("tensorflow-text is not installed in this environment")
    folder = os.path.join(list(spec.submodule_search_locations)[0], "python", "ops")
    return sorted(glob.glob(os.path.join(folder, "*.so")))


_loaded_libraries: set[str] = set()


def load_tf_text_op_libraries() -> list[str]:
    """Registers TF Text's kernels with `tf.load_op_library`, as the model server links them
    (no TF Text Python code runs). Returns the libraries loaded; idempotent."""
    paths = tf_text_op_library_paths()
    for path in paths:
        if path not in _loaded_libraries:
            tf.load_op_library(path)
            _loaded_libraries.add(path)
    return paths


def read_signature_defs(export_dir: str) -> dict:
    """The public `SignatureDef`s of an export's `serve` MetaGraph (what TF Serving reports
    in `GetModelMetadata`), read from `saved_model.pb` without loading the model."""
    from tensorflow.core.protobuf import saved_model_pb2

    with open(os.path.join(export_dir, "saved_model.pb"), "rb") as f:
        saved = saved_model_pb2.SavedModel.FromString(f.read())
    for meta_graph in saved.meta_graphs:
        if SERVE_TAG in meta_graph.meta_info_def.tags:
            return {name: sig for name, sig in meta_graph.signature_def.items()
                    if not name.startswith("__")}
    raise ValueError(f"{export_dir} has no MetaGraph tagged {SERVE_TAG!r}")


def session_config(intra_op_threads: int = 0,
                   inter_op_threads: int = 0) -> tf.compat.v1.ConfigProto | None:
    """The Session's thread pools as TF Serving's `--tensorflow_intra_op_parallelism` and
    `--tensorflow_inter_op_parallelism` set them: 0 is TensorFlow's default (every core).

    `intra_op_threads` is how many threads one op (a matrix product) splits over. On a small
    CPU serving short texts one at a time, or several clients at once, 1 answers faster: the
    op's work is too small to share (bench/RESULTS.md, "The Session's thread pools").
    None when both are 0, so the Session is built exactly as without this.

    TensorFlow sizes the CPU's intra-op pool once per process, for the first Session or
    eager op (its `local_device.cc`, unless `TF_OVERRIDE_GLOBAL_THREADPOOL=true`): later
    Sessions share that pool whatever their config says. `keras-bert serve` and TF Serving
    build their Sessions before anything else runs TensorFlow, so the setting holds there;
    in a process of your own, give it to the first Session."""
    for flag, value in (("intra_op_threads", intra_op_threads),
                        ("inter_op_threads", inter_op_threads)):
        if isinstance(value, bool) or not isinstance(value, int) or value < 0:
            raise ValueError(f"{flag} must be a whole number >= 0 (0: TensorFlow's default, "
                             f"every core), got {value!r}")
    if intra_op_threads == inter_op_threads == 0:
        return None
    return tf.compat.v1.ConfigProto(intra_op_parallelism_threads=intra_op_threads,
                                    inter_op_parallelism_threads=inter_op_threads)


class SessionBundle:
    """One SavedModel version restored into its own `tf.Graph` and `tf.compat.v1.Session`.

    `signature_defs` maps signature names to their `SignatureDef`s (what TF Serving reports
    in `GetModelMetadata`); `run(name, inputs)` feeds `inputs` (input key -> array) and
    returns every output (output key -> array). `Session.run` is thread-safe, so concurrent
    requests may share one bundle. TF Text's kernels are loaded first (`tf_text_ops`), as the
    model server links them.
    """

    def __init__(self, export_dir: str, tags: tuple[str, ...] = (SERVE_TAG,),
                 config: tf.compat.v1.ConfigProto | None = None, tf_text_ops: bool = True):
        if tf_text_ops:  # the model server links every TF Text kernel
            load_tf_text_op_libraries()
        self.export_dir = export_dir
        self.graph = tf.Graph()
        self.session = tf.compat.v1.Session(graph=self.graph, config=config)
        # TF logs the TF1 loader as deprecated in favour of `tf.saved_model.load`: the
        # object-based loader TF Serving does not use. Silence that notice only.
        logger = tf.get_logger()
        level = logger.level
        logger.setLevel("ERROR")
        try:
            with self.graph.as_default():
                meta_graph = tf.compat.v1.saved_model.loader.load(
                    self.session, list(tags), export_dir)
        except Exception:
            self.session.close()
            raise
        finally:
            logger.setLevel(level)
        self.signature_defs = {name: sig for name, sig in meta_graph.signature_def.items()
                               if not name.startswith("__")}

    def signature_def(self, name: str):
        """The `SignatureDef` called `name`; KeyError naming the ones there are."""
        if name not in self.signature_defs:
            raise KeyError(f"signature {name!r} not in {self.export_dir}; it has: "
                           f"{', '.join(sorted(self.signature_defs))}")
        return self.signature_defs[name]

    def run(self, name: str, inputs: dict, output_keys=None) -> dict[str, np.ndarray]:
        """Runs signature `name` on `inputs` (input key -> array-like); returns the outputs
        named by `output_keys` (default: all), by output key."""
        signature = self.signature_def(name)
        missing = sorted(set(signature.inputs) - set(inputs))
        extra = sorted(set(inputs) - set(signature.inputs))
        if missing or extra:
            raise KeyError(f"signature {name!r} takes {sorted(signature.inputs)}; "
                           f"missing {missing}, unexpected {extra}")
        feed = {signature.inputs[key].name: value for key, value in inputs.items()}
        keys = list(output_keys) if output_keys else sorted(signature.outputs)
        fetches = {key: signature.outputs[key].name for key in keys}
        return self.session.run(fetches, feed_dict=feed)

    def close(self) -> None:
        """Releases the session (and its variables)."""
        self.session.close()

    def __enter__(self) -> SessionBundle:
        return self

    def __exit__(self, *exc) -> None:
        self.close()


def sample_inputs(signature_def, texts=("Call me Ishmael.", "")) -> dict[str, np.ndarray]:
    """Inputs for a signature made from its `SignatureDef` alone: `texts` for strings, ones
    for integers (valid ids, mask and segment), zeros for floats; unknown dimensions are 2
    (batch) or 8."""
    inputs = {}
    for key, info in signature_def.inputs.items():
        dtype = tf.dtypes.as_dtype(info.dtype)
        dims = [d.size for d in info.tensor_shape.dim]
        shape = [len(texts) if i == 0 and d < 0 else (8 if d < 0 else d)
                 for i, d in enumerate(dims)]
        if dtype == tf.string:
            values = np.resize(np.array([t.encode("utf-8") for t in texts], dtype=object),
                               shape)
        elif dtype.is_integer or dtype.is_bool:
            values = np.ones(shape, dtype.as_numpy_dtype)
        else:
            values = np.zeros(shape, dtype.as_numpy_dtype)
        inputs[key] = values
    return inputs


def probe(export_dir: str) -> dict:
    """Loads `export_dir` as TF Serving does and runs every signature on `sample_inputs`.

    Returns `{"tensorflow": version, "load_error": message or None,
    "signatures": {name: error message or None}}`.
    """
    result = {"tensorflow": tf.__version__, "load_error": None, "signatures": {}}
    try:
        bundle = SessionBundle(export_dir)
    except Exception as e:  # noqa: BLE001 - every load failure is the report
        result["load_error"] = f"{type(e).__name__}: {e}"
        return result
    with bundle:
        for name, signature in sorted(bundle.signature_defs.items()):
            try:
                bundle.run(name, sample_inputs(signature))
                result["signatures"][name] = None
            except Exception as e:  # noqa: BLE001
                result["signatures"][name] = f"{type(e).__name__}: {e}"
    return result


if __name__ == "__main__":
    # python session_bundle.py EXPORT_DIR: the `probe` of an export, as one JSON line.
    import json
    import sys

    print(json.dumps(probe(sys.argv[1])))
