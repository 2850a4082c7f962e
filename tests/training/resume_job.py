"""A small training job for the resume test: run as a subprocess, optionally SIGKILLed.

    python -m tests.training.resume_job OUT_DIR EPOCHS STEPS_PER_EPOCH [KILL_AT_STEP]

It trains a tiny BERT classifier (dropout on) with BERT's optimizer on a deterministic
stream, checkpointing with `ResumableCheckpoint`; at KILL_AT_STEP (a global step in the
middle of an epoch) it kills itself with SIGKILL, as a preempted machine would be.
"""

import os
import signal
import sys

import keras
import numpy as np
import tensorflow as tf

from keras_bert import BertConfig, BertEncoder
from keras_bert.training import ResumableCheckpoint, create_optimizer, fit_from_step

BATCH, SEQ = 8, 12


def stream():
    """An infinite deterministic stream of batches: batch k depends only on k."""
    def make(seed):
        seed = tf.stack([seed, tf.constant(0, tf.int64)])
        ids = tf.random.stateless_uniform([BATCH, SEQ], seed, 0, 50, tf.int32)
        x = {"input_word_ids": ids, "input_mask": tf.ones_like(ids),
             "input_type_ids": tf.zeros_like(ids)}
        return x, tf.cast(ids[:, 1] > 25, tf.int32)
    return tf.data.Dataset.random(seed=7).map(make)


def build():
    keras.utils.set_random_seed(1)
    config = BertConfig(vocab_size=50, hidden_size=16, num_layers=2, num_heads=2,
                        intermediate_size=32, max_position_embeddings=SEQ)
    encoder = BertEncoder(config)
    logits = keras.layers.Dense(2, name="head")(
        keras.layers.Dropout(0.1)(encoder.output["pooled_output"]))
    model = keras.Model(encoder.input, logits)
    model.compile(create_optimizer(1e-3, total_steps=100, warmup_steps=5),
                  keras.losses.SparseCategoricalCrossentropy(from_logits=True))
    return model


class KillAt(keras.callbacks.Callback):
    """SIGKILLs this process after global step `step` (no cleanup, like a preemption)."""

    def __init__(self, step):
        super().__init__()
        self.step = step

    def on_train_batch_end(self, batch, logs=None):
        if int(self.model.optimizer.iterations.numpy()) == self.step:
            os.kill(os.getpid(), signal.SIGKILL)


def main(out, epochs, steps_per_epoch, kill_at=None):
    model = build()
    checkpoint = ResumableCheckpoint(os.path.join(out, "ckpt"))
    state = checkpoint.restore(model)
    callbacks = [checkpoint] + ([KillAt(kill_at)] if kill_at else [])
    fit_from_step(model, stream(), epochs=epochs, steps_per_epoch=steps_per_epoch,
                  start_step=state["step"], callbacks=callbacks, verbose=0)
    variables = list(model.variables) + list(model.optimizer.variables)
    np.savez(os.path.join(out, "final.npz"), *[v.numpy() for v in variables],
             iterations=model.optimizer.iterations.numpy(),
             initial_kernel=build().get_layer("head").kernel.numpy())


if __name__ == "__main__":
    args = sys.argv[1:]
    main(args[0], int(args[1]), int(args[2]), int(args[3]) if len(args) > 3 else None)
