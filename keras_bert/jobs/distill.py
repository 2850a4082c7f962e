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

from keras_bert.jobs.options import RULES_NAMES, option


def forward_throughput(model, inputs: dict, repeats: int = 5) -> float:
    """Sequences per second of `model` in inference mode on the batch `inputs` (median).

    The forward pass is Keras' compiled predict step (`predict_on_batch`: a `tf.function`
    on TensorFlow, a jitted function on JAX), run once before timing.
    """
    import numpy as np

    model.predict_on_batch(inputs)
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        model.predict_on_batch(inputs)
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
                                     "teacher's)", choices=RULES_NAMES)
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
    train_ds, count = _student_stream(job, teacher, preprocessor, config, train)
    student = build_student(teacher.network.encoder.config, job.student_preset,
                            len(teacher.labels), seq_length)
    logs = _distill(job, teacher.network, student, train_ds, count)
    result = {"temperature": job.temperature, "alpha": job.alpha,
              "student_preset": job.student_preset, "seq_length": seq_length,
              "train_examples": len(train), "epochs": job.epochs,
              **_compare(job, teacher, student, preprocessor, config, train)}
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


def _student_stream(job: DistillJob, teacher, preprocessor, config, train) -> tuple:
    """The student's training batches, cut to their rows' length as a classifier's `fit`
    cuts them, with the teacher's logits; and the examples they hold."""
    from keras_bert.tasks.batches import Batching
    from keras_bert.tasks.text_classification.distillation import teacher_targets_stream
    from keras_bert.tasks.text_classification.model import TextClassifier
    from keras_bert.training.backends import compiles_per_shape, default_jit_compile

    reader = TextClassifier(teacher.network, preprocessor, teacher.labels, config)
    batching = Batching().resolved(preprocessor.seq_length,
                                   compiles_per_shape(default_jit_compile()))
    return teacher_targets_stream(reader, teacher.network, train, job.batch_size, job.seed,
                                  batching)


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
    total_steps = math.ceil(examples / job.batch_size) * job.epochs  # `examples`: windows too
    distiller.compile(optimizer=create_optimizer(job.learning_rate, total_steps,
                                                 int(job.warmup_fraction * total_steps)),
                      jit_compile=default_jit_compile())
    build_optimizer(distiller)
    history = distiller.fit(train_ds, epochs=job.epochs, verbose=job.verbose,
                            steps_per_epoch=math.ceil(examples / job.batch_size))
    return {k: [float(v) for v in values] for k, values in history.history.items()}


def _compare(job: DistillJob, teacher, student, preprocessor, config, train) -> dict:
    """Teacher and student side by side: parameters, eval accuracy (with `job.eval`) and
    forward speed on one batch, and the student's speedup."""
    import numpy as np

    from keras_bert.tasks.text_classification import readers


    result = {"teacher": {"parameters": int(teacher.network.count_params())},
              "student": {"parameters": int(student.count_params())}}
    networks = (("teacher", teacher.network), ("student", student))
    speed_rows = train
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
        speed_rows = evaluation
    # Both at the full sequence length, the shape a served batch of long texts has.
    speed_inputs = _first_batch(readers.classification_dataset(
        speed_rows[:job.speed_batch_size], preprocessor, teacher.labels,
        batch_size=job.speed_batch_size).map(lambda x, y: x))
    for name, model in networks:
        result[name]["sequences_per_second"] = forward_throughput(model, speed_inputs)
    result["speed_batch"] = [int(d) for d in speed_inputs["input_word_ids"].shape]
    result["speedup"] = (result["student"]["sequences_per_second"]
                         / result["teacher"]["sequences_per_second"])
    return result


def _first_batch(inputs_ds) -> dict:
    """The first batch of `inputs_ds` as NumPy arrays."""
    return {k: v.numpy() for k, v in next(iter(inputs_ds)).items()}


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


__all__ = ["DistillJob", "format_comparison", "forward_throughput", "run_distillation"]
