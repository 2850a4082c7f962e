"""`Task`: one class per kind of fine-tuned model (classify, regress, tag, span QA, embed).

A task kind owns everything that differs between kinds: the Keras model around an encoder,
the training data (featurised by the model's one `BertPreprocessor`), loss and metrics, the
evaluation, the functions behind its export's signatures, and the answers of
`keras-bert predict`, which runs those same functions in process. A model directory records
its kind's `name` (`metadata.task.kind`); `keras_bert.tasks.registry.task_kind(name)` maps
it back to the class. Nothing else compares task names.
"""

from __future__ import annotations

from typing import ClassVar

import numpy as np
import tensorflow as tf

PREDICT_BATCH = 32


class Task:
    """One kind of task. Subclasses set `name` and implement the methods below.

    `spec` is the task block of a model directory (`metadata.task`: `kind`, `seq_length`
    and the kind's settings); `labels` a `LabelVocab` or None; `job` a
    `keras_bert.task_models.finetune_job.FinetuneJob` (read for its fields only).
    """

    name: ClassVar[str] = ""
    labelled: ClassVar[bool] = False  # has a label vocabulary (labels.txt)
    finetunable: ClassVar[bool] = True  # `keras-bert finetune --task NAME`
    predictable: ClassVar[bool] = True  # `keras-bert predict` answers for it

    def build_model(self, encoder, spec: dict, labels=None):
        """The task model (untrained head) around `encoder`."""
        raise NotImplementedError

    def read_rows(self, path: str, job, labels=None) -> list:
        """The rows of the training or evaluation file `path` as `job` names its columns
        (`TextExample`, `TaggedSentence`, `SquadExample`: what the kind's task model's
        `rows(x, y)` gives); with `labels`, a row with another label is an error naming the
        file."""
        raise NotImplementedError(f"the {self.name!r} task is not fine-tuned")

    def label_vocab(self, rows: list, source: str):
        """The label vocabulary of the training rows (labelled kinds; `source` names them in
        errors), or None."""
        return None

    def compile(self, model, optimizer) -> None:
        """Compiles `model` with the task's loss and Keras metrics (no XLA)."""
        raise NotImplementedError

    def tuned_spec(self, spec: dict, evaluation: dict | None) -> dict:
        """The task block to save once `evaluation` (the task metrics, or None) is known:
        `spec` itself unless the kind tunes settings on the evaluation set."""
        return spec

    def serving_module(self, model, preprocessor, labels, spec: dict, **options):
        """The functions of the export (a `keras_bert.tasks.serving_module.ServingModule`)."""
        raise NotImplementedError

    def read_inputs(self, source: str, spec: dict, text_column: str | None = None,
                    text_b_column: str | None = None) -> list:
        """Prediction inputs from a file (or `-`, stdin), as the kind reads them."""
        raise NotImplementedError(f"`keras-bert predict` does not answer for {self.name!r}")

    def predict(self, module, inputs: list, batch_size: int = PREDICT_BATCH) -> list[dict]:
        """One JSON-ready answer per input, computed by the export's `serving_default`
        function (`module.text_function()`) in this process."""
        raise NotImplementedError(f"`keras-bert predict` does not answer for {self.name!r}")


def featurise_in_chunks(items: list, chunk_size: int, featurise) -> dict[str, np.ndarray]:
    """`featurise(chunk) -> {name: tensor}` over `items` in chunks of `chunk_size`; the
    rows of each name concatenated in order (windowed tasks: one row per window)."""
    parts: dict[str, list] = {}
    for begin in range(0, len(items), chunk_size):
        for name, value in featurise(items[begin:begin + chunk_size]).items():
            parts.setdefault(name, []).append(np.asarray(value))
    return {name: np.concatenate(values) for name, values in parts.items()}


def epoch_shuffled_batches(tensors, count: int, batch_size: int, seed: int,
                           drop_remainder: bool = False) -> tf.data.Dataset:
    """An endless stream of batches of `tensors` (a nest of arrays with `count` rows):
    epoch after epoch, each in the order of a permutation seeded by `(seed, epoch)`.

    Batch k depends on k alone, not on how many iterators were made before (unlike
    `shuffle(reshuffle_each_iteration=True)`), so a resumed run that skips the batches it
    has trained on sees exactly what the uninterrupted run saw.
    """
    tensors = tf.nest.map_structure(tf.convert_to_tensor, tensors)
    seed = tf.constant(seed, tf.int64)

    def epoch(e):
        order = tf.random.experimental.stateless_shuffle(tf.range(count, dtype=tf.int64),
                                                         seed=tf.stack([seed, e]))
        return tf.data.Dataset.from_tensor_slices(order).batch(batch_size,
                                                               drop_remainder=drop_remainder)

    return tf.data.Dataset.counter().flat_map(epoch).map(
        lambda rows: tf.nest.map_structure(lambda t: tf.gather(t, rows), tensors))


def examples_dataset(inputs: dict, targets, batch_size: int,
                     shuffle_seed: int | None = None,
                     drop_remainder: bool = False) -> tf.data.Dataset:
    """`(inputs, targets)` batches of featurised examples: one pass in order, or, with
    `shuffle_seed`, endless shuffled epochs (`epoch_shuffled_batches`)."""
    if shuffle_seed is not None:
        count = len(tf.nest.flatten(inputs)[0])
        return epoch_shuffled_batches((inputs, targets), count, batch_size, shuffle_seed,
                                      drop_remainder)
    return tf.data.Dataset.from_tensor_slices((inputs, targets)).batch(
        batch_size, drop_remainder=drop_remainder)


def run_in_batches(function, requests: dict[str, list], batch_size: int) -> dict[str, np.ndarray]:
    """`function(**batch)` over `requests` (name -> list of strings) in batches of
    `batch_size`; each output's batches concatenated (padded ones padded to the widest)."""
    count = len(next(iter(requests.values())))
    parts: dict[str, list[np.ndarray]] = {}
    for begin in range(0, count, batch_size):
        batch = {k: tf.constant(v[begin:begin + batch_size], tf.string)
                 for k, v in requests.items()}
        for name, value in function(**batch).items():
            parts.setdefault(name, []).append(value.numpy())
    return {name: _concatenate(values) for name, values in parts.items()}


def _concatenate(values: list[np.ndarray]) -> np.ndarray:
    if values[0].ndim < 2:
        return np.concatenate(values)
    width = max(v.shape[1] for v in values)
    padded = []
    for v in values:
        pad = np.zeros((v.shape[0], width - v.shape[1], *v.shape[2:]), v.dtype)
        padded.append(np.concatenate([v, pad], axis=1))
    return np.concatenate(padded)


def what_was_read(outputs: dict[str, np.ndarray], row: int) -> dict:
    """A sentence-level answer's `num_tokens`, `num_windows` and `truncated` for `row`."""
    return {"num_tokens": int(outputs["num_tokens"][row]),
            "num_windows": int(outputs["num_windows"][row]),
            "truncated": bool(outputs["truncated"][row])}


def text_of(value) -> str:
    """A string output of a serving function as `str`."""
    return value.decode("utf-8") if isinstance(value, bytes) else str(value)
