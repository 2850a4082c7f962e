"""Data-parallel fine-tuning with `tf.distribute`: TPU, several GPUs, or one device.

`keras_bert.training.get_strategy("auto")` picks `TPUStrategy` when a TPU is reachable (a
TPU VM, Kaggle, Colab), `MirroredStrategy` with more than one GPU, `MultiWorkerMirrored`
when `TF_CONFIG` names a cluster, else the default single-device strategy. `--quick`
splits the CPU into 2 logical devices and mirrors over them, so the same code path runs on
any laptop. The recipe is plain Keras: build and compile the model inside
`strategy.scope()`, feed `model.fit` global batches (per-replica batch x replicas) of static
shape (`drop_remainder=True`, fixed `seq_length`: what TPUs and XLA need).

Task (embedded data, `keras_bert.data.source_task`): which text a sentence comes from,
Moby-Dick (label `moby_dick`) or the State of the Union addresses (`sotu`); 8-50 word
sentences, deduplicated, split by chapter/speech, as many of each label. Model: a randomly
initialised BERT-Tiny over the embedded 8k vocabulary (`--model DIR` for another, e.g.
`runs/tiny/model` from `keras-bert pretrain`).

    python examples/distributed.py                 # auto-detected strategy, 2 epochs
    python examples/distributed.py --quick         # MirroredStrategy on 2 logical CPUs (tests)

Figures (2 shared CPU cores, busy with other jobs): the full run (default strategy, 2,400
training sentences, 2 epochs, 300 steps, about 3 minutes) reaches 0.711 held-out accuracy
on 1,530 sentences (chance 0.5) from random initialisation (`--model DIR` starts from a
pretrained one). `--quick` (2 replicas, 512 training sentences, 4 epochs = 64 steps at a
peak learning rate of 1e-3, 38 s on AMD EPYC, 2 cores) reaches 0.799 on 512 held-out
sentences; the same run with the training labels shuffled stays at 0.500.
"""

from __future__ import annotations

import argparse
import os

import numpy as np
from _shared import tiny_model_dir


def strategy_for(quick: bool):
    """`MirroredStrategy` over 2 logical CPUs with `quick`, else the detected strategy."""
    import tensorflow as tf

    from keras_bert.training import get_strategy

    if quick:
        cpu = tf.config.list_physical_devices("CPU")[0]
        tf.config.set_logical_device_configuration(
            cpu, [tf.config.LogicalDeviceConfiguration()] * 2)
        return tf.distribute.MirroredStrategy(["/cpu:0", "/cpu:1"])
    return get_strategy("auto")


def book_or_speech(max_per_class: int):
    """`(train, held_out)` `TextExample`s of `keras_bert.data.source_task` (its rule: labels
    by file, deduplicated, split by document, balanced)."""
    from keras_bert.data.source_task import source_task
    from keras_bert.tasks.readers import TextExample

    task = source_task(max_per_class=max_per_class)
    return tuple([TextExample(ex.text, label=ex.label) for ex in task[split]]
                 for split in ("train", "eval"))


def main(argv=None) -> dict:
    """Runs the example; returns the strategy, replica count and held-out accuracy."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default="artifacts/distributed")
    parser.add_argument("--model", help="a keras_bert model directory (default: random Tiny)")
    parser.add_argument("--quick", action="store_true",
                        help="MirroredStrategy on 2 logical CPUs, 512 sentences, 4 epochs")
    parser.add_argument("--learning-rate", type=float,
                        help="peak learning rate before the replica scaling (default 1e-4; "
                             "--quick: 1e-3, so that its 64 steps learn)")
    parser.add_argument("--per-replica-batch", type=int, default=16)
    parser.add_argument("--epochs", type=int, default=2)
    parser.add_argument("--seq-length", type=int, default=64)
    parser.add_argument("--verbose", type=int, default=2)
    args = parser.parse_args(argv)
    strategy = strategy_for(args.quick)  # before TensorFlow touches a device
    replicas = strategy.num_replicas_in_sync
    print(f"strategy: {type(strategy).__name__} with {replicas} replica(s)")

    import keras

    from keras_bert.checkpoints import load_model_dir
    from keras_bert.tasks.labels import LabelVocab
    from keras_bert.tasks.text_classification.network import BertClassifier
    from keras_bert.tasks.text_classification.readers import classification_dataset, encode_labels
    from keras_bert.training import create_optimizer

    keras.utils.set_random_seed(12345)
    train, held_out = book_or_speech(256 if args.quick else 1200)
    epochs = 4 if args.quick else args.epochs
    learning_rate = args.learning_rate or (1e-3 if args.quick else 1e-4)
    model_dir = (load_model_dir(args.model) if args.model
                 else tiny_model_dir(os.path.join(args.out, "tiny")))
    preprocessor = model_dir.preprocessor().with_length(args.seq_length)
    labels = LabelVocab.from_labels(ex.label for ex in train)
    global_batch = args.per_replica_batch * replicas
    train_ds = classification_dataset(train, preprocessor, labels, batch_size=global_batch,
                                      shuffle_seed=1, drop_remainder=True)
    eval_ds = classification_dataset(held_out, preprocessor, labels, batch_size=32)
    steps = (len(train) // global_batch) * epochs
    with strategy.scope():
        model = BertClassifier(model_dir.load_encoder(), len(labels))
        model.compile(optimizer=create_optimizer(learning_rate * replicas ** 0.5, steps,
                                                 steps // 10),
                      loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True),
                      metrics=[keras.metrics.SparseCategoricalAccuracy(name="accuracy")],
                      jit_compile=False)
    model.fit(train_ds, epochs=epochs, steps_per_epoch=steps // epochs, verbose=args.verbose,
              shuffle=False)
    logits = model.predict(eval_ds.map(lambda x, y: x), verbose=0)
    accuracy = float(np.mean(np.argmax(logits, -1) == encode_labels(held_out, labels)))
    print(f"{len(train)} training sentences in global batches of {global_batch} "
          f"({args.per_replica_batch} per replica), {steps} steps")
    print(f"held-out accuracy {accuracy:.4f} on {len(held_out)} sentences "
          f"(chance {max(np.bincount(encode_labels(held_out, labels))) / len(held_out):.4f})")
    return {"strategy": type(strategy).__name__, "replicas": replicas, "accuracy": accuracy}


if __name__ == "__main__":
    main()
