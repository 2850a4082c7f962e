"""`FitSchedule`: the optimizer a task model's `fit` builds when compiled without one (BERT's
fine-tuning recipe, sized from the fit's own number of steps)."""

from __future__ import annotations

import dataclasses

from keras_bert.training.optimizer import create_optimizer


@dataclasses.dataclass(frozen=True)
class FitSchedule:
    """BERT's fine-tuning optimizer: AdamW at `learning_rate` after `warmup_fraction` of the
    steps of linear warmup, then linear decay to 0 at the last step; `weight_decay` off
    LayerNorm and biases; gradients clipped at global norm 1.

    The default learning rate is for `fit`'s default of one epoch: all-MiniLM-L6-v2 on 2,000
    Rotten Tomatoes snippets (seq 64, batch 32, 63 steps) scored 0.578 on 1,000 held-out
    snippets at the BERT paper's 5e-5 (majority class 0.575: nothing learned), 0.757 at 1e-4,
    0.777 at 2e-4 and 0.779 at 4e-4 (AMD EPYC Zen 3, 2026-11-26; bench/RESULTS.md). `keras-bert
    finetune` keeps the paper's recipe, 3 epochs at 5e-5 (`FinetuneJob`). Larger models
    (BERT-base, -large) may want less.
    """

    learning_rate: float = 2e-4
    warmup_fraction: float = 0.1
    weight_decay: float = 0.01

    def __post_init__(self):
        if not self.learning_rate > 0:
            raise ValueError(f"learning_rate must be positive, got {self.learning_rate}")
        if not 0.0 <= self.warmup_fraction < 1.0:
            raise ValueError(f"warmup_fraction must be in [0, 1), got {self.warmup_fraction}")

    def optimizer(self, total_steps: int):
        """The optimizer for a fit of `total_steps` steps."""
        return create_optimizer(self.learning_rate, total_steps,
                                int(self.warmup_fraction * total_steps), self.weight_decay)

