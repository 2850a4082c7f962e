"""`BertQuestionAnswerer`: extractive question answering (SQuAD) on a `BertEncoder`.

The BERT paper's recipe: one dense layer with two outputs on every position of the last
layer, giving a start and an end logit per token. Padding positions (`input_mask == 0`) get
a logit of -10,000 so they never win; restricting answers to the context is left to the
decoder (`serving.py`), which also keeps position 0 ([CLS]) as the
"no answer" of SQuAD v2.0.

Loss (the original `run_squad.py`): the mean of the start and end cross-entropies, with the
targets `start_positions` / `end_positions` of `question_windows.py`.
"""

from __future__ import annotations

import keras
from keras import ops

from keras_bert.models.encoder import BertEncoder
from keras_bert.models.task_network import (
    build_from_config,
    check_encoder,
    encoder_policy,
    serialize_encoder,
    task_inputs,
)
from keras_bert.training import backends

PADDING_LOGIT = -10000.0
TARGET_NAMES = ("start_positions", "end_positions")


@keras.saving.register_keras_serializable(package="keras_bert")
class SpanLogits(keras.layers.Layer):
    """Dense(2) per token -> float32 `(start_logits, end_logits)`, padding masked."""

    def __init__(self, initializer_range: float = 0.02, **kwargs):
        super().__init__(**kwargs)
        self.initializer_range = initializer_range
        self.dense = keras.layers.Dense(
            2, kernel_initializer=keras.initializers.TruncatedNormal(stddev=initializer_range),
            name="dense", dtype=self.dtype_policy)

    def build(self, sequence_shape, input_mask_shape=None):
        """Builds the dense layer for `[batch, seq, hidden]` inputs."""
        self.dense.build(sequence_shape)
        self.built = True

    def call(self, sequence, input_mask):
        """Start and end logits `[batch, seq]` (float32)."""
        logits = self.dense(sequence)
        mask = ops.cast(input_mask, logits.dtype)
        # expand_dims, not `mask[:, :, None]`: LiteRT has no kernel for a new-axis strided
        # slice of a dynamic length (the LiteRT export's network).
        logits = logits + (1.0 - ops.expand_dims(mask, -1)) * PADDING_LOGIT
        return logits[:, :, 0], logits[:, :, 1]

    def compute_output_shape(self, sequence_shape, input_mask_shape=None):
        """Two `[batch, seq]` shapes."""
        return (sequence_shape[:2], sequence_shape[:2])

    def get_config(self):
        """The layer's settings."""
        return {**super().get_config(), "initializer_range": self.initializer_range}


def span_loss(start_positions, end_positions, start_logits, end_logits):
    """Mean of the start and end sparse cross-entropies over the batch (float32)."""
    start = ops.sparse_categorical_crossentropy(
        ops.cast(start_positions, "int32"), ops.cast(start_logits, "float32"), from_logits=True)
    end = ops.sparse_categorical_crossentropy(
        ops.cast(end_positions, "int32"), ops.cast(end_logits, "float32"), from_logits=True)
    return (ops.mean(start) + ops.mean(end)) / 2.0


@keras.saving.register_keras_serializable(package="keras_bert")
class BertQuestionAnswerer(keras.Model):
    """Start/end logits per token: outputs `{"start_logits", "end_logits"}`, float32 `[b, s]`.

    Inputs: a dict of int32 `[batch, seq]` tensors `input_word_ids`, `input_mask`,
    `input_type_ids` (question = segment 0, context = segment 1).

    Training: `compile(optimizer=...)` without a loss (the model brings `span_loss`), then
    `fit` on `(inputs, {"start_positions", "end_positions"})` (or a `(start, end)` pair).
    `dropout`: a dropout rate before the span head in training (None or 0: none, as in BERT's
    SQuAD model and Hugging Face's `BertForQuestionAnswering`).
    """

    def __init__(self, encoder: BertEncoder, dropout: float | None = None, **kwargs):
        check_encoder(encoder, "BertQuestionAnswerer")
        policy = encoder_policy(encoder)
        inputs = task_inputs()
        sequence = encoder(inputs)["sequence_output"]
        rate = 0.0 if dropout is None else float(dropout)
        if rate:  # none by default, as BERT's SQuAD model and HF's have none
            sequence = keras.layers.Dropout(rate, name="head_dropout",
                                            dtype=policy)(sequence)
        start, end = SpanLogits(encoder.config.initializer_range, name="span_logits",
                                dtype="float32")(sequence, inputs["input_mask"])
        kwargs.setdefault("name", "bert_question_answerer")
        kwargs.pop("dtype", None)
        super().__init__(inputs=inputs, outputs={"start_logits": start, "end_logits": end},
                         **kwargs)
        self.dtype_policy = policy
        encoder.pooler.trainable = False  # unused: no gradient would reach it
        self.encoder = encoder
        self.dropout = rate

    @property
    def head_layers(self) -> list:
        """The layers with weights outside the encoder (saved beside it in a model dir)."""
        return [self.get_layer("span_logits")]

    @staticmethod
    def _targets(y):
        if isinstance(y, dict):
            missing = [name for name in TARGET_NAMES if name not in y]
            if missing:
                raise KeyError(f"BertQuestionAnswerer targets lack {missing}; got {sorted(y)}")
            return y["start_positions"], y["end_positions"]
        start, end = y
        return start, end

    def compute_loss(self, x=None, y=None, y_pred=None, sample_weight=None, training=True):
        """`span_loss` of the batch (+ any regularization losses); under a `tf.distribute`
        strategy of several replicas, this replica's share of the global batch's."""
        if y is None:
            raise ValueError("BertQuestionAnswerer needs targets: start_positions and "
                             "end_positions")
        start, end = self._targets(y)
        total = span_loss(start, end, y_pred["start_logits"], y_pred["end_logits"])
        if backends.replicas_in_sync() > 1:  # a tf.distribute strategy: the global mean
            rows = ops.shape(start)[0]
            total = backends.global_mean(total * ops.cast(rows, "float32"), rows)
        if self.losses:  # summed over the replicas as their gradients are
            total = total + ops.cast(ops.sum(self.losses), "float32") / float(
                backends.replicas_in_sync())
        return total

    def get_config(self):
        """The encoder's config and the dropout before the span head."""
        return {"encoder": serialize_encoder(self.encoder), "dropout": self.dropout,
                "name": self.name, "trainable": self.trainable}

    @classmethod
    def from_config(cls, config):
        """Rebuilds the model from `get_config` output."""
        return build_from_config(cls, config)
