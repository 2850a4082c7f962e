"""MirroredStrategy on 2 logical CPUs (run as a subprocess by `test_static_shapes.py`:
`python -m tests.training.dense_allreduce_job keras|adamw|lamb`): prints which gradient types
reach Keras' cross-replica all-reduce, for Keras' own AdamW or for ours. Sparse
(`IndexedSlices`) embedding gradients make that all-reduce an all-gather, which XLA cannot
compile on GPUs (keras-team/keras#19809); ours must hand it dense ones."""

import sys

import keras
import tensorflow as tf

cpu = tf.config.list_physical_devices("CPU")[0]
tf.config.set_logical_device_configuration(cpu, [tf.config.LogicalDeviceConfiguration()] * 2)

from keras_bert import BertConfig  # noqa: E402
from keras_bert.models import BertPretrainer  # noqa: E402
from keras_bert.training import create_optimizer, get_strategy  # noqa: E402
from tests.training.test_accumulation import _dataset, batches  # noqa: E402

CONFIG = BertConfig(vocab_size=60, hidden_size=16, num_layers=1, num_heads=2,
                    intermediate_size=32, max_position_embeddings=16)


def reduced_types(make_optimizer) -> set[str]:
    seen = set()
    strategy = get_strategy("mirrored")
    with strategy.scope():
        optimizer = make_optimizer()
        reduce = optimizer._all_reduce_sum_gradients

        def recording(grads_and_vars):
            grads_and_vars = list(grads_and_vars)
            seen.update(type(g).__name__ for g, _ in grads_and_vars if g is not None)
            return reduce(grads_and_vars)

        optimizer._all_reduce_sum_gradients = recording
        model = BertPretrainer.from_bert_config(CONFIG)
        model.compile(optimizer=optimizer)
    model.fit(_dataset(batches(CONFIG, count=1, size=8)), epochs=1, verbose=0)
    assert strategy.num_replicas_in_sync == 2
    return seen


# One optimizer per process: two MirroredStrategy runs in one process share collective keys.
if sys.argv[1] == "keras":
    print("keras:", sorted(reduced_types(lambda: keras.optimizers.AdamW(1e-3))))
else:
    print("ours:", sorted(reduced_types(lambda: create_optimizer(1e-3, total_steps=2,
                                                                 optimizer=sys.argv[1]))))
