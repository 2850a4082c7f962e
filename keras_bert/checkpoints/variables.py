"""Canonical names of a `BertEncoder`'s variables: the common language of the mapping tables.

Each checkpoint format has one table that maps these names to its own. The names follow the
model's structure (`layer_3/attention/query/kernel`), independent of Keras' variable paths.
"""

from __future__ import annotations

import keras

from keras_bert.models.encoder import BertEncoder


def _dense(prefix: str, layer: keras.layers.Dense) -> dict[str, keras.Variable]:
    return {f"{prefix}/kernel": layer.kernel, f"{prefix}/bias": layer.bias}


def _layer_norm(prefix: str, layer: keras.layers.LayerNormalization) -> dict[str, keras.Variable]:
    return {f"{prefix}/gamma": layer.gamma, f"{prefix}/beta": layer.beta}


def encoder_variables(encoder: BertEncoder) -> dict[str, keras.Variable]:
    """All variables of `encoder` by canonical name (kernels are `[in, out]`)."""
    emb = encoder.embeddings
    out = {
        "embeddings/word_embeddings": emb.word_embeddings.embeddings,
        "embeddings/position_embeddings": emb.position_embeddings.embeddings,
        "embeddings/type_embeddings": emb.type_embeddings.embeddings,
        **_layer_norm("embeddings/layer_norm", emb.layer_norm),
    }
    for i, block in enumerate(encoder.blocks):
        att = block.attention
        for part in ("query", "key", "value"):
            out.update(_dense(f"layer_{i}/attention/{part}", getattr(att, part)))
        out.update(_dense(f"layer_{i}/attention/output", att.output_dense))
        out.update(_layer_norm(f"layer_{i}/attention_layer_norm", block.attention_layer_norm))
        out.update(_dense(f"layer_{i}/intermediate", block.intermediate))
        out.update(_dense(f"layer_{i}/output", block.output_dense))
        out.update(_layer_norm(f"layer_{i}/output_layer_norm", block.output_layer_norm))
    out.update(_dense("pooler", encoder.pooler.dense))
    assert len(out) == len(encoder.weights), "encoder_variables() misses a variable"
    return out
