"""Pretraining: `TextPretrainer` (masked LM + next sentence prediction on raw documents) and
its data: NSP pairs by the original rules (`nsp`), the `tf.data` pipeline (`dataset`),
TFRecords (`tfrecord`, `record_writer`, `document_examples`), the Apache Beam pipeline
(`beam_pipeline`) and BERT's two phases (`phases`). Corpora are read by
`keras_bert.data.corpus`.

`TextPretrainer` and `MaskingConfig` are imported on first use."""

import importlib

__all__ = ["MaskingConfig", "TextPretrainer"]


def __getattr__(name: str):
    """`TextPretrainer` / `MaskingConfig` (`keras_bert.pretraining.model`), imported when
    first used."""
    if name in __all__:
        return getattr(importlib.import_module("keras_bert.pretraining.model"), name)
    raise AttributeError(f"module 'keras_bert.pretraining' has no attribute {name!r}")
