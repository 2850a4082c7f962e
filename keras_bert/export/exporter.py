"""`export_model`: a keras_bert model directory -> `BASE/<version>/` for TensorFlow Serving.

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
import shutil

import keras
import tensorflow as tf

from keras_bert.checkpoints.model_dir import ModelDir, load_model_dir
from keras_bert.checkpoints.task_dir import load_task_model
from keras_bert.export.op_audit import DEFAULT_TARGET
from keras_bert.export.session_bundle import SessionBundle, read_signature_defs
from keras_bert.export.versions import atomic_version_dir
from keras_bert.export.warmup import predict_log, write_warmup
from keras_bert.tasks.labels import LABELS_FILENAME
from keras_bert.tasks.serving_module import ServingModule, length_buckets

# `export --precision` -> the Keras dtype policy the model is rebuilt under: matmuls in that
# precision; variables, softmax, LayerNorm statistics and every output in float32. Without
# it, the export computes in the precision the model directory records (what `predict`
# computed in), so that the served answers are the model's own.
EXPORT_PRECISIONS = {"float32": "float32", "bfloat16": "mixed_bfloat16",
                     "float16": "mixed_float16"}

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
    module: ServingModule | None = dataclasses.field(default=None, repr=False, compare=False)


def build_serving_module(model_dir: ModelDir, seq_length: int | None = None,
                         pooling: str | None = None, max_length: int | None = None,
                         null_score_threshold: float = 0.0, precision: str | None = None,
                         xla: bool = False) -> tuple[ServingModule, str, dict]:
    """The serving functions of a model directory: `(module, task name, asset files)`.

    The task kind builds them (`TaskModel.serving_module`) around the model's own
    `BertPreprocessor`: texts are padded to `seq_length` if given (static shapes), else to
    each batch's longest text, and truncated at `seq_length`, else `max_length`, else the
    training sequence length (encoders: their `max_position_embeddings`, at most 512).
    `pooling`: the embedding of an encoder export; `null_score_threshold`: SQuAD v2.0's
    "no answer" margin; `precision`: one of `EXPORT_PRECISIONS` (None: the precision the
    model directory records); `xla`: the network XLA-compiled over length buckets
    (sentence-level tasks; see `ServingModule.use_xla`).
    """
    if precision is not None and precision not in EXPORT_PRECISIONS:
        raise ValueError(f"precision must be one of {tuple(EXPORT_PRECISIONS)}, got "
                         f"{precision!r}")
    loaded = load_task_model(model_dir.path, dtype=EXPORT_PRECISIONS.get(precision),
                             rules=model_dir.rules)
    module = loaded.serving_module(seq_length, max_length, pooling=pooling,
                                   null_score_threshold=null_score_threshold)
    if xla:
        module.use_xla()
    assets = {"vocab.txt": model_dir.vocab_file}
    if loaded.labels is not None:
        assets[LABELS_FILENAME] = os.path.join(model_dir.path, LABELS_FILENAME)
    return module, loaded.kind, assets


def export_model(model_dir: str, base_dir: str, version: int | None = None,
                 seq_length: int | None = None, pooling: str | None = None,
                 max_length: int | None = None, target: str | None = DEFAULT_TARGET,
                 model_name: str = "bert", warmup_texts: list[str] | None = None,
                 null_score_threshold: float = 0.0, rules: str | None = None,
                 precision: str | None = None, xla: bool = False) -> ExportedModel:
    """Exports `model_dir` as version `version` (default: the next one) under `base_dir`.

    `seq_length` fixes the sequence length (static shapes, for TPU/XLA serving); by
    default each request is padded to its longest text, truncated at `max_length` (see
    `build_serving_module`). `target` names the model servers
    the graph must load in (None skips the op audit). `null_score_threshold`: SQuAD v2.0
    span-QA exports answer "" when the null score beats the best span by more than this.
    `rules`: tokenizer rules to embed instead of the model's own. `precision`: None (the
    precision the model was saved in, so that the export answers as `predict` does),
    `float32`, or `bfloat16` / `float16` for accelerators (matmuls in that precision; the
    weights are stored in float32 and every output is float32). `xla`: the network XLA-compiled over
    length buckets (TF Serving needs `--xla_cpu_compilation_enabled=true` for it); the
    warmup file then holds one batch-1 request per length bucket, so each compiles before
    traffic (other batch sizes, padded to a power of two, compile on first use).
    """
    source = load_model_dir(model_dir).with_rules(rules)
    module, kind, assets = build_serving_module(source, seq_length, pooling, max_length,
                                                null_score_threshold, precision, xla)
    with atomic_version_dir(base_dir, version) as (tmp, number):
        write_saved_model(tmp, {name: module.traced(name) for name in module.endpoints()},
                          resources=[module.preprocessor])
        copy_assets(tmp, assets)
        if target:
            from keras_bert.export.op_audit import check

            check(tmp, target)
        texts = warmup_texts or WARMUP_TEXTS
        requests = [module.warmup_inputs(texts)]
        if xla:  # one request per length bucket: each is compiled at load, not in traffic
            requests += [module.warmup_inputs([" ".join(["the"] * n)])
                         for n in bucket_word_counts(module.preprocessor.max_length)]
        write_warmup(tmp, [predict_log(model_name, "serving_default", r) for r in requests])
        inputs = requests[0]
        with SessionBundle(tmp) as bundle:  # as TF Serving loads it, or no version appears
            bundle.run("serving_default", inputs)
        signatures = describe_signatures(read_signature_defs(tmp))
    path = os.path.join(base_dir, str(number))
    return ExportedModel(path, number, kind, signatures, module)


def bucket_word_counts(longest: int) -> list[int]:
    """Words of a text that fills each XLA length bucket (`length_buckets(longest)`) once
    packed ("the" is one wordpiece; [CLS] and [SEP] take two)."""
    return [max(bucket - 2, 1) for bucket in length_buckets(longest)]


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


def copy_assets(export_dir: str, assets: dict[str, str]) -> None:
    """Copies the files clients and people read (`vocab.txt`, `labels.txt`) into
    `assets/`; the graph holds both as constants and never opens them."""
    folder = os.path.join(export_dir, "assets")
    os.makedirs(folder, exist_ok=True)
    for name, source in assets.items():
        shutil.copyfile(source, os.path.join(folder, name))


def describe_signatures(signature_defs) -> dict[str, dict[str, list[str]]]:
    """`{signature: {"inputs": [...], "outputs": [...]}}` of `SignatureDef`s."""
    return {name: {"inputs": sorted(sig.inputs), "outputs": sorted(sig.outputs)}
            for name, sig in signature_defs.items()}
