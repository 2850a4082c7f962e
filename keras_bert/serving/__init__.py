"""Exporting for TensorFlow Serving; `op_audit` checks a graph against model servers' ops."""

from keras_bert.serving.op_audit import (
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
