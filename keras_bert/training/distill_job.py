"""Knowledge distillation (Hinton et al., 2015): a small student learns a teacher's soft targets.

`Distiller` wraps a frozen teacher and a trainable student (both sequence classifiers taking
the BERT inputs) and trains the student with plain `model.fit` on `(inputs, labels)`:

    loss = alpha * CE(labels, student_logits)
         + (1 - alpha) * T^2 * KL(softmax(teacher_logits / T) || softmax(student_logits / T))

The `T^2` factor keeps the soft term's gradients on the scale of the hard term's as `T`
changes (as in the paper and Keras' distillation example). `run_distillation(DistillJob(...))`
is what `keras-bert distill` calls: a fine-tuned classifier directory as teacher, a freshly
initialised BERT preset (`tiny`, `mini`, ...) with the teacher's vocabulary as student, and
teacher vs student accuracy and forward speed side by side in `metrics.json`.
"""

from __future__ import annotations

import dataclasses
import math
import os
import time

import keras
import numpy as np
import tensorflow as tf
from keras import ops

from keras_bert.checkpoints.task_dir import load_task_model, save_task_model
from keras_bert.config import BertConfig
from keras_bert.models.classifier import BertClassifier
from keras_bert.models.encoder import INPUT_NAMES, BertEncoder
from keras_bert.tasks import readers
from keras_bert.tasks.classification import ClassifyTask
from keras_bert.training.json_output import write_json
from keras_bert.training.optimizer import build_optimizer, create_optimizer
from keras_bert.training.plots import plot_history


def distillation_loss(labels, student_logits, teacher_logits, temperature: float = 2.0,
                      alpha: float = 0.5):
    """`alpha * hard CE + (1 - alpha) * T^2 * KL(teacher_T || student_T)`, batch mean, float32.

    Args:
      labels: int class ids `[batch]` (the hard targets).
      student_logits, teacher_logits: `[batch, classes]`.
      temperature: `T` > 0, softens both distributions.
      alpha: weight of the hard-label term (1 = no distillation, 0 = soft targets only).
    """
    student_logits = ops.cast(student_logits, "float32")
    teacher_logits = ops.stop_gradient(ops.cast(teacher_logits, "float32"))
    hard = ops.mean(ops.sparse_categorical_crossentropy(
        ops.cast(labels, "int32"), student_logits, from_logits=True))
    teacher_p = ops.softmax(teacher_logits / temperature, axis=-1)
    teacher_log_p = ops.log_softmax(teacher_logits / temperature, axis=-1)
    student_log_p = ops.log_softmax(student_logits / temperature, axis=-1)
    kl = ops.mean(ops.sum(teacher_p * (teacher_log_p - student_log_p), axis=-1))
    return alpha * hard + (1.0 - alpha) * temperature ** 2 * kl


class Distiller(keras.Model):
    """Trains `student` on `teacher`'s soft targets mixed with the hard labels.

    `call` returns the student's logits (so `predict`/`evaluate` measure the student);
    `compute_loss` runs the teacher on the same inputs (inference mode, no gradient) and
    returns `distillation_loss`. `y` is the int labels, or a dict with `labels` and
    (optionally, precomputed) `teacher_logits`. Metrics: `accuracy` of the student.

    Args:
      teacher, student: Keras models from the BERT input dict to logits `[batch, classes]`.
      temperature: softening temperature `T`.
      alpha: weight of the hard-label cross-entropy (see `distillation_loss`).
    """

    def __init__(self, teacher, student, temperature: float = 2.0, alpha: float = 0.5,
                 **kwargs):
        super().__init__(**kwargs)
        if temperature <= 0:
            raise ValueError(f"temperature must be positive, got {temperature}")
        if not 0.0 <= alpha <= 1.0:
            raise ValueError(f"alpha must be in [0, 1], got {alpha}")
        self.teacher = teacher
        self.student = student
        self.teacher.trainable = False
        self.temperature = float(temperature)
        self.alpha = float(alpha)
        self.accuracy = keras.metrics.SparseCategoricalAccuracy(name="accuracy")

    def call(self, inputs, training=None):
        """The student's logits."""
        return self.student({name: inputs[name] for name in INPUT_NAMES}, training=training)

    @staticmethod
    def _labels(y):
        return y["labels"] if isinstance(y, dict) else y

    def compute_loss(self, x=None, y=None, y_pred=None, sample_weight=None, training=True):
        """`distillation_loss` of the batch (teacher logits from `y` or from the teacher)."""
        if isinstance(y, dict) and "teacher_logits" in y:
            teacher_logits = y["teacher_logits"]
        else:
            teacher_logits = self.teacher({name: x[name] for name in INPUT_NAMES},
                                          training=False)
        loss = distillation_loss(self._labels(y), y_pred, teacher_logits, self.temperature,
                                 self.alpha)
        if self.student.losses:
            loss = loss + ops.cast(ops.sum(self.student.losses), "float32")
        return loss

    def compute_metrics(self, x, y, y_pred, sample_weight=None):
        """Updates the student's `accuracy`; returns all metrics."""
        self.accuracy.update_state(self._labels(y), y_pred)
        return self.get_metrics_result()


