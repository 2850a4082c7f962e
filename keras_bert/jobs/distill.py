"""`keras-bert distill`: a fine-tuned text classifier teaches a small BERT preset.

`run_distillation(DistillJob(...))` is what the command calls: a fine-tuned classifier
directory as teacher, a freshly initialised BERT preset (`tiny`, `mini`, ...) with the
teacher's vocabulary as student, trained by the `Distiller`
(`keras_bert.tasks.text_classification.distillation`), and teacher vs student accuracy and
forward speed side by side in `metrics.json`.
"""

from __future__ import annotations

import dataclasses
import math
import os
import time

from keras_bert.jobs.options import option


def forward_throughput(model, inputs: dict, repeats: int = 5) -> float:
    """Sequences per second of `model` in inference mode on the batch `inputs` (median).

    The forward pass is one `tf.function` (traced and run once before timing).
    """
    import numpy as np
    import tensorflow as tf


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
    """A distillation run: a fine-tuned classifier directory teaches a small BERT preset.
    Its fields are `keras-bert distill`'s options."""

    teacher: str = option(help="fine-tuned classify model directory (`keras-bert finetune` "
                               "OUT/model)")
    train: str = option(help="training file (CSV, TSV or JSONL)")
    out: str = option(help="output directory")
    eval: str | None = option(None, "evaluation file")
    student_preset: str = option("tiny", "the student's size", choices=(
        "tiny", "mini", "small", "medium"))
    rules: str | None = option(None, "tokenizer rules (google or huggingface; default: the "
                                     "teacher's)", choices=("google", "huggingface"))
    temperature: float = option(2.0, "softening temperature T of both distributions")
    alpha: float = option(0.5, "weight of the hard-label loss")
    text_column: str | None = option(None, "default: the teacher's")
    text_b_column: str | None = option(None, "default: the teacher's")
    label_column: str = option("label", "the label column")
    seq_length: int | None = option(None, "default: the teacher's")
    epochs: int = option(3, "epochs")
    batch_size: int = option(32, "batch size")
    learning_rate: float = option(1e-4, "peak learning rate of AdamW")
    warmup_fraction: float = option(0.1, cli=False)
    speed_batch_size: int = option(32, cli=False)  # sequences per speed measurement
    seed: int = option(12345, "seeds the student and the batch order")
    verbose: int = option(1, cli=False)  # the command's --quiet: 0


def teacher_targets_dataset(teacher, examples, preprocessor, labels, batch_size: int,
                            seed: int):
    """Shuffled batches of `(inputs, {"labels", "teacher_logits"})`.

    The teacher runs once over the examples (inference mode, so its logits are the same
    every epoch) instead of once per training step.
    """
    import tensorflow as tf

    from keras_bert.tasks.text_classification import readers


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
    import keras

    from keras_bert.tasks.task_model import TextTaskModel
    from keras_bert.tasks.text_classification import readers
    from keras_bert.tasks.text_classification.distillation import build_student
    from keras_bert.tasks.text_classification.model import TextClassifier
    from keras_bert.training.json_output import write_json
    from keras_bert.training.plots import plot_history


    start = time.perf_counter()
    os.makedirs(job.out, exist_ok=True)
    keras.utils.set_random_seed(job.seed)
    teacher = TextTaskModel.load(job.teacher, rules=job.rules)
    if type(teacher) is not TextClassifier:
        raise ValueError(f"{job.teacher}: the teacher must be a TextClassifier (classify), "
                         f"got a {type(teacher).__name__}")
    # The teacher's settings (its reading of long texts), on the student's own head.
    config = dataclasses.replace(
        teacher.config, text_column=job.text_column or teacher.config.text_column,
        text_b_column=job.text_b_column or teacher.config.text_b_column,
        pooling="pooled", dropout=None)
    config = dataclasses.replace(config, pair=config.text_b_column is not None)
    # None: the teacher's training length, which its preprocessor holds.
    seq_length = int(job.seq_length or teacher.preprocessor.seq_length
                     or teacher.preprocessor.max_length)
    preprocessor = teacher.preprocessor.with_length(seq_length)
    train = readers.read_examples(job.train, **_columns(job, config, teacher.labels))
    train_ds = teacher_targets_dataset(teacher.network, train, preprocessor, teacher.labels,
                                       job.batch_size, job.seed)
    student = build_student(teacher.network.encoder.config, job.student_preset,
                            len(teacher.labels), seq_length)
    logs = _distill(job, teacher.network, student, train_ds, len(train))
    result = {"temperature": job.temperature, "alpha": job.alpha,
              "student_preset": job.student_preset, "seq_length": seq_length,
              "train_examples": len(train), "epochs": job.epochs,
              **_compare(job, teacher, student, preprocessor, config, train_ds)}
    TextClassifier(student, preprocessor, teacher.labels, config).save(
        os.path.join(job.out, "model"), metadata={
            "distilled_from": os.path.abspath(job.teacher), "student_preset": job.student_preset,
            "temperature": job.temperature, "alpha": job.alpha})
    write_json(os.path.join(job.out, "history.json"), logs)
    plot_history(logs, os.path.join(job.out, "curves.png"),
                 title=f"distillation into BERT-{job.student_preset}")
    result["seconds"] = round(time.perf_counter() - start, 1)
    write_json(os.path.join(job.out, "metrics.json"), result)
    return result


