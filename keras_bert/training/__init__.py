"""Training: BERT's optimizers (AdamW, LAMB) and schedule, distribution strategies,
resumable checkpoints."""

from keras_bert.training.checkpointing import ResumableCheckpoint
from keras_bert.training.lamb import Lamb
from keras_bert.training.optimizer import create_optimizer
from keras_bert.training.resume import ResumeMismatch, fit_from_step
from keras_bert.training.schedules import WarmupPolynomialDecay
from keras_bert.training.strategy import get_strategy

__all__ = ["Lamb", "ResumableCheckpoint", "ResumeMismatch", "WarmupPolynomialDecay",
           "create_optimizer", "fit_from_step", "get_strategy"]