def forward_throughput(model, inputs: dict, repeats: int = 5) -> float:
    """Sequences per second of `model` in inference mode on the batch `inputs` (median).

    The forward pass is one `tf.function` (traced and run once before timing).
    """
    forward = tf.function(lambda batch: model(batch, training=False))
    batch = {k: tf.constant(v) for k, v in inputs.items()}
    tf.nest.map_structure(lambda t: t.numpy(), forward(batch))
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        tf.nest.map_structure(lambda t: t.numpy(), forward(batch))
        times.append(time.perf_counter() - start)
    return len(next(iter(inputs.values()))) / float(np.median(times))


@dataclasses.dataclass
class DistillJob:
    """A distillation run: a fine-tuned classifier directory teaches a small BERT preset."""

    teacher: str  # a fine-tuned classify model directory (`keras-bert finetune` OUT/model)
    train: str
    out: str
    eval: str | None = None
    student_preset: str = "tiny"
    rules: str | None = None  # tokenizer rules; None: the teacher's
    temperature: float = 2.0
    alpha: float = 0.5
    text_column: str | None = None  # None: the teacher's
    text_b_column: str | None = None
    label_column: str = "label"
    seq_length: int | None = None  # None: the teacher's
    epochs: int = 3
    batch_size: int = 32
    learning_rate: float = 1e-4
    warmup_fraction: float = 0.1
    speed_batch_size: int = 32
    seed: int = 12345
    verbose: int = 1


def build_student(teacher_config: BertConfig, preset: str, num_classes: int,
                  seq_length: int) -> BertClassifier:
    """A randomly initialised classifier of size `preset` sharing the teacher's vocabulary."""
    config = BertConfig.from_preset(
        preset, vocab_size=teacher_config.vocab_size,
        type_vocab_size=teacher_config.type_vocab_size,
        max_position_embeddings=max(seq_length, min(512,
                                                    teacher_config.max_position_embeddings)))
    return BertClassifier(BertEncoder(config), num_classes)


def teacher_targets_dataset(teacher, examples, preprocessor, labels, batch_size: int,
                            seed: int) -> tf.data.Dataset:
    """Shuffled batches of `(inputs, {"labels", "teacher_logits"})`.

    The teacher runs once over the examples (inference mode, so its logits are the same
    every epoch) instead of once per training step.
    """
    ordered = readers.classification_dataset(examples, preprocessor, labels,
                                             batch_size=batch_size)
    logits = teacher.predict(ordered.map(lambda x, y: x), verbose=0).astype("float32")
    ds = tf.data.Dataset.zip((ordered.unbatch(), tf.data.Dataset.from_tensor_slices(logits)))
    ds = ds.map(lambda xy, t: (xy[0], {"labels": xy[1], "teacher_logits": t})).cache()
    ds = ds.shuffle(len(examples), seed=seed, reshuffle_each_iteration=True).batch(batch_size)
    return ds.apply(tf.data.experimental.assert_cardinality(
        math.ceil(len(examples) / batch_size)))


