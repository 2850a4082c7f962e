"""`BertTokenClassifier`: token classification (NER) on a `BertEncoder`.

The BERT paper's recipe: dropout, then one dense layer on every position of the last layer.
Train it with `keras.losses.SparseCategoricalCrossentropy(from_logits=True,
ignore_class=IGNORE_LABEL)` on the labels of `word_windows` (first wordpiece of each word
labelled, the rest ignored).
"""

from __future__ import annotations

import keras

from keras_bert.models.encoder import BertEncoder
from keras_bert.models.task_network import (
    build_from_config,
    check_encoder,
    encoder_policy,
    serialize_encoder,
    task_inputs,
)


@keras.saving.register_keras_serializable(package="keras_bert")
class BertTokenClassifier(keras.Model):
    """Dropout + dense per token: float32 logits `[batch, seq, num_tags]`.

    Inputs: a dict of int32 `[batch, seq]` tensors `input_word_ids`, `input_mask`,
    `input_type_ids`.

    Args:
      encoder: the `BertEncoder`.
      num_tags: number of tags (labels per token).
      dropout: dropout rate before the dense layer (default: the encoder's `hidden_dropout`).
    """

    def __init__(self, encoder: BertEncoder, num_tags: int, dropout: float | None = None,
                 **kwargs):
        check_encoder(encoder, "BertTokenClassifier")
        if int(num_tags) < 1:
            raise ValueError(f"num_tags must be at least 1, got {num_tags}")
        config = encoder.config
        dropout = config.hidden_dropout if dropout is None else float(dropout)
        policy = encoder_policy(encoder)
        inputs = task_inputs()
        sequence = encoder(inputs)["sequence_output"]
        sequence = keras.layers.Dropout(dropout, name="head_dropout", dtype=policy)(sequence)
        logits = keras.layers.Dense(
            int(num_tags), kernel_initializer=keras.initializers.TruncatedNormal(
                stddev=config.initializer_range), name="logits", dtype="float32")(sequence)
        kwargs.setdefault("name", "bert_token_classifier")
        kwargs.pop("dtype", None)
        super().__init__(inputs=inputs, outputs=logits, **kwargs)
        self.dtype_policy = policy
        encoder.pooler.trainable = False  # unused: no gradient would reach it
        self.encoder = encoder
        self.num_tags = int(num_tags)
        self.dropout = dropout

    @property
    def head_layers(self) -> list:
        """The layers with weights outside the encoder (saved beside it in a model dir)."""
        return [self.get_layer("logits")]

    def get_config(self):
        """The encoder's config and the head's settings."""
        return {"encoder": serialize_encoder(self.encoder), "num_tags": self.num_tags,
                "dropout": self.dropout, "name": self.name, "trainable": self.trainable}

    @classmethod
    def from_config(cls, config):
        """Rebuilds the model from `get_config` output."""
        return build_from_config(cls, config)
