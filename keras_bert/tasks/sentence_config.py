"""`SentenceTaskConfig`: the typed settings of a sentence-level task model (classify,
regress), written into a model directory's task block by `block` alone."""

from __future__ import annotations

import dataclasses

from keras_bert.models.pooling import POOLING_MODES


@dataclasses.dataclass(frozen=True)
class SentenceTaskConfig:
    """What a sentence (pair) classifier or regressor is, beyond its encoder and labels.

    `pair`: reads `(text, text_b)`; `pooling`: `pooled` (BERT's), `cls` or `mean`;
    `dropout`: the head's dropout (None: the encoder's `hidden_dropout`); `text_column`,
    `text_b_column`: the file columns `keras-bert predict` reads by default.
    """

    pair: bool = False
    pooling: str = "pooled"
    dropout: float | None = None
    text_column: str = "text"
    text_b_column: str | None = None

    def __post_init__(self):
        if self.pooling not in POOLING_MODES:
            raise ValueError(f"unknown pooling {self.pooling!r}; choose one of "
                             f"{POOLING_MODES}")
        if self.dropout is not None and not 0.0 <= float(self.dropout) < 1.0:
            raise ValueError(f"dropout must be in [0, 1), got {self.dropout}")
        if self.pair and self.text_b_column is None:
            object.__setattr__(self, "text_b_column", "text_b")
        if not self.pair and self.text_b_column is not None:
            raise ValueError("text_b_column is set for a model that reads single texts")

    def block(self, kind: str, seq_length: int | None, num_classes: int | None) -> dict:
        """The model directory's task block (`metadata.task`) for this config."""
        block = {"kind": kind, "seq_length": seq_length, "pair": self.pair,
                 "text_column": self.text_column, "text_b_column": self.text_b_column,
                 "pooling": self.pooling, "dropout": self.dropout}
        if num_classes is not None:
            block["num_classes"] = int(num_classes)
        return block

    @classmethod
    def from_block(cls, block: dict) -> SentenceTaskConfig:
        """The config a task block records (older blocks: the defaults where silent)."""
        pair = bool(block.get("pair", False))
        return cls(pair=pair, pooling=block.get("pooling") or "pooled",
                   dropout=block.get("dropout"),
                   text_column=block.get("text_column") or "text",
                   text_b_column=block.get("text_b_column") if pair else None)
