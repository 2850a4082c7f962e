"""`BertClassifier`: sequence (pair) classification or regression on a `BertEncoder`.

The BERT paper's recipe: dropout, then one dense layer on the pooled output (`[CLS]`
through the pooler's dense + tanh). `num_classes=1` makes it a regression model (one score
per sequence, e.g. STS-B). `[CLS]` of the last layer or the masked mean may be used instead
of the pooled output (`pooling`); sentence-embedding checkpoints such as all-MiniLM-L6-v2
were trained with mean pooling.
"""

from __future__ import annotations

import keras

from keras_bert.config import POOLING_MODES
from keras_bert.models.encoder import BertEncoder
from keras_bert.models.pooling import pooled_vector
from keras_bert.models.task_network import (
    build_from_config,
    check_encoder,
    encoder_policy,
    serialize_encoder,
    task_inputs,
)


@keras.saving.register_keras_serializable(package="keras_bert")
class BertClassifier(keras.Model):
    """Dropout + dense on a pooled `BertEncoder` output: class logits, or a score.

    Inputs: a dict of int32 `[batch, seq]` tensors `input_word_ids`, `input_mask`,
    `input_type_ids`. Output: float32 logits `[batch, num_classes]` (also under mixed
    precision); with `num_classes=1`, `[batch, 1]` regression scores.

    Args:
      encoder: the `BertEncoder` (its weights are fine-tuned with the head).
      num_classes: number of classes; 1 = regression.
      dropout: dropout rate before the dense layer (default: the encoder's
        `hidden_dropout`, 0.1 for BERT).
      pooling: `pooled` (BERT's default), `cls` or `mean` (see `keras_bert.models.pooling`).
    """

    def __init__(self, encoder: BertEncoder, num_classes: int, dropout: float | None = None,
                 pooling: str = "pooled", **kwargs):
        check_encoder(encoder, "BertClassifier")
        if int(num_classes) < 1:
            raise ValueError(f"num_classes must be at least 1, got {num_classes}")
        if pooling not in POOLING_MODES:
            raise ValueError(f"Unknown pooling {pooling!r}; choose one of {POOLING_MODES}")
        config = encoder.config
        dropout = config.hidden_dropout if dropout is None else float(dropout)
        policy = encoder_policy(encoder)
        inputs = task_inputs()
        outputs = encoder(inputs)
        vector = pooled_vector(outputs, inputs["input_mask"], pooling, policy)
        vector = keras.layers.Dropout(dropout, name="head_dropout", dtype=policy)(vector)
        logits = keras.layers.Dense(
            int(num_classes), kernel_initializer=keras.initializers.TruncatedNormal(
                stddev=config.initializer_range), name="logits", dtype="float32")(vector)
        kwargs.setdefault("name", "bert_regressor" if num_classes == 1 else "bert_classifier")
        kwargs.pop("dtype", None)
        super().__init__(inputs=inputs, outputs=logits, **kwargs)
        self.dtype_policy = policy  # `compile` adds loss scaling under mixed_float16
        if pooling != "pooled":
            encoder.pooler.trainable = False  # unused: no gradient would reach it
        self.encoder = encoder
        self.num_classes = int(num_classes)
        self.dropout = dropout
        self.pooling = pooling

    @property
    def is_regression(self) -> bool:
        """Whether this model predicts one score (`num_classes == 1`)."""
        return self.num_classes == 1

    @property
    def head_layers(self) -> list:
        """The layers with weights outside the encoder (saved beside it in a model dir)."""
        return [self.get_layer("logits")]

    def get_config(self):
        """The encoder's config and the head's settings."""
        return {"encoder": serialize_encoder(self.encoder), "num_classes": self.num_classes,
                "dropout": self.dropout, "pooling": self.pooling, "name": self.name,
                "trainable": self.trainable}

    @classmethod
    def from_config(cls, config):
        """Rebuilds the model from `get_config` output."""
        return build_from_config(cls, config)
