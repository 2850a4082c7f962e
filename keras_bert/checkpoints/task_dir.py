"""A fine-tuned model directory: a keras_bert model directory plus the task head.

    MODEL_DIR/
      keras_bert.json        config, tokenizer settings, provenance, and `metadata.task`
      vocab.txt              WordPiece vocabulary
      encoder.weights.h5     the fine-tuned `BertEncoder`
      head.weights.h5        the head's weights (one HDF5 group per head layer)
      labels.txt             label names, one per line (classify, multilabel, tag)

`metadata.task` describes the head: `kind` (`classify`, `multilabel`, `regress`, `tag`,
`squad`, `embed`), `seq_length` (the training sequence length), and per kind `num_classes`
and `labels` (classify/multilabel/tag), `thresholds` (multilabel: one per label),
`pooling` (classify, multilabel, embed), `pair` and the text columns
(classify/multilabel/regress), `max_query_length` / `doc_stride` (squad). Everything that reads a
plain model directory (encode, export, fine-tuning from it again) reads this one too.
"""

from __future__ import annotations

import dataclasses
import os
import shutil
from typing import Any

import h5py
import numpy as np

from keras_bert.checkpoints.model_dir import ModelDir, load_model_dir, save_model_dir
from keras_bert.tasks.labels import LABELS_FILENAME, LabelVocab
from keras_bert.tasks.registry import TASK_KINDS, task_kind

HEAD_WEIGHTS = "head.weights.h5"


@dataclasses.dataclass
class TaskModel:
    """What `load_task_model` returns.

    `model`: the Keras task model (`BertClassifier`, `BertTagger`, `BertSpanQA` or
    `BertEmbedder`); `preprocessor`: its `BertPreprocessor` (the one the model was trained
    with: vocabulary, casing, sequence length); `labels`: the `LabelVocab`
    (`None` for regress, squad, embed); `task`: the task metadata (see the module
    docstring); `model_dir`: the underlying `ModelDir`.
    """

    model: Any
    preprocessor: Any
    labels: LabelVocab | None
    task: dict
    model_dir: ModelDir

    @property
    def tokenizer(self):
        """The preprocessor's `BertTokenizer`."""
        return self.preprocessor.tokenizer

    @property
    def kind(self) -> str:
        """The task kind's name (`classify`, `regress`, `tag`, `squad` or `embed`)."""
        return self.task["kind"]

    @property
    def task_kind(self):
        """The task kind (a `keras_bert.tasks.task.Task`): data, metrics, serving, predict."""
        return task_kind(self.kind)

    def serving_module(self, seq_length: int | None = None, max_length: int | None = None,
                       **options):
        """The functions of this model's export (and of `keras-bert predict`): its own
        preprocessor, padded to `seq_length` or to each batch's longest text, truncated at
        `seq_length`, else `max_length`, else the training length. `options` go to the
        task kind (`pooling` for embed, `null_score_threshold` for squad)."""
        preprocessor = self.preprocessor.with_length(
            seq_length, seq_length or max_length or self.preprocessor.max_length)
        return self.task_kind.serving_module(self.model, preprocessor, self.labels, self.task,
                                             **options)


def save_task_model(model, path: str, vocab_file: str, lower_case: bool, task: dict,
                    labels: LabelVocab | None = None,
                    metadata: dict[str, Any] | None = None, preprocessor=None,
                    rules: str | None = None) -> ModelDir:
    """Writes a fine-tuned task model as a model directory (see the module docstring).

    Args:
      model: a task model with `encoder` and `head_layers` (the `keras_bert.models` ones).
      path: the directory (replaced if it is a keras_bert model directory).
      vocab_file, lower_case: the tokenizer the model was trained with.
      task: the task block; it needs `kind` (one of `TASK_KINDS`).
      labels: the label vocabulary (classify, tag).
      metadata: more provenance to record beside `task`.
      preprocessor: the `BertPreprocessor` the model was trained with (its lengths and
        tokenizer rules are recorded; see `keras_bert.checkpoints.model_dir`).
      rules: the tokenizer rules, where no preprocessor is given.

    The directory is assembled beside `path` and renamed into place.
    """
    task_kind(task.get("kind"))  # a known kind, or a ValueError naming them
    path = os.path.abspath(path)
    tmp = f"{path}.task-tmp-{os.getpid()}"
    shutil.rmtree(tmp, ignore_errors=True)
    task = dict(task)
    if labels is not None:
        task["labels"] = labels.names
    save_model_dir(model.encoder, tmp, vocab_file, lower_case,
                   metadata={**(metadata or {}), "task": task}, preprocessor=preprocessor,
                   rules=rules)
    save_head_weights(model.head_layers, os.path.join(tmp, HEAD_WEIGHTS))
    if labels is not None:
        labels.save(os.path.join(tmp, LABELS_FILENAME))
    if os.path.exists(path):
        load_model_dir(path)  # refuses to replace anything but a model directory
        shutil.rmtree(path)
    os.replace(tmp, path)
    return load_model_dir(path)


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


def build_task_model(kind: str, encoder, task: dict, labels: LabelVocab | None):
    """An (untrained-head) task model of `kind` around `encoder`, from a task block."""
    return task_kind(kind).build_model(encoder, task, labels)


def load_task_model(model_dir: str, dtype=None, rules: str | None = None) -> TaskModel:
    """Rebuilds the complete fine-tuned model stored in `model_dir`.

    Returns a `TaskModel`: `.model` (the Keras task model with the encoder and head
    weights loaded; inputs `input_word_ids`, `input_mask`, `input_type_ids`; outputs float32
    logits `[batch, num_classes]` (classify), `[batch, 1]` (regress), `[batch, seq,
    num_tags]` (tag), `{"start_logits", "end_logits"}` (squad) or `[batch, dim]` vectors
    (embed)), `.preprocessor` (the `BertPreprocessor` it was trained with; `.tokenizer`
    is its tokenizer), `.labels` (the `LabelVocab` from
    `labels.txt`, or `None`), `.task` (the task metadata dict) and `.model_dir`.

    `rules` reads the model with other tokenizer rules than those it records.

    A plain model directory (no task block) loads as an `embed` task: a `BertEmbedder` with
    mean pooling (its export's `embedding` defaults to the pooler's output).

    Raises:
      FileNotFoundError: not a model directory, or the head weights / labels are missing.
      ValueError: the stored head does not fit the model the task block describes.
    """
    source = load_model_dir(model_dir).with_rules(rules)
    task = dict(source.metadata.get("task") or {"kind": "embed"})
    kind = task.get("kind")
    labels = None
    labels_path = os.path.join(source.path, LABELS_FILENAME)
    if task_kind(kind).labelled:
        if not os.path.exists(labels_path):
            raise FileNotFoundError(f"{source.path}: a {kind} model directory needs "
                                    f"{LABELS_FILENAME}")
        labels = LabelVocab.load(labels_path)
    model = build_task_model(kind, source.load_encoder(dtype=dtype), task, labels)
    if model.head_layers:
        head_path = os.path.join(source.path, HEAD_WEIGHTS)
        if not os.path.exists(head_path):
            raise FileNotFoundError(f"{source.path}: no {HEAD_WEIGHTS} for the {kind} head")
        load_head_weights(model.head_layers, head_path)
    return TaskModel(model, source.preprocessor(), labels, task, source)


__all__ = ["HEAD_WEIGHTS", "TASK_KINDS", "TaskModel", "build_task_model", "load_head_weights",
           "load_task_model", "save_head_weights", "save_task_model"]
