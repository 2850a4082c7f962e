"""The options of the `tf.data` streams that Keras' `fit` and `evaluate` iterate: the task
kinds' batches (`keras_bert.tasks.batches`, the classifier's readers) and the pretraining
batches (`keras_bert.pretraining.dataset`, `keras_bert.pretraining.tfrecord`)."""

from __future__ import annotations

import tensorflow as tf


def fit_stream(dataset: tf.data.Dataset) -> tf.data.Dataset:
    """`dataset` without tf.data's autotuning thread.

    The thread re-tunes the pipeline at a period that doubles up to a minute, and on
    TensorFlow 2.21 destroying the iterator often waited out the period in progress: a
    `fit` of 126 steps (104 s of steps) returned 45 s after its last step, idle (the
    iterator's destructor waiting in the thread's `Model::OptimizeLoop`; AMD EPYC Zen 4, 2
    vCPUs, `bench/fit_speed.py`'s `ours`). Keras destroys one iterator per `fit` and one
    per validation pass. These streams are in-memory slices and light maps that tuning does
    not speed up: their `num_parallel_calls=AUTOTUNE` maps run at tf.data's default
    parallelism and `prefetch(AUTOTUNE)` keeps its own buffer rule, which needs no thread.
    """
    options = tf.data.Options()
    options.autotune.enabled = False
    return dataset.with_options(options)
