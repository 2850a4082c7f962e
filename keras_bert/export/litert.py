"""`write_litert`: a task model in memory -> `BASE/<version>/model.tflite` for LiteRT.

One `.tflite` file per version, with the tokenizer, the packing, the network and the task's
outputs inside, under the SavedModel's signature names (`serving_default`, `serve_ids`,
`preprocess`; `litert_graph.py` builds them). Beside it: `metadata.json` (the same JSON
the file carries in its flatbuffer metadata under `keras_bert`), `labels.txt` and
`vocab.txt`, so that a runtime without this package can read the label names. The file
is loaded back in LiteRT's interpreter, with TF Text's kernels registered, and answers the
warmup texts before the version appears (`litert_runtime.LiteRTModel`).

Every kind goes: each kind's `ServingModule.litert_graph` gives the graph of its export
(sentence-level: `litert_graph.py`, `litert_windows.py`; the tagger and span QA: their
folders' `litert_tagger.py` / `litert_answerer.py`, over `litert_text.py`'s steps). What
the format cannot hold is refused with one line naming it: a tokenizer the file cannot
reproduce. LiteRT's only WordPiece tokenizer is TF Text's `FastBertTokenizer`, which
follows neither Google's nor Hugging Face's rules on every string (`docs/litert.md`
lists the measured classes): the export refuses to put it in the file unless asked to
(`tokenizer="fast-bert"`), and `tokenizer="none"` writes a file that takes token ids
(`serve_ids` only), to be fed by the model's own tokenizer.
"""

from __future__ import annotations

import dataclasses
import json
import os
import tempfile

from keras_bert.export.litert_runtime import FORMAT, METADATA_NAME, MODEL_FILE, LiteRTModel
from keras_bert.export.versions import atomic_version_dir

QUANTIZATIONS = ("none", "float16", "int8")
LITERT_OPTIONS = ("version", "max_length", "quantize", "tokenizer", "task_options")
TOKENIZERS = ("fast-bert", "none")
METADATA_FILE = "metadata.json"
# The custom ops of the graph: TF Text's, whose TFLite kernels `tflite_registrar` registers.
TF_TEXT_OPS = frozenset({"FastBertNormalize", "FastWordpieceTokenizeWithOffsets",
                         "RaggedTensorToTensor", "TFText>WhitespaceTokenizeWithOffsetsV2",
                         "TFText>ByteSplitWithOffsets", "TFText>ByteSplitByOffsets"})


@dataclasses.dataclass
class ExportedLiteRT:
    """Where a LiteRT export went: its version directory, the `.tflite` file, the task and
    the metadata the file carries."""

    path: str
    version: int
    task: str
    file: str
    metadata: dict


def write_litert(model, base_dir: str, version: int | None = None,
                 max_length: int | None = None, quantize: str = "none",
                 tokenizer: str | None = None, task_options=None) -> ExportedLiteRT:
    """Writes `model` (a `TextTaskModel` of any kind) as version `version` (default: the
    next) under `base_dir`.

    `max_length`: the longest packed text (default: the model's training length); longer
    texts are truncated, as the SavedModel truncates them. `quantize`: `none` (float32),
    `float16` (weights stored in float16) or `int8` (dynamic-range: int8 weights, float
    activations). `tokenizer`: `fast-bert` (TF Text's TFLite tokenizer in the file, text
    in; see the module docstring) or `none` (token ids in); None refuses, naming both.
    `task_options`: the kind's own export options, handed to its `serving_functions`
    unread (`exporter.write_version`'s).
    """
    check_options(quantize, tokenizer)
    model = model.in_precision("float32")  # LiteRT's kernels compute float32 (or int8)
    module = model.serving_functions(None, max_length, task_options)
    check_module(module, tokenizer)
    try:
        graph = module.litert_graph()
    except ValueError as error:
        raise ValueError(f"a {type(model).__name__} cannot be exported to LiteRT: "
                         f"{error}") from None
    functions = graph.functions(text=tokenizer == "fast-bert")
    metadata = describe(model, module, graph, functions, quantize, tokenizer)
    blob = with_metadata(convert(functions, quantize), metadata)
    with atomic_version_dir(base_dir, version) as (tmp, number):
        write_files(tmp, blob, metadata, module.tokenizer.vocab, model.labels)
        with LiteRTModel(tmp) as loaded:  # as a user loads it, or no version appears
            loaded.warm()
    path = os.path.join(base_dir, str(number))
    return ExportedLiteRT(path, number, model.kind, os.path.join(path, MODEL_FILE), metadata)


