"""`QuestionAnswererConfig`: the typed settings of an extractive question answerer, written
into a model directory's task block by `block` alone and read back by `from_block` alone;
and `AnswererExportOptions`, what its export takes besides every export's options."""

from __future__ import annotations

import dataclasses

from keras_bert.config import default_doc_stride, default_max_query_length


@dataclasses.dataclass(frozen=True)
class QuestionAnswererConfig:
    """`max_query_length`: question tokens kept (None: half the training length, at most
    64); `doc_stride`: how far the windows over a long context advance (None: half the
    length, at most 128); `version_2`: questions may have no answer in their context
    (SQuAD v2.0: the model may answer ""); `max_answer_length`: the longest answer, in
    wordpieces, the decoding accepts (the original `run_squad.py`'s 30); `dropout`: the
    dropout before the span head in training (None: none, as in the original)."""

    max_query_length: int | None = None
    doc_stride: int | None = None
    version_2: bool = False
    max_answer_length: int = 30
    dropout: float | None = None

    def __post_init__(self):
        for name in ("max_query_length", "doc_stride", "max_answer_length"):
            value = getattr(self, name)
            if value is not None and int(value) < 1:
                raise ValueError(f"{name} must be positive, got {value}")

    def at_length(self, seq_length: int | None) -> QuestionAnswererConfig:
        """This config with its lengths made explicit at the training length `seq_length`
        (None: 384), checked to leave room for the question."""
        length = int(seq_length or 384)
        query = int(self.max_query_length or default_max_query_length(length))
        if length < query + 4:
            raise ValueError(f"seq_length ({length}) must leave room for the question "
                             f"({query}), 3 special tokens and some context.")
        return dataclasses.replace(self, max_query_length=query, doc_stride=int(
            self.doc_stride or default_doc_stride(length)))

    def block(self, kind: str, seq_length: int | None, num_classes: int | None = None) -> dict:
        """The model directory's task block (`metadata.task`) for this config."""
        config = self.at_length(seq_length)
        return {"kind": kind, "seq_length": seq_length,
                "max_query_length": config.max_query_length, "doc_stride": config.doc_stride,
                "version_2": bool(self.version_2),
                "max_answer_length": int(self.max_answer_length), "dropout": self.dropout}

    @classmethod
    def from_block(cls, block: dict) -> QuestionAnswererConfig:
        """The config a task block records (older blocks: the decoding's default answer
        length)."""
        return cls(max_query_length=block.get("max_query_length"),
                   doc_stride=block.get("doc_stride"),
                   version_2=bool(block.get("version_2", False)),
                   max_answer_length=int(block.get("max_answer_length", 30)),
                   dropout=block.get("dropout"))


@dataclasses.dataclass(frozen=True)
class AnswererExportOptions:
    """A question answerer's export options (`keras-bert export --null-score-threshold`,
    `export(null_score_threshold=...)`): a SQuAD v2.0 answerer answers "" when the null
    score beats the best span by more than `null_score_threshold`."""

    null_score_threshold: float = 0.0

    def __post_init__(self):
        object.__setattr__(self, "null_score_threshold", float(self.null_score_threshold))
