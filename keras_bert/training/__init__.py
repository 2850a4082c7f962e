"""Training: BERT's optimizer and schedule, distribution strategies, resumable checkpoints."""

from keras_bert.training.checkpointing import ResumableCheckpoint, skip_consumed
from keras_bert.training.optimizer import create_optimizer
from keras_bert.training.schedules import WarmupPolynomialDecay
from keras_bert.training.strategy import get_strategy

__all__ = ["ResumableCheckpoint", "WarmupPolynomialDecay", "create_optimizer", "get_strategy",
           "skip_consumed"]