def run_distillation(job: DistillJob) -> dict:
    """Distills `job.teacher` into a `job.student_preset` student; writes `job.out`.

    Outputs: `model/` (the student as a fine-tuned classify model directory), `metrics.json`
    (`teacher` and `student`: eval `accuracy`, `sequences_per_second`, `parameters`;
    `speedup`; settings), `history.json`, `curves.png`. Returns the metrics.
    """
    start = time.perf_counter()
    os.makedirs(job.out, exist_ok=True)
    keras.utils.set_random_seed(job.seed)
    loaded = load_task_model(job.teacher, rules=job.rules)
    if not isinstance(loaded.task_kind, ClassifyTask):
        raise ValueError(f"{job.teacher}: the teacher must be a classify model, got "
                         f"{loaded.kind!r}")
    task = loaded.task
    # None: the teacher's training length, which its preprocessor holds.
    seq_length = int(job.seq_length or loaded.preprocessor.seq_length
                     or loaded.preprocessor.max_length)
    text_column = job.text_column or task.get("text_column") or "text"
    text_b_column = job.text_b_column or task.get("text_b_column")
    columns = dict(text_column=text_column, text_b_column=text_b_column,
                   label_column=job.label_column, labels=loaded.labels)
    train = readers.read_examples(job.train, **columns)
    preprocessor = loaded.preprocessor.with_length(seq_length)
    train_ds = teacher_targets_dataset(loaded.model, train, preprocessor, loaded.labels,
                                       job.batch_size, job.seed)
    student = build_student(loaded.model_dir.config, job.student_preset, len(loaded.labels),
                            seq_length)
    distiller = Distiller(loaded.model, student, job.temperature, job.alpha)
    total_steps = math.ceil(len(train) / job.batch_size) * job.epochs
    distiller.compile(optimizer=create_optimizer(job.learning_rate, total_steps,
                                                 int(job.warmup_fraction * total_steps)),
                      jit_compile=False)
    build_optimizer(distiller)
    history = distiller.fit(train_ds, epochs=job.epochs, verbose=job.verbose, shuffle=False)
    logs = {k: [float(v) for v in values] for k, values in history.history.items()}

    result = {"temperature": job.temperature, "alpha": job.alpha,
              "student_preset": job.student_preset, "seq_length": seq_length,
              "train_examples": len(train), "epochs": job.epochs,
              "teacher": {"parameters": int(loaded.model.count_params())},
              "student": {"parameters": int(student.count_params())}}
    speed_inputs = None
    if job.eval:
        evaluation = readers.read_examples(job.eval, **columns)
        eval_ds = readers.classification_dataset(evaluation, preprocessor, loaded.labels,
                                                 batch_size=job.batch_size)
        gold = readers.encode_labels(evaluation, loaded.labels)
        inputs_ds = eval_ds.map(lambda x, y: x)
        for name, model in (("teacher", loaded.model), ("student", student)):
            predicted = np.argmax(model.predict(inputs_ds, verbose=0), axis=-1)
            result[name]["accuracy"] = float(np.mean(predicted == gold))
        result["eval_examples"] = len(evaluation)
        speed_inputs = _speed_batch(inputs_ds, job.speed_batch_size)
    if speed_inputs is None:
        speed_inputs = _speed_batch(train_ds.map(lambda x, y: x), job.speed_batch_size)
    for name, model in (("teacher", loaded.model), ("student", student)):
        result[name]["sequences_per_second"] = forward_throughput(model, speed_inputs)
    result["speed_batch"] = [int(d) for d in speed_inputs["input_word_ids"].shape]
    result["speedup"] = (result["student"]["sequences_per_second"]
                         / result["teacher"]["sequences_per_second"])
    student_task = {**task, "seq_length": seq_length, "text_column": text_column,
                    "text_b_column": text_b_column, "pooling": "pooled", "dropout": None,
                    "pair": text_b_column is not None}
    save_task_model(student, os.path.join(job.out, "model"), loaded.model_dir.vocab_file,
                    loaded.model_dir.lower_case, student_task, loaded.labels,
                    metadata={"distilled_from": loaded.model_dir.path,
                              "student_preset": job.student_preset,
                              "temperature": job.temperature, "alpha": job.alpha},
                    preprocessor=preprocessor)
    write_json(os.path.join(job.out, "history.json"), logs)
    plot_history(logs, os.path.join(job.out, "curves.png"),
                 title=f"distillation into BERT-{job.student_preset}")
    result["seconds"] = round(time.perf_counter() - start, 1)
    write_json(os.path.join(job.out, "metrics.json"), result)
    return result


def _speed_batch(inputs_ds, batch_size: int) -> dict:
    """One full batch (or all there is) of `batch_size` sequences as NumPy arrays."""
    batches = [b for b in inputs_ds.unbatch().batch(batch_size).take(1)]
    return {k: v.numpy() for k, v in batches[0].items()}


def format_comparison(result: dict) -> str:
    """Teacher and student accuracy, speed and size side by side, as a small table."""
    rows = [f"{'':10s}{'accuracy':>10s}{'seq/s':>12s}{'params':>14s}"]
    for name in ("teacher", "student"):
        r = result[name]
        accuracy = f"{r['accuracy']:.4f}" if "accuracy" in r else "-"
        rows.append(f"{name:10s}{accuracy:>10s}{r['sequences_per_second']:>12.1f}"
                    f"{r['parameters']:>14,d}")
    rows.append(f"student is {result['speedup']:.1f}x faster (batch x seq = "
                f"{result['speed_batch'][0]} x {result['speed_batch'][1]})")
    return "\n".join(rows)


__all__ = ["DistillJob", "Distiller", "build_student", "distillation_loss", "format_comparison",
           "forward_throughput", "run_distillation", "teacher_targets_dataset"]
