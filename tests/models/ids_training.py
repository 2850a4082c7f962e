"""Run in an environment with `keras` and `jax` and no TensorFlow (tests/models/
test_without_tensorflow.py makes it): the encoder, the heads, BERT's optimizers and the
training loop on token ids, as an accelerator image without TensorFlow runs them.

Prints one JSON line: the backend, whether TensorFlow was imported, and each run's losses.
"""

from __future__ import annotations

import json
import sys

import numpy as np

import keras_bert.models  # noqa: F401 - the import under test: no TensorFlow


def _ids(rng, count: int, seq: int, vocab: int) -> dict:
    ids = rng.integers(5, vocab, (count, seq)).astype("int32")
    ids[:, 0] = 2  # [CLS]
    mask = np.ones_like(ids)
    mask[count // 2:, seq - 3:] = 0  # some padding
    return {"input_word_ids": ids * mask, "input_mask": mask,
            "input_type_ids": np.zeros_like(ids)}


def pretraining(rng) -> list[float]:
    """MLM + NSP on ids (a dict of arrays), LAMB, two micro-batches per update."""
    from keras_bert.models import BertPretrainer
    from keras_bert.training.optimizer import create_optimizer

    model = BertPretrainer.from_preset("tiny", vocab_size=64, max_position_embeddings=32)
    model.compile(optimizer=create_optimizer(1e-3, total_steps=4, optimizer="lamb"),
                  accumulation_steps=2)
    batch = _ids(rng, 16, 16, 64)
    batch.update(masked_lm_positions=np.tile(np.arange(1, 4, dtype="int32"), (16, 1)),
                 masked_lm_ids=rng.integers(5, 64, (16, 3)).astype("int32"),
                 masked_lm_weights=np.ones((16, 3), "float32"),
                 next_sentence_labels=rng.integers(0, 2, (16,)).astype("int32"))
    history = model.fit(batch, batch_size=8, epochs=2, verbose=0, shuffle=False)
    assert int(model.optimizer.iterations.numpy()) == 4  # updates, not micro-batches
    return history.history["loss"]


def classification(rng) -> list[float]:
    """A classifier head on ids from a `keras.utils.PyDataset`, BERT's AdamW."""
    import keras

    from keras_bert.models import BertEncoder
    from keras_bert.tasks.text_classification.network import BertClassifier
    from keras_bert.training.optimizer import create_optimizer

    class Batches(keras.utils.PyDataset):
        def __init__(self):
            super().__init__()
            self.inputs = _ids(rng, 32, 16, 64)
            self.labels = (self.inputs["input_word_ids"][:, 1] % 2).astype("int32")

        def __len__(self):
            return 4

        def __getitem__(self, index):
            rows = slice(8 * index, 8 * index + 8)
            return {k: v[rows] for k, v in self.inputs.items()}, self.labels[rows]

    network = BertClassifier(BertEncoder.from_preset("tiny", vocab_size=64,
                                                     max_position_embeddings=32), 2)
    network.compile(optimizer=create_optimizer(1e-3, total_steps=8),
                    loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True),
                    metrics=["accuracy"])
    return network.fit(Batches(), epochs=2, verbose=0).history["loss"]


if __name__ == "__main__":
    import keras

    generator = np.random.default_rng(0)
    result = {"backend": keras.backend.backend(), "pretraining": pretraining(generator),
              "classification": classification(generator),
              "tensorflow_imported": "tensorflow" in sys.modules}
    print(json.dumps(result))
