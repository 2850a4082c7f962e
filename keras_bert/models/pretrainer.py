"""`BertPretrainer`: a `BertEncoder` with BERT's pretraining heads (masked LM + next sentence).

Trains with plain `model.fit(dataset)` on the batches of `keras_bert.data` (the pretraining
pipeline or the TFRecord reader): each element is one dict holding both the model inputs and
the labels, so the loss and the metrics are computed from `x` (`compute_loss` and
`compute_metrics` are overridden; `train_step` is Keras' own, loss scaling included, or
with `compile(accumulation_steps=K)` `keras_bert.models.accumulation`'s: K micro-batches per
optimizer update).
"""

from __future__ import annotations

import keras
from keras import ops

from keras_bert.config import BertConfig
from keras_bert.layers import BertMaskedLMHead, BertNextSentenceHead
from keras_bert.models.accumulation import accumulated_train_step
from keras_bert.models.encoder import INPUT_NAMES, BertEncoder
from keras_bert.training.backends import distribution_scope, replicas_in_sync
from keras_bert.training.distribution import evaluation_scope

PRETRAINING_INPUT_NAMES = (*INPUT_NAMES, "masked_lm_positions")
LABEL_NAMES = ("masked_lm_ids", "masked_lm_weights", "next_sentence_labels")


def masked_lm_loss(masked_lm_ids, masked_lm_weights, mlm_logits):
    """Cross-entropy averaged over the real predictions, as the original BERT computes it.

    `sum(weights * loss) / (sum(weights) + 1e-5)` over a batch: padding predictions
    (weight 0) count for nothing. Computed in float32.
    """
    weights = ops.cast(masked_lm_weights, "float32")
    per_token = ops.sparse_categorical_crossentropy(
        ops.cast(masked_lm_ids, "int32"), ops.cast(mlm_logits, "float32"), from_logits=True)
    return ops.sum(per_token * weights) / (ops.sum(weights) + 1e-5)


def next_sentence_loss(next_sentence_labels, nsp_logits):
    """Mean cross-entropy of the next sentence prediction (float32)."""
    per_example = ops.sparse_categorical_crossentropy(
        ops.cast(next_sentence_labels, "int32"), ops.cast(nsp_logits, "float32"),
        from_logits=True)
    return ops.mean(per_example)


def _per_replica(loss):
    """`loss / replicas` inside a `tf.distribute` strategy with several replicas."""
    replicas = replicas_in_sync()
    return loss / replicas if replicas > 1 else loss


