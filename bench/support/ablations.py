"""Ablations the fit and step benchmarks share: an encoder built with another dropout layer."""

from __future__ import annotations

import contextlib


@contextlib.contextmanager
def encoder_dropout(layer_class):
    """The encoder layers built inside this block use `layer_class` as their dropout (for
    example `keras.layers.Dropout`, what they used before `BertDropout`); None: as shipped."""
    from keras_bert.layers import embeddings, self_attention, transformer_block

    modules = (embeddings, self_attention, transformer_block)
    shipped = [module.BertDropout for module in modules]
    for module in modules:
        module.BertDropout = layer_class or module.BertDropout
    try:
        yield
    finally:
        for module, original in zip(modules, shipped, strict=True):
            module.BertDropout = original
