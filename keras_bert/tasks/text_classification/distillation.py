"""Knowledge distillation (Hinton et al., 2015) of a text classifier: a small student learns a
teacher's soft targets.

`Distiller` wraps a frozen teacher and a trainable student (both sequence classifiers taking
the BERT inputs) and trains the student with plain `model.fit` on `(inputs, labels)`:

    loss = alpha * CE(labels, student_logits)
         + (1 - alpha) * T^2 * KL(softmax(teacher_logits / T) || softmax(student_logits / T))

The `T^2` factor keeps the soft term's gradients on the scale of the hard term's as `T`
changes (as in the paper and Keras' distillation example). `keras-bert distill`
(`keras_bert.jobs.distill`) runs it from a fine-tuned classifier's directory.
"""

from __future__ import annotations

import keras
from keras import ops

from keras_bert.config import BertConfig
from keras_bert.models.encoder import INPUT_NAMES, BertEncoder
from keras_bert.tasks.batches import examples_dataset
from keras_bert.tasks.text_classification.network import BertClassifier


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


def build_student(teacher_config: BertConfig, preset: str, num_classes: int,
                  seq_length: int) -> BertClassifier:
    """A randomly initialised classifier of size `preset` sharing the teacher's vocabulary."""
    config = BertConfig.from_preset(
        preset, vocab_size=teacher_config.vocab_size,
        type_vocab_size=teacher_config.type_vocab_size,
        max_position_embeddings=max(seq_length, min(512,
                                                    teacher_config.max_position_embeddings)))
    return BertClassifier(BertEncoder(config), num_classes)


def teacher_targets_stream(reader, teacher, rows: list, batch_size: int, seed: int,
                           batching) -> tuple:
    """Endless shuffled epochs of `(inputs, {"labels", "teacher_logits"})` batches of
    `rows` and the examples they hold, batched as a classifier's `fit` batches them
    (`batching`: each batch cut to its rows' length; `keras_bert.tasks.batches`).

    `reader`: the `TextClassifier` whose packing the student learns from (its preprocessor
    and reading of long texts). `teacher` (a network) runs once over the examples, in
    inference mode, so its logits are the same every epoch.
    """
    features, labels = reader._examples(rows)
    in_order = examples_dataset(features, labels, batch_size, batching=batching)
    logits = teacher.predict(in_order.map(lambda x, y: x), verbose=0)
    targets = {"labels": labels, "teacher_logits": ops.convert_to_numpy(logits)}
    return examples_dataset(features, targets, batch_size, seed, batching=batching), len(labels)