def check_options(quantize: str, tokenizer: str | None) -> None:
    """One `ValueError` line for an unknown quantization or tokenizer choice."""
    if quantize not in QUANTIZATIONS:
        raise ValueError(f"quantize must be one of {', '.join(QUANTIZATIONS)}, got "
                         f"{quantize!r}")
    if tokenizer is None:
        raise ValueError(
            "LiteRT has no kernels for keras_bert's tokenizer, and TF Text's FastBertTokenizer "
            "(the one that runs in LiteRT) follows neither Google's nor Hugging Face's rules on "
            "every string (control and format characters, compatibility characters, final "
            "sigma, words over the length limit: docs/litert.md); choose tokenizer "
            "'fast-bert' to put it in the file anyway (text in), or 'none' for a file that "
            "takes token ids (CLI: --litert-tokenizer fast-bert|none)")
    if tokenizer not in TOKENIZERS:
        raise ValueError(f"tokenizer must be one of {', '.join(TOKENIZERS)}, got "
                         f"{tokenizer!r}")


def check_module(module, tokenizer: str) -> None:
    """One `ValueError` line for a tokenizer the file cannot hold (what the kind's graph
    cannot read, `ServingModule.litert_graph` says)."""
    if tokenizer == "fast-bert" and module.tokenizer.preserve_special_tokens:
        raise ValueError("the tokenizer keeps literal special tokens ([MASK] ...) in the text; "
                         "FastBertTokenizer splits them: use --litert-tokenizer none")


def describe(model, module, graph, functions: dict, quantize: str, tokenizer: str) -> dict:
    """The JSON the file carries: what it is, its signatures, labels and tokenizer."""
    tok = module.tokenizer
    signatures = {name: {"inputs": sorted(s.name for s in fn.structured_input_signature[0]),
                         "outputs": sorted(fn.structured_outputs)}
                  for name, fn in functions.items()}
    labels = None if model.labels is None else list(model.labels.names)
    return {"format": FORMAT, "task": model.kind, "labels": labels,
            "signatures": signatures, "text_inputs": list(graph.text_inputs),
            "quantize": quantize,
            "tokenizer": {"in_file": tokenizer == "fast-bert", "lower_case": tok.lower_case,
                          "rules": tok.rules, "cls_id": tok.cls_id, "sep_id": tok.sep_id,
                          "pad_id": tok.pad_id, "vocab_size": tok.vocab_size},
            "max_length": graph.max_length}


def convert(functions: dict, quantize: str) -> bytes:
    """The LiteRT flatbuffer of `functions` (`{signature: concrete function}`, reading no
    variables: `LiteRTGraph` freezes its networks)."""
    import tensorflow as tf

    holder = tf.Module()  # the functions read no variable: the networks are frozen
    with tempfile.TemporaryDirectory() as tmp:
        tf.saved_model.save(holder, tmp, signatures=functions)
        converter = tf.lite.TFLiteConverter.from_saved_model(tmp)
        converter.allow_custom_ops = True  # TF Text's tokenizer ops, registered at load
        if quantize != "none":
            converter.optimizations = [tf.lite.Optimize.DEFAULT]
        if quantize == "float16":
            converter.target_spec.supported_types = [tf.float16]
        blob = converter.convert()
    unknown = sorted(set(custom_ops(blob)) - TF_TEXT_OPS)
    if unknown:  # allow_custom_ops lets any op through; only TF Text's have kernels
        raise ValueError(f"the LiteRT graph holds {', '.join(unknown)}, which LiteRT has no "
                         "kernel for (a TensorFlow op the converter could not lower)")
    return blob


def custom_ops(blob: bytes) -> list[str]:
    """The custom op names a LiteRT flatbuffer uses."""
    from ai_edge_litert import schema_py_generated as schema

    model = schema.Model.GetRootAs(blob, 0)
    codes = (model.OperatorCodes(i).CustomCode() for i in range(model.OperatorCodesLength()))
    return [code.decode() for code in codes if code]


def with_metadata(blob: bytes, metadata: dict) -> bytes:
    """`blob` with `metadata` (JSON) in its flatbuffer metadata, under `keras_bert`."""
    from tensorflow.lite.python import schema_py_generated as schema
    from tensorflow.lite.tools import flatbuffer_utils

    model = flatbuffer_utils.read_model_from_bytearray(bytearray(blob))
    buffer = schema.BufferT()
    buffer.data = json.dumps(metadata).encode("utf-8")
    model.buffers.append(buffer)
    entry = schema.MetadataT()
    entry.name = METADATA_NAME
    entry.buffer = len(model.buffers) - 1
    model.metadata = [*(model.metadata or []), entry]
    return bytes(flatbuffer_utils.convert_object_to_bytearray(model))


def write_files(folder: str, blob: bytes, metadata: dict, vocab: list[str], labels) -> None:
    """`model.tflite`, `metadata.json`, `vocab.txt` and (labelled kinds) `labels.txt`."""
    os.makedirs(folder, exist_ok=True)
    with open(os.path.join(folder, MODEL_FILE), "wb") as f:
        f.write(blob)
    with open(os.path.join(folder, METADATA_FILE), "w", encoding="utf-8") as f:
        json.dump(metadata, f, indent=2)
    from keras_bert.text.vocab_builder import save_vocab

    save_vocab(vocab, os.path.join(folder, "vocab.txt"))
    if labels is not None:
        labels.save(os.path.join(folder, "labels.txt"))
