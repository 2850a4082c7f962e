"""A fine-tuned model directory: a keras_bert model directory plus the task head.

    MODEL_DIR/
      keras_bert.json        config, precision, tokenizer settings, provenance, `metadata.task`
      vocab.txt              WordPiece vocabulary
      encoder.weights.h5     the fine-tuned `BertEncoder`
      head.weights.h5        the head's weights (one HDF5 group per head layer)
      labels.txt             label names, one per line (the labelled kinds)

`metadata.task` is the task block: `kind` (the registry's name), `seq_length` (the training
length) and the kind's settings, written by its config's `block` and read by its
`from_block` alone (`keras_bert/tasks/<kind>/config.py`). A plain model directory (no task
block: converted or pretrained) is an encoder, which reads as the `embed` kind. Everything
that reads a plain model directory (encode, export, fine-tuning from it again) reads this
one too. `export_model` is what `keras-bert export` does with one: read it once, write the
next TF Serving version from the model in memory.
"""

from __future__ import annotations

import dataclasses
import os

import h5py
import numpy as np

from keras_bert.checkpoints.model_dir import ModelDir, load_model_dir, save_model_dir
from keras_bert.tasks.labels import LABELS_FILENAME, LabelVocab
from keras_bert.tasks.registry import ENCODER_KIND, kind

HEAD_WEIGHTS = "head.weights.h5"


@dataclasses.dataclass(frozen=True)
class SavedTask:
    """What `read_task_dir` found: the model directory (its manifest read once), the task
    block as written, and the labels (None for the kinds without them)."""

    model_dir: ModelDir
    block: dict
    labels: LabelVocab | None

    @property
    def kind(self) -> str:
        """The kind's name the block records."""
        return self.block["kind"]

    @property
    def head_weights(self) -> str:
        """The path of the head's weights."""
        return os.path.join(self.model_dir.path, HEAD_WEIGHTS)


def read_task_dir(path: str, rules: str | None = None) -> SavedTask:
    """Reads the manifest and labels of the model directory `path` (`rules`: read its
    tokenizer with other rules than it records).

    Raises:
      FileNotFoundError: not a model directory.
      ValueError: an unknown kind.
    """
    model_dir = load_model_dir(path).with_rules(rules)
    block = dict(model_dir.metadata.get("task") or {"kind": ENCODER_KIND})
    kind(block.get("kind"))  # a known kind, or the error naming them
    labels_path = os.path.join(model_dir.path, LABELS_FILENAME)
    labels = LabelVocab.load(labels_path) if os.path.exists(labels_path) else None
    return SavedTask(model_dir, block, labels)


def write_task_dir(network, preprocessor, path: str, block: dict,
                   labels: LabelVocab | None = None, metadata: dict | None = None) -> ModelDir:
    """Writes a task network (`encoder` and `head_layers`) with its preprocessor (vocabulary,
    casing, rules, lengths), its task block and labels as a model directory at `path`
    (replacing a model directory there, refusing anything else), assembled beside `path`
    and renamed into place (`save_model_dir`, whose `ModelDir` it returns: nothing is read
    back)."""
    if labels is not None:
        block = {**block, "labels": labels.names}

    def head_and_labels(directory: str) -> None:
        if network.head_layers:
            save_head_weights(network.head_layers, os.path.join(directory, HEAD_WEIGHTS))
        if labels is not None:
            labels.save(os.path.join(directory, LABELS_FILENAME))

    tokenizer = preprocessor.tokenizer
    return save_model_dir(network.encoder, path, tokenizer.vocab, tokenizer.lower_case,
                          metadata={**(metadata or {}), "task": block},
                          preprocessor=preprocessor, write_extra=head_and_labels)


def save_head_weights(layers, path: str) -> None:
    """Writes each layer's weights to `path` (HDF5: group per layer name, dataset per index)."""
    with h5py.File(path, "w") as f:
        for layer in layers:
            group = f.create_group(layer.name)
            for i, weight in enumerate(layer.weights):
                dataset = group.create_dataset(str(i), data=np.asarray(weight.numpy()))
                dataset.attrs["path"] = weight.path


def load_head_weights(layers, path: str) -> None:
    """Sets each layer's weights from `save_head_weights` output, checking names and shapes."""
    if not os.path.exists(path):
        raise FileNotFoundError(f"{os.path.dirname(path)}: no {HEAD_WEIGHTS} for the task head")
    with h5py.File(path, "r") as f:
        stored = set(f.keys())
        expected = {layer.name for layer in layers}
        if stored != expected:
            raise ValueError(f"{path}: head layers {sorted(stored)} do not match the model's "
                             f"{sorted(expected)}")
        for layer in layers:
            group = f[layer.name]
            if len(group) != len(layer.weights):
                raise ValueError(f"{path}: layer {layer.name!r} has {len(group)} stored "
                                 f"weights, the model has {len(layer.weights)}")
            values = [group[str(i)][()] for i in range(len(layer.weights))]
            for weight, value in zip(layer.weights, values, strict=True):
                if tuple(weight.shape) != value.shape:
                    raise ValueError(f"{path}: {weight.path} has shape {tuple(weight.shape)} "
                                     f"in the model but {value.shape} in the file")
            layer.set_weights(values)


def export_model(model_dir: str, base_dir: str, rules: str | None = None,
                 precision: str | None = None, format: str = "saved_model", **options):
    """Exports the model directory `model_dir` (read once) as the next version under
    `base_dir`, as `keras-bert export` does; returns the `ExportedModel` (`ExportedLiteRT`).
    `rules`: tokenizer rules to embed instead of the model's own; `precision`: `float32`,
    `bfloat16` or `float16` (None: the one the model was saved in); `format`: `saved_model`
    or `litert`; `options`: those of `keras_bert.export.exporter.write_export`, and the
    kind's own by name (`pooling="mean"`: `TextTaskModel.export_options`)."""
    from keras_bert.export.exporter import EXPORT_PRECISIONS, write_export
    from keras_bert.tasks.export_options import exporter_options
    from keras_bert.tasks.registry import task_class

    if precision is not None and precision not in EXPORT_PRECISIONS:
        raise ValueError(f"precision must be one of {tuple(EXPORT_PRECISIONS)}, got "
                         f"{precision!r}")
    saved = read_task_dir(model_dir, rules)
    if format == "litert" and precision not in (None, "float32"):
        raise ValueError("the LiteRT export computes in float32; choose --quantize "
                         "float16|int8 instead of --precision")
    model = task_class(saved.kind)._restore(saved, EXPORT_PRECISIONS.get(precision))
    return write_export(model, base_dir, format, **exporter_options(model, options))
