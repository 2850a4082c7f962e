"""What the task networks share: their three inputs, the dtype policy their heads run under,
and how their configs carry the encoder."""

from __future__ import annotations

import keras

from keras_bert.models.encoder import INPUT_NAMES, BertEncoder


def task_inputs() -> dict:
    """The three TF Hub-style int32 `[batch, seq]` inputs of a task model."""
    return {name: keras.Input(shape=(None,), dtype="int32", name=name) for name in INPUT_NAMES}


def encoder_policy(encoder: BertEncoder):
    """The dtype policy the encoder's layers run under (mixed precision or float32)."""
    return encoder.embeddings.dtype_policy


def serialize_encoder(encoder: BertEncoder) -> dict:
    """The encoder's Keras config, with the policy its layers were built with."""
    config = keras.saving.serialize_keras_object(encoder)
    config["config"]["dtype"] = keras.dtype_policies.serialize(encoder_policy(encoder))
    return config


def build_from_config(cls, config: dict):
    """`cls(encoder, **rest)` from a task model's `get_config` (the encoder deserialized, the
    dtype taken from the encoder's own policy)."""
    config = dict(config)
    encoder = keras.saving.deserialize_keras_object(config.pop("encoder"))
    config.pop("dtype", None)
    return cls(encoder, **config)


def check_encoder(encoder, model_name: str) -> None:
    """`TypeError` unless `encoder` is a `BertEncoder`."""
    if not isinstance(encoder, BertEncoder):
        raise TypeError(f"{model_name} needs a BertEncoder, got {type(encoder).__name__}")
