"""`write_version`: a task model in memory -> `BASE/<version>/` for TensorFlow Serving
(`TextTaskModel.export`; from a model directory: `keras_bert.tasks.task_dir.export_model`).

The SavedModel is written by `keras.export.ExportArchive`: it stores exactly the variables
the endpoint functions read, once each, as the SaverDef's restore op restores them, so TF
Serving's Session-based loader (SavedModelBundle) finds every variable. (A `tf.Module`
holding the Keras model and saved with `tf.saved_model.save` loads with
`tf.saved_model.load` but fails there: "Could not find variable ...".) Every version is
loaded back through that loader (`keras_bert.export.session_bundle`) and its warmup
requests are run before it appears.

The version directory holds `saved_model.pb`, `variables/` (each variable once),
`assets/` (`vocab.txt`, and `labels.txt` for classifiers and taggers, for people and
clients: the graph itself holds both as constants) and
`assets.extra/tf_serving_warmup_requests`. Before the version appears, every op of the
graph is checked against the target model server (`keras_bert.export.op_audit`); an
incompatible graph is refused, naming the op.
"""

from __future__ import annotations

import dataclasses
import os

import keras
import tensorflow as tf

from keras_bert.export.litert import LITERT_OPTIONS, write_litert
from keras_bert.export.op_audit import DEFAULT_TARGET
from keras_bert.export.session_bundle import SessionBundle, read_signature_defs
from keras_bert.export.versions import atomic_version_dir
from keras_bert.export.warmup import predict_log, write_warmup
from keras_bert.training.backends import require_tensorflow

# `export --precision` -> the Keras dtype policy the model is rebuilt under: matmuls in that
# precision; variables, softmax, LayerNorm statistics and every output in float32. Without
# it, the export computes in the precision the model directory records (what `predict`
# computed in), so that the served answers are the model's own.
EXPORT_PRECISIONS = {"float32": "float32", "bfloat16": "mixed_bfloat16",
                     "float16": "mixed_float16"}

LABELS_ASSET = "labels.txt"  # the label names by id, as the model directory's labels.txt
WARMUP_TEXTS = ["Call me Ishmael.", "The State of the Union is strong.",
                "BERT reads a whole sentence at once, in both directions."]


@dataclasses.dataclass
class ExportedModel:
    """Where an export went and what it serves; `module`: the functions it holds, traced in
    this process (`module.text_function()` answers in process what the export answers)."""

    path: str
    version: int
    task: str
    signatures: dict[str, dict[str, list[str]]]
    module: object = dataclasses.field(default=None, repr=False, compare=False)


def write_version(model, base_dir: str, version: int | None = None,
                  seq_length: int | None = None, max_length: int | None = None,
                  target: str | None = DEFAULT_TARGET, model_name: str = "bert",
                  warmup_texts: list[str] | None = None, precision: str | None = None,
                  xla: bool = False, task_options=None) -> ExportedModel:
    """Writes `model` (a `TextTaskModel`, as it is in memory) as version `version` (default:
    the next one) under `base_dir`.

    `seq_length` fixes the sequence length (static shapes, for TPU/XLA serving); by default
    each request is padded to its longest text and truncated at `max_length`, else the
    training length. `target` names the model servers the graph must load in (None skips
    the op audit). `precision`: None (the model's own, so that the export answers as
    `predict` does), `float32`, or `bfloat16` / `float16` for accelerators (matmuls in that
    precision; the weights are stored in float32 and every output is float32). `xla`: the
    network XLA-compiled over length buckets (every kind; TF Serving needs
    `--xla_cpu_compilation_enabled=true`); the warmup file then holds one batch-1 request
    per length bucket, so each compiles before traffic. `task_options`: the kind's own
    export options (its class's `export_options` builds them), handed to the model's
    `serving_functions` unread: this module names no kind's option.
    """
    if precision is not None:
        if precision not in EXPORT_PRECISIONS:
            raise ValueError(f"precision must be one of {tuple(EXPORT_PRECISIONS)}, got "
                             f"{precision!r}")
        model = model.in_precision(EXPORT_PRECISIONS[precision])
    module = model.serving_functions(seq_length, max_length, task_options)
    if xla:
        module.use_xla()
    with atomic_version_dir(base_dir, version) as (tmp, number):
        write_saved_model(tmp, {name: module.traced(name) for name in module.endpoints()},
                          resources=[module.preprocessor])
        write_assets(tmp, model.preprocessor.tokenizer.vocab, model.labels)
        if target:
            from keras_bert.export.op_audit import check

            check(tmp, target)
        texts = warmup_texts or WARMUP_TEXTS
        requests = [module.warmup_inputs(texts)]
        if xla:  # one request per length bucket: each is compiled at load, not in traffic
            requests += [module.warmup_inputs([" ".join(["the"] * n)])
                         for n in bucket_word_counts(module.xla_lengths())]
        write_warmup(tmp, [predict_log(model_name, "serving_default", r) for r in requests])
        with SessionBundle(tmp) as bundle:  # as TF Serving loads it, or no version appears
            bundle.run("serving_default", requests[0])
        signatures = describe_signatures(read_signature_defs(tmp))
    path = os.path.join(base_dir, str(number))
    return ExportedModel(path, number, model.kind, signatures, module)


