"""Exporting for TensorFlow Serving.

`exporter` writes versions (`keras.export.ExportArchive`), `session_bundle` loads one as TF
Serving does (Session, SaverDef restore, `signature_def` tensors), `op_audit` checks op
names against model servers' registries and `runtime_check` loads and runs an export in
another TensorFlow runtime.
"""

from keras_bert.export.op_audit import (
    DEFAULT_TARGET,
    TARGETS,
    AuditReport,
    Target,
    UnsupportedOpError,
    audit,
    check,
    ops_in_concrete_function,
    ops_in_saved_model,
)

__all__ = [
    "DEFAULT_TARGET",
    "TARGETS",
    "AuditReport",
    "Target",
    "UnsupportedOpError",
    "audit",
    "check",
    "ops_in_concrete_function",
    "ops_in_saved_model",
]
