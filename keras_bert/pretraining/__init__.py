"""Pretraining: `TextPretrainer` (masked LM + next sentence prediction on raw documents) and
its data: NSP pairs by the original rules (`nsp`), the `tf.data` pipeline (`dataset`),
TFRecords (`tfrecord`, `record_writer`, `document_examples`), the Apache Beam pipeline
(`beam_pipeline`), what `fit` trains and is measured on from either (`streams`,
`evaluation`) and BERT's two phases (`phases`). `building` makes the model's parts and
`fill_mask` its `predict`. Corpora are read by `keras_bert.data.corpus`.

`TextPretrainer` (the engine `keras-bert pretrain` runs), `MaskingConfig` and
`PretrainingRecords` are imported on first use."""

import importlib

__all__ = ["MaskingConfig", "PretrainingRecords", "TextPretrainer"]


def __getattr__(name: str):
    """`TextPretrainer` / `MaskingConfig` / `PretrainingRecords`
    (`keras_bert.pretraining.model`), imported when first used."""
    if name in __all__:
        return getattr(importlib.import_module("keras_bert.pretraining.model"), name)
    raise AttributeError(f"module 'keras_bert.pretraining' has no attribute {name!r}")