@keras.saving.register_keras_serializable(package="keras_bert")
class BertPretrainer(keras.Model):
    """BERT's pretraining model: `encoder` + masked LM head (tied) + next sentence head.

    Inputs (a dict; other keys, such as the labels, are ignored by `call`): `input_word_ids`,
    `input_mask`, `input_type_ids` (int `[batch, seq]`) and `masked_lm_positions`
    (int `[batch, P]`). Outputs (a dict of float32 logits): `mlm_logits` `[batch, P, vocab]`
    and `nsp_logits` `[batch, 2]`.

    Training: `compile(optimizer=...)` (no `loss`: the model has its own) then `fit` on a
    dataset of feature dicts that also hold `masked_lm_ids`, `masked_lm_weights` and
    `next_sentence_labels` (the labels may also come as `y`, a dict with those keys). The
    loss is `mlm_loss + nsp_loss_weight * nsp_loss` (the original: weight 1; see
    `masked_lm_loss`, `next_sentence_loss`); the logs also show `mlm_loss`, `nsp_loss`,
    `mlm_accuracy` (weighted by `masked_lm_weights`) and `nsp_accuracy`. Over several
    batches `mlm_loss` and `mlm_accuracy` are averaged per real prediction, `nsp_loss` and
    `nsp_accuracy` per example.

    The dtype policy is the one the encoder's layers use; under `mixed_float16` Keras'
    `compile` wraps the optimizer in a `LossScaleOptimizer`. `pretrainer.encoder` is the
    trained encoder (save it with `keras_bert.checkpoints.save_model_dir`).
    """

    def __init__(self, encoder: BertEncoder, nsp_loss_weight: float = 1.0, **kwargs):
        if not isinstance(encoder, BertEncoder):
            raise TypeError(f"BertPretrainer needs a BertEncoder, got {type(encoder).__name__}; "
                            "use BertPretrainer.from_preset / from_bert_config to build one")
        # The policy the encoder's layers run under (`BertEncoder(config, dtype=...)` gives
        # it to its layers, not to the functional model itself).
        policy = encoder.embeddings.dtype_policy
        kwargs.setdefault("name", "bert_pretrainer")
        kwargs["dtype"] = policy
        super().__init__(**kwargs)
        config = encoder.config
        self.encoder = encoder
        if nsp_loss_weight < 0:
            raise ValueError(f"nsp_loss_weight must be >= 0, got {nsp_loss_weight}")
        self.nsp_loss_weight = float(nsp_loss_weight)
        self.mlm_head = BertMaskedLMHead(
            config.vocab_size, config.hidden_size, embedding=encoder.token_embedding,
            hidden_act=config.hidden_act, layer_norm_epsilon=config.layer_norm_epsilon,
            initializer_range=config.initializer_range, name="mlm_head", dtype=policy)
        self.nsp_head = BertNextSentenceHead(config.hidden_size, config.initializer_range,
                                             name="nsp_head", dtype=policy)
        self.mlm_head.build()
        self.nsp_head.build()
        self.mlm_loss_tracker = keras.metrics.Mean(name="mlm_loss")
        self.nsp_loss_tracker = keras.metrics.Mean(name="nsp_loss")
        self.mlm_accuracy = keras.metrics.SparseCategoricalAccuracy(name="mlm_accuracy")
        self.nsp_accuracy = keras.metrics.SparseCategoricalAccuracy(name="nsp_accuracy")
        self.accumulation_steps = 1
        self.built = True

    @property
    def config(self) -> BertConfig:
        """The encoder's `BertConfig`."""
        return self.encoder.config

    @classmethod
    def from_bert_config(cls, config: BertConfig | dict, dtype=None, **kwargs) -> BertPretrainer:
        """A randomly initialised pretrainer for `config`."""
        return cls(BertEncoder(config, dtype=dtype), **kwargs)

    @classmethod
    def for_vocabulary(cls, preset: str, tokenizer, seq_length: int, dtype=None,
                       nsp_loss_weight: float = 1.0) -> BertPretrainer:
        """A randomly initialised pretrainer of size `preset` over `tokenizer`'s
        vocabulary, its position embeddings `max(512, seq_length)` (room for BERT's phase 2
        at 512)."""
        return cls.from_preset(preset, dtype=dtype, nsp_loss_weight=nsp_loss_weight,
                               vocab_size=tokenizer.vocab_size,
                               max_position_embeddings=max(512, int(seq_length)))

    @classmethod
    def from_preset(cls, name: str, dtype=None, nsp_loss_weight: float = 1.0,
                    **overrides) -> BertPretrainer:
        """A randomly initialised pretrainer of preset size `name` (config fields may be
        overridden)."""
        return cls(BertEncoder.from_preset(name, dtype=dtype, **overrides),
                   nsp_loss_weight=nsp_loss_weight)

    def call(self, inputs, training=None):
        missing = [name for name in PRETRAINING_INPUT_NAMES if name not in inputs]
        if missing:
            raise KeyError(f"BertPretrainer inputs lack {missing}; it needs "
                           f"{list(PRETRAINING_INPUT_NAMES)}")
        encoded = self.encoder({name: inputs[name] for name in INPUT_NAMES}, training=training)
        return {
            "mlm_logits": self.mlm_head(encoded["sequence_output"], inputs["masked_lm_positions"]),
            "nsp_logits": self.nsp_head(encoded["pooled_output"]),
        }

    # ----- training --------------------------------------------------------------------

    def compile(self, optimizer="adam", accumulation_steps: int = 1, **kwargs):
        """As `keras.Model.compile`, without `loss` or `metrics`: the model brings its own.

        `accumulation_steps=K`: each training batch (of K * B examples) is split into K
        micro-batches of B whose gradients are averaged into one update (see
        `keras_bert.models.accumulation`): one `fit` step is one optimizer update.
        """
        for name in ("loss", "loss_weights", "metrics", "weighted_metrics"):
            if kwargs.get(name) is not None:
                raise ValueError(f"BertPretrainer computes its own losses and metrics; do not "
                                 f"pass `{name}` to compile()")
        if int(accumulation_steps) < 1:
            raise ValueError(f"accumulation_steps must be >= 1, got {accumulation_steps}")
        self.accumulation_steps = int(accumulation_steps)
        with distribution_scope(self):  # JAX: the metrics' variables laid out with it
            super().compile(optimizer=optimizer, **kwargs)

    def evaluate(self, *args, **kwargs):
        """`keras.Model.evaluate` (`fit`'s validation too) with each batch whole on JAX:
        a held-out set's partial last batch does not split across devices; under many
        processes in the distribution (`evaluation_scope`: `TextPretrainer.evaluate` runs
        outside any distribution)."""
        with evaluation_scope(fit_batches=True):
            return super().evaluate(*args, **kwargs)

    def train_step(self, *args):
        # `args`: the backend's own signature, `(data,)` on TensorFlow, `(state, data)` on JAX.
        if self.accumulation_steps == 1:
            return super().train_step(*args)
        return accumulated_train_step(self, *args, steps=self.accumulation_steps)

    def compile_from_config(self, config):
        """Re-compiles a loaded `.keras` model (Keras skips this for a custom `compile`)."""
        self.compile(**keras.saving.deserialize_keras_object(config))
        if self.built:
            self.optimizer.build(self.trainable_variables)

    @staticmethod
    def _labels(x, y, sample_weight):
        if sample_weight is not None:
            raise ValueError("BertPretrainer takes no sample_weight: the masked LM is weighted "
                             "by `masked_lm_weights`")
        labels = y if isinstance(y, dict) else x
        missing = [name for name in LABEL_NAMES if name not in labels]
        if missing:
            raise KeyError(f"Pretraining batches lack the labels {missing}")
        return labels

    def compute_loss(self, x=None, y=None, y_pred=None, sample_weight=None, training=True):
        """`mlm_loss + nsp_loss_weight * nsp_loss` (+ any regularization losses), float32.

        Under a `tf.distribute` strategy each replica computes its own batch's loss (the
        original BERT does the same per TPU core) divided by the number of replicas, since
        Keras sums the replicas' gradients.
        """
        labels = self._labels(x, y, sample_weight)
        total = masked_lm_loss(labels["masked_lm_ids"], labels["masked_lm_weights"],
                               y_pred["mlm_logits"])
        total = total + self.nsp_loss_weight * next_sentence_loss(
            labels["next_sentence_labels"], y_pred["nsp_logits"])
        if self.losses:
            total = total + ops.cast(ops.sum(self.losses), "float32")
        return _per_replica(total)

    def compute_metrics(self, x, y, y_pred, sample_weight=None):
        """Updates `mlm_loss`, `nsp_loss`, `mlm_accuracy`, `nsp_accuracy`; returns all metrics."""
        labels = self._labels(x, y, sample_weight)
        ids, nsp_labels = labels["masked_lm_ids"], labels["next_sentence_labels"]
        weights = ops.cast(labels["masked_lm_weights"], "float32")
        self.mlm_loss_tracker.update_state(
            masked_lm_loss(ids, weights, y_pred["mlm_logits"]), sample_weight=ops.sum(weights))
        self.nsp_loss_tracker.update_state(
            next_sentence_loss(nsp_labels, y_pred["nsp_logits"]),
            sample_weight=ops.shape(nsp_labels)[0])
        self.mlm_accuracy.update_state(ids, y_pred["mlm_logits"], sample_weight=weights)
        self.nsp_accuracy.update_state(nsp_labels, y_pred["nsp_logits"])
        return self.get_metrics_result()

    # ----- serialization ---------------------------------------------------------------

    def get_config(self):
        encoder = keras.saving.serialize_keras_object(self.encoder)
        # `BertEncoder.get_config` records the functional model's own policy, which is not
        # the one its layers were built with: record that one.
        encoder["config"]["dtype"] = keras.dtype_policies.serialize(self.dtype_policy)
        return {"encoder": encoder, "nsp_loss_weight": self.nsp_loss_weight, "name": self.name,
                "trainable": self.trainable}

    @classmethod
    def from_config(cls, config):
        config = dict(config)
        encoder = keras.saving.deserialize_keras_object(config.pop("encoder"))
        config.pop("dtype", None)  # the encoder's policy is the model's
        return cls(encoder, **config)
