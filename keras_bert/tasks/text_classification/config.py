"""`TextClassificationConfig`: the typed settings of a text classifier or regressor, written
into a model directory's task block by `block` alone and read back by `from_block` alone;
and `MultiLabelConfig`, the same with each label's decision threshold."""

from __future__ import annotations

import dataclasses
import math

from keras_bert.config import POOLING_MODES, LongTextReading
from keras_bert.tasks.text_classification.multilabel_metrics import DEFAULT_THRESHOLD


@dataclasses.dataclass(frozen=True)
class TextClassificationConfig:
    """What a sentence (pair) classifier or regressor is, beyond its encoder and labels.

    `pair`: reads `(text, text_b)`; `pooling`: `pooled` (BERT's), `cls` or `mean`;
    `dropout`: the head's dropout (None: the encoder's `hidden_dropout`); `text_column`,
    `text_b_column`: the file columns `keras-bert predict` reads by default; `reading`: how
    a text longer than the sequence length is read (`LongTextReading`: truncated, or in
    windows whose outputs are aggregated), in training, `predict`, `evaluate` and exports.
    """

    pair: bool = False
    pooling: str = "pooled"
    dropout: float | None = None
    text_column: str = "text"
    text_b_column: str | None = None
    reading: LongTextReading = LongTextReading()

    def __post_init__(self):
        if isinstance(self.reading, dict):  # from `dataclasses.asdict` (Keras configs)
            object.__setattr__(self, "reading", LongTextReading(**self.reading))
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
                 "pooling": self.pooling, "dropout": self.dropout,
                 "long_text": self.reading.block()}
        if num_classes is not None:
            block["num_classes"] = int(num_classes)
        return block

    @classmethod
    def from_block(cls, block: dict) -> TextClassificationConfig:
        """The config a task block records (older blocks: the defaults where silent)."""
        pair = bool(block.get("pair", False))
        return cls(pair=pair, pooling=block.get("pooling") or "pooled",
                   dropout=block.get("dropout"),
                   text_column=block.get("text_column") or "text",
                   text_b_column=block.get("text_b_column") if pair else None,
                   reading=LongTextReading.from_block(block.get("long_text")))


@dataclasses.dataclass(frozen=True)
class MultiLabelConfig(TextClassificationConfig):
    """A multi-label classifier's settings: a `TextClassificationConfig` and `thresholds`, each
    label's decision threshold in label order (None: untuned, `DEFAULT_THRESHOLD` each; the
    task block always lists them, as `keras-bert finetune --task multilabel` writes it)."""

    thresholds: tuple[float, ...] | None = None

    def __post_init__(self):
        super().__post_init__()
        if self.thresholds is not None:
            values = tuple(float(t) for t in self.thresholds)
            if not all(math.isfinite(t) for t in values):
                raise ValueError(f"thresholds must be finite, got {list(values)}")
            object.__setattr__(self, "thresholds", values)

    def block(self, kind: str, seq_length: int | None, num_classes: int | None) -> dict:
        """The sentence block and `thresholds` (one per label)."""
        block = super().block(kind, seq_length, num_classes)
        if num_classes is not None:
            thresholds = self.thresholds or (DEFAULT_THRESHOLD,) * int(num_classes)
            if len(thresholds) != num_classes:
                raise ValueError(f"{len(thresholds)} thresholds for {num_classes} labels")
            block["thresholds"] = list(thresholds)
        return block

    @classmethod
    def from_block(cls, block: dict) -> MultiLabelConfig:
        """The config a task block records, thresholds included."""
        return cls(**dataclasses.asdict(TextClassificationConfig.from_block(block)),
                   thresholds=block.get("thresholds"))
