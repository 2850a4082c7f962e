"""MirroredStrategy on 2 logical CPUs with gradient accumulation (run as a subprocess by
`test_accumulation.py`): prints `replicas 2, same weights` when 2 updates of 2 replicas x
K micro-batches end with the weights of one device on the same 2 batches without
accumulation."""

import keras
import numpy as np
import tensorflow as tf

cpu = tf.config.list_physical_devices("CPU")[0]
tf.config.set_logical_device_configuration(cpu, [tf.config.LogicalDeviceConfiguration()] * 2)

from keras_bert import BertConfig  # noqa: E402
from keras_bert.models import BertPretrainer  # noqa: E402
from keras_bert.training import create_optimizer, get_strategy  # noqa: E402
from tests.training.test_accumulation import B, K, _dataset, batches  # noqa: E402

CONFIG = BertConfig(vocab_size=60, hidden_size=16, num_layers=2, num_heads=2,
                    intermediate_size=32, max_position_embeddings=16,
                    hidden_dropout=0.0, attention_dropout=0.0)


def train(strategy, accumulation_steps):
    items = batches(CONFIG, count=2, size=2 * K * B)
    keras.utils.set_random_seed(3)
    with strategy.scope():
        model = BertPretrainer.from_bert_config(CONFIG)
        # No clipping: Keras clips each replica's gradients before the all-reduce (see
        # dist_job.py), with or without accumulation.
        model.compile(optimizer=create_optimizer(1e-2, total_steps=4, warmup_steps=0,
                                                 clip_global_norm=None, optimizer="lamb"),
                      accumulation_steps=accumulation_steps)
    model.fit(_dataset(items), epochs=1, verbose=0)
    assert int(model.optimizer.iterations.numpy()) == 2
    return strategy.num_replicas_in_sync, [v.numpy() for v in model.trainable_variables]


replicas, mirrored = train(get_strategy("mirrored"), K)
_, single = train(get_strategy("default"), 1)
for a, b in zip(single, mirrored, strict=True):
    np.testing.assert_allclose(b, a, rtol=1e-4, atol=1e-5)
print(f"replicas {replicas}, same weights")
