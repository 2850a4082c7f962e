"""Distributed training job for the strategy tests (run as a subprocess).

    python -m tests.training.dist_job MODE OUT [WORKER_INDEX PORT0 PORT1]

MODE `single` trains on one device, `mirrored` on two logical CPU devices with
`MirroredStrategy`, `worker` is one of two `MultiWorkerMirroredStrategy` processes on
localhost. All train the same BertPretrainer (dropout off) from the same initial weights on
the same global batches, and write the per-step losses and final weights to OUT.
"""

import json
import os
import sys

MODE, OUT = sys.argv[1], sys.argv[2]
if MODE == "worker":
    index, ports = int(sys.argv[3]), sys.argv[4:6]
    os.environ["TF_CONFIG"] = json.dumps({
        "cluster": {"worker": [f"localhost:{p}" for p in ports]},
        "task": {"type": "worker", "index": index}})

import keras  # noqa: E402
import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402

if MODE == "mirrored":
    cpu = tf.config.list_physical_devices("CPU")[0]
    tf.config.set_logical_device_configuration(
        cpu, [tf.config.LogicalDeviceConfiguration()] * 2)

from keras_bert import BertConfig  # noqa: E402
from keras_bert.models import BertPretrainer  # noqa: E402
from keras_bert.training import create_optimizer, get_strategy  # noqa: E402

GLOBAL_BATCH, SEQ, PRED, STEPS = 8, 16, 3, 4
CONFIG = BertConfig(vocab_size=60, hidden_size=16, num_layers=2, num_heads=2,
                    intermediate_size=32, max_position_embeddings=SEQ,
                    hidden_dropout=0.0, attention_dropout=0.0)


def batches():
    rng = np.random.default_rng(0)
    n = GLOBAL_BATCH * STEPS
    ids = rng.integers(5, 60, (n, SEQ)).astype(np.int32)
    return tf.data.Dataset.from_tensor_slices({
        "input_word_ids": ids, "input_mask": np.ones((n, SEQ), np.int32),
        "input_type_ids": (np.arange(SEQ) >= SEQ // 2).astype(np.int32)[None].repeat(n, 0),
        "masked_lm_positions": rng.integers(1, SEQ, (n, PRED)).astype(np.int32),
        "masked_lm_ids": rng.integers(5, 60, (n, PRED)).astype(np.int32),
        "masked_lm_weights": np.ones((n, PRED), np.float32),
        "next_sentence_labels": rng.integers(0, 2, n).astype(np.int32),
    }).batch(GLOBAL_BATCH, drop_remainder=True)


class Losses(keras.callbacks.Callback):
    def __init__(self):
        super().__init__()
        self.values = []

    def on_train_batch_end(self, batch, logs=None):
        self.values.append(float(logs["loss"]))


def main():
    strategy = get_strategy({"single": "default", "mirrored": "mirrored",
                             "worker": "multi_worker"}[MODE])
    assert strategy.num_replicas_in_sync == (1 if MODE == "single" else 2)
    keras.utils.set_random_seed(3)
    with strategy.scope():
        model = BertPretrainer.from_bert_config(CONFIG)
        # No clipping here: Keras (like the original BERT on TPUs) clips each replica's
        # gradients before summing them, so with clipping active the runs legitimately differ.
        model.compile(optimizer=create_optimizer(1e-2, total_steps=STEPS, warmup_steps=0,
                                                 clip_global_norm=None))
    losses = Losses()
    model.fit(batches(), epochs=1, callbacks=[losses], verbose=0)
    os.makedirs(OUT, exist_ok=True)
    name = f"worker{sys.argv[3]}" if MODE == "worker" else MODE
    weights = {f"arr_{i}": v.numpy() for i, v in enumerate(model.trainable_variables)}
    np.savez(os.path.join(OUT, f"{name}.npz"), losses=np.array(losses.values), **weights)


main()
