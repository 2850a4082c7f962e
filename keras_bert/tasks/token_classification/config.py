"""`TokenClassifierConfig`: the typed settings of a token classifier, written into a model
directory's task block by `block` alone and read back by `from_block` alone."""

from __future__ import annotations

import dataclasses

from keras_bert.config import default_doc_stride

# The length a stride is taken from where the model has no training length.
STRIDE_BASE_LENGTH = 256


@dataclasses.dataclass(frozen=True)
class TokenClassifierConfig:
    """`doc_stride`: how far the windows over a long sentence advance (None: half the
    training length, at most 128); `dropout`: the head's (None: the encoder's
    `hidden_dropout`)."""

    doc_stride: int | None = None
    dropout: float | None = None

    def __post_init__(self):
        if self.doc_stride is not None and int(self.doc_stride) < 1:
            raise ValueError(f"doc_stride must be positive, got {self.doc_stride}")
        if self.dropout is not None and not 0.0 <= float(self.dropout) < 1.0:
            raise ValueError(f"dropout must be in [0, 1), got {self.dropout}")

    def stride_at(self, seq_length: int | None) -> int:
        """How far the windows advance at the training length `seq_length`: this config's
        `doc_stride`, else `default_doc_stride` (of `STRIDE_BASE_LENGTH` where None)."""
        return int(self.doc_stride or default_doc_stride(seq_length or STRIDE_BASE_LENGTH))

    def block(self, kind: str, seq_length: int | None, num_classes: int | None) -> dict:
        """The model directory's task block (`metadata.task`) for this config."""
        return {"kind": kind, "seq_length": seq_length, "num_classes": num_classes,
                "doc_stride": self.stride_at(seq_length), "dropout": self.dropout}

    @classmethod
    def from_block(cls, block: dict) -> TokenClassifierConfig:
        """The config a task block records."""
        return cls(doc_stride=block.get("doc_stride"), dropout=block.get("dropout"))
