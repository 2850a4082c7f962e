"""`BertEmbedder`: feature extraction, one float32 vector per sequence from a `BertEncoder`.

Poolings:
  * `pooled`: the pooler's output (dense + tanh on `[CLS]`);
  * `cls`: the last layer at `[CLS]`;
  * `mean`: the masked mean of the last layer over real tokens;
  * `concat_last4`: the BERT paper's best feature-based representation (section 5.3): the
    concatenation of the last four layers' outputs, here taken at `[CLS]`, so the vector is
    `concat(encoder_outputs[-4][:, 0], ..., encoder_outputs[-1][:, 0])`, `4 * hidden` wide.
"""

from __future__ import annotations

import keras

from keras_bert.models.encoder import BertEncoder
from keras_bert.models.pooling import ClsToken, pooled_vector
from keras_bert.models.task_network import (
    build_from_config,
    check_encoder,
    encoder_policy,
    serialize_encoder,
    task_inputs,
)

EMBEDDER_POOLINGS = ("pooled", "cls", "mean", "concat_last4")


@keras.saving.register_keras_serializable(package="keras_bert")
class L2Normalize(keras.layers.Layer):
    """Scales each vector to unit L2 norm (cosine similarity = dot product)."""

    def call(self, x):
        """`x / max(||x||, 1e-12)` along the last axis."""
        norm = keras.ops.sqrt(keras.ops.sum(keras.ops.square(x), axis=-1, keepdims=True))
        return x / keras.ops.maximum(norm, 1e-12)


@keras.saving.register_keras_serializable(package="keras_bert")
class BertEmbedder(keras.Model):
    """Sequence vectors `[batch, dim]` (float32) from a `BertEncoder`; see `EMBEDDER_POOLINGS`.

    Inputs: a dict of int32 `[batch, seq]` tensors `input_word_ids`, `input_mask`,
    `input_type_ids`. `dim` is `hidden` (`4 * hidden` for `concat_last4`).

    Args:
      encoder: the `BertEncoder` (it needs at least 4 layers for `concat_last4`).
      pooling: one of `EMBEDDER_POOLINGS`.
      normalize: L2-normalize the vectors.
    """

    def __init__(self, encoder: BertEncoder, pooling: str = "mean", normalize: bool = False,
                 **kwargs):
        check_encoder(encoder, "BertEmbedder")
        if pooling not in EMBEDDER_POOLINGS:
            raise ValueError(f"Unknown pooling {pooling!r}; choose one of {EMBEDDER_POOLINGS}")
        if pooling == "concat_last4" and encoder.config.num_layers < 4:
            raise ValueError(f"concat_last4 needs at least 4 layers; the encoder has "
                             f"{encoder.config.num_layers}")
        policy = encoder_policy(encoder)
        inputs = task_inputs()
        vector = _embedding(encoder(inputs), inputs["input_mask"], pooling, normalize, policy)
        kwargs.setdefault("name", "bert_embedder")
        kwargs.pop("dtype", None)
        super().__init__(inputs=inputs, outputs=vector, **kwargs)
        self.dtype_policy = policy
        self.encoder = encoder
        self.pooling = pooling
        self.normalize = bool(normalize)

    @property
    def head_layers(self) -> list:
        """Layers with weights outside the encoder: none."""
        return []

    def get_config(self):
        """The encoder's config and the pooling."""
        return {"encoder": serialize_encoder(self.encoder), "pooling": self.pooling,
                "normalize": self.normalize, "name": self.name, "trainable": self.trainable}

    @classmethod
    def from_config(cls, config):
        """Rebuilds the model from `get_config` output."""
        return build_from_config(cls, config)


def _embedding(outputs: dict, input_mask, pooling: str, normalize: bool, policy):
    """The vector of symbolic encoder `outputs` by `pooling` (float32, L2-normalized if
    `normalize`)."""
    if pooling == "concat_last4":
        vectors = [ClsToken(name=f"cls_token_{k}", dtype=policy)(layer)
                   for k, layer in enumerate(outputs["encoder_outputs"][-4:])]
        vector = keras.layers.Concatenate(axis=-1, name="concat_last4", dtype=policy)(vectors)
    else:
        vector = pooled_vector(outputs, input_mask, pooling, policy)
    # float32 output, whatever the encoder's precision.
    vector = keras.layers.Activation("linear", name="embedding", dtype="float32")(vector)
    if normalize:
        vector = L2Normalize(name="l2_normalize", dtype="float32")(vector)
    return vector


def embedding_network(embedder: BertEmbedder) -> keras.Model:
    """`{"embedding", "pooled_output"}` from one pass of `embedder`'s encoder: its vector
    (its pooling and normalization) and BERT's pooled output beside it, both float32 (what
    an embedding export serves)."""
    inputs = task_inputs()
    outputs = embedder.encoder(inputs)
    policy = encoder_policy(embedder.encoder)
    vector = _embedding(outputs, inputs["input_mask"], embedder.pooling, embedder.normalize,
                        policy)
    pooled = keras.layers.Activation("linear", name="pooled_output",
                                     dtype="float32")(outputs["pooled_output"])
    return keras.Model(inputs=inputs, outputs={"embedding": vector, "pooled_output": pooled},
                       name="bert_embedding_network")