EXPORT_FORMATS = ("saved_model", "litert")
# The options `write_version` takes (`litert.LITERT_OPTIONS`: `write_litert`'s); the others
# a caller names are the kind's, which its class builds into `task_options`.
SAVED_MODEL_OPTIONS = ("version", "seq_length", "max_length", "target", "model_name",
                       "warmup_texts", "precision", "xla", "task_options")
EXPORT_OPTIONS = tuple(dict.fromkeys((*SAVED_MODEL_OPTIONS, "quantize", *LITERT_OPTIONS)))
# Why the SavedModel takes no `quantize` (bench/RESULTS.md, "int8 and bfloat16 SavedModels"):
# in TensorFlow's runtime Keras' int8 layers ran 2-4.5x slower than float32 (their int8
# products have no fast CPU kernel), and TensorFlow's oneDNN int8 kernel, though faster than
# float32, was slower than bfloat16 at batch 32 and answers only where oneDNN is switched on.
SAVED_MODEL_QUANTIZE = ("quantize: the SavedModel has no int8 form (slower than bfloat16 in "
                        "TensorFlow's runtime, bench/RESULTS.md); export with precision "
                        "bfloat16 (--precision bfloat16) for a faster TF Serving model, or "
                        "use format litert to quantize")


def write_export(model, base_dir: str, format: str = "saved_model", **options):
    """`write_version` (`saved_model`, for TF Serving) or `litert.write_litert` (`litert`,
    one `.tflite` file) with `options`; one line for an unknown format or an option the
    format does not take."""
    if format not in EXPORT_FORMATS:
        raise ValueError(f"format must be one of {', '.join(EXPORT_FORMATS)}, got {format!r}")
    require_tensorflow("export")
    if format == "saved_model":
        if options.pop("quantize", None) not in (None, "none"):
            raise ValueError(SAVED_MODEL_QUANTIZE)
        return write_version(model, base_dir, **options)
    other = sorted(name for name, value in options.items()
                   if value not in (None, False) and name not in LITERT_OPTIONS)
    if other:
        raise ValueError(f"{', '.join(other)}: not an option of the LiteRT export (it takes "
                         f"{', '.join(LITERT_OPTIONS)})")
    return write_litert(model, base_dir, **{k: v for k, v in options.items()
                                            if k in LITERT_OPTIONS})


def bucket_word_counts(buckets: list[int]) -> list[int]:
    """Words of a text that fills each XLA length bucket once packed ("the" is one
    wordpiece; [CLS] and [SEP] take two)."""
    return [max(bucket - 2, 1) for bucket in buckets]


def write_saved_model(path: str, functions: dict[str, tf.types.experimental.GenericFunction],
                      resources=()) -> None:
    """Writes `functions` (`{signature: tf.function with its input signature, traced}`, as
    `ServingModule.traced` makes them) as a SavedModel with `keras.export.ExportArchive`,
    which takes each as traced; `resources` are trackables holding TF resources the
    functions use (the preprocessor, with the tokenizer's vocabulary table). The variables
    are those the functions read, each stored once."""
    archive = keras.export.ExportArchive()
    for resource in resources:
        archive.track(resource)
    for name, fn in functions.items():
        archive.add_endpoint(name, fn)
    archive.write_out(path, verbose=False)


def write_assets(export_dir: str, vocab: list[str], labels=None) -> None:
    """Writes the files clients and people read into `assets/`: `vocab.txt` and, for the
    labelled kinds, `labels.txt` (the graph holds both as constants and never opens them)."""
    folder = os.path.join(export_dir, "assets")
    os.makedirs(folder, exist_ok=True)
    from keras_bert.text.vocab_builder import save_vocab

    save_vocab(vocab, os.path.join(folder, "vocab.txt"))
    if labels is not None:
        labels.save(os.path.join(folder, LABELS_ASSET))


def describe_signatures(signature_defs) -> dict[str, dict[str, list[str]]]:
    """`{signature: {"inputs": [...], "outputs": [...]}}` of `SignatureDef`s."""
    return {name: {"inputs": sorted(sig.inputs), "outputs": sorted(sig.outputs)}
            for name, sig in signature_defs.items()}
