"""`TextTextEmbedderConfig`: the typed settings of a text embedder, written into a model
directory's task block by `block` alone and read back by `from_block` alone; and
`EmbedderExportOptions`, what its export takes besides every export's options."""

from __future__ import annotations

import dataclasses

from keras_bert.config import LongTextReading
from keras_bert.tasks.text_embedding.network import EMBEDDER_POOLINGS

# A model directory without an embed block (a plain encoder: converted, pretrained) embeds
# with BERT's pooled output, the TF Hub convention for an encoder's `default` output.
DIRECTORY_POOLING = "pooled"


@dataclasses.dataclass(frozen=True)
class TextEmbedderConfig:
    """`pooling`: one of `EMBEDDER_POOLINGS` (`pooled`, `cls`, `mean`, `concat_last4`);
    `normalize`: L2-normalize the vectors (cosine similarity = dot product); `reading`: how a
    text longer than the sequence length is read (`LongTextReading`: truncated, or in
    windows whose vectors are averaged, each weighted by the word pieces it read, before
    the normalization; its `aggregate` is not used)."""

    pooling: str = DIRECTORY_POOLING
    normalize: bool = False
    reading: LongTextReading = LongTextReading()

    def __post_init__(self):
        if isinstance(self.reading, dict):  # from `dataclasses.asdict` (Keras configs)
            object.__setattr__(self, "reading", LongTextReading(**self.reading))
        if self.pooling not in EMBEDDER_POOLINGS:
            raise ValueError(f"unknown pooling {self.pooling!r}; choose one of "
                             f"{EMBEDDER_POOLINGS}")
        object.__setattr__(self, "normalize", bool(self.normalize))

    def block(self, kind: str, seq_length: int | None, num_classes: int | None = None) -> dict:
        """The model directory's task block (`metadata.task`) for this config."""
        return {"kind": kind, "seq_length": seq_length, "pooling": self.pooling,
                "normalize": self.normalize, "long_text": self.reading.block()}

    @classmethod
    def from_block(cls, block: dict) -> TextEmbedderConfig:
        """The config a task block records (none, or a silent one: `DIRECTORY_POOLING`)."""
        return cls(pooling=block.get("pooling") or DIRECTORY_POOLING,
                   normalize=bool(block.get("normalize", False)),
                   reading=LongTextReading.from_block(block.get("long_text")))


@dataclasses.dataclass(frozen=True)
class EmbedderExportOptions:
    """An embedder's export options (`keras-bert export --pooling`, `export(pooling=...)`):
    `pooling`, the `embedding` output's pooling instead of the model's own (its
    normalization kept); None: the model's."""

    pooling: str | None = None