def _columns(job: DistillJob, config, labels) -> dict:
    """How `read_examples` reads the job's files: the student's text columns, the job's
    label column, the teacher's labels."""
    return dict(text_column=config.text_column, text_b_column=config.text_b_column,
                label_column=job.label_column, labels=labels)


def _distill(job: DistillJob, teacher, student, train_ds, examples: int) -> dict:
    """Trains `student` on `teacher`'s soft targets; the epochs' logs."""
    from keras_bert.tasks.text_classification.distillation import Distiller
    from keras_bert.training.backends import default_jit_compile
    from keras_bert.training.optimizer import build_optimizer, create_optimizer


    distiller = Distiller(teacher, student, job.temperature, job.alpha)
    total_steps = math.ceil(examples / job.batch_size) * job.epochs
    distiller.compile(optimizer=create_optimizer(job.learning_rate, total_steps,
                                                 int(job.warmup_fraction * total_steps)),
                      jit_compile=default_jit_compile())
    build_optimizer(distiller)
    history = distiller.fit(train_ds, epochs=job.epochs, verbose=job.verbose, shuffle=False)
    return {k: [float(v) for v in values] for k, values in history.history.items()}


def _compare(job: DistillJob, teacher, student, preprocessor, config, train_ds) -> dict:
    """Teacher and student side by side: parameters, eval accuracy (with `job.eval`) and
    forward speed on one batch, and the student's speedup."""
    import numpy as np

    from keras_bert.tasks.text_classification import readers


    result = {"teacher": {"parameters": int(teacher.network.count_params())},
              "student": {"parameters": int(student.count_params())}}
    networks = (("teacher", teacher.network), ("student", student))
    speed_inputs = None
    if job.eval:
        evaluation = readers.read_examples(job.eval, **_columns(job, config, teacher.labels))
        inputs_ds = readers.classification_dataset(
            evaluation, preprocessor, teacher.labels, batch_size=job.batch_size).map(
            lambda x, y: x)
        gold = readers.encode_labels(evaluation, teacher.labels)
        for name, model in networks:
            predicted = np.argmax(model.predict(inputs_ds, verbose=0), axis=-1)
            result[name]["accuracy"] = float(np.mean(predicted == gold))
        result["eval_examples"] = len(evaluation)
        speed_inputs = _speed_batch(inputs_ds, job.speed_batch_size)
    if speed_inputs is None:
        speed_inputs = _speed_batch(train_ds.map(lambda x, y: x), job.speed_batch_size)
    for name, model in networks:
        result[name]["sequences_per_second"] = forward_throughput(model, speed_inputs)
    result["speed_batch"] = [int(d) for d in speed_inputs["input_word_ids"].shape]
    result["speedup"] = (result["student"]["sequences_per_second"]
                         / result["teacher"]["sequences_per_second"])
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


__all__ = ["DistillJob", "format_comparison", "forward_throughput", "run_distillation",
           "teacher_targets_dataset"]
