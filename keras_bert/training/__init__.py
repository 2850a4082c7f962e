"""Training: BERT's optimizers (AdamW, LAMB) and schedules, precision, distribution
strategies, resumable checkpoints.

The names below are imported on first use, so that `keras_bert.training.precision` (which
the command line reads for its choices) loads no TensorFlow."""

import importlib

_LAZY = {"Lamb": "keras_bert.training.lamb",
         "ResumableCheckpoint": "keras_bert.training.checkpointing",
         "ResumeMismatch": "keras_bert.training.resume",
         "WarmupPolynomialDecay": "keras_bert.training.schedules",
         "create_optimizer": "keras_bert.training.optimizer",
         "fit_from_step": "keras_bert.training.resume",
         "get_strategy": "keras_bert.training.strategy"}
__all__ = sorted(_LAZY)


def __getattr__(name: str):
    """Imports a public name (`_LAZY`) from its module when first used."""
    if name in _LAZY:
        return getattr(importlib.import_module(_LAZY[name]), name)
    raise AttributeError(f"module 'keras_bert.training' has no attribute {name!r}")
