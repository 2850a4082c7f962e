"""What a fine-tuning run hands a kind's class: the typed settings of the new head it builds
(`TaskSettings`, for `TextTaskModel.from_settings`) and the columns of its files (`Columns`,
for `TextTaskModel.read_rows`).

`keras_bert.jobs.finetune` fills them from its options, where each setting's default and
help text are written once; the tasks layer reads these fields and no job's. The fields
have no defaults for the same reason: a default here would be a second home for the job's.
"""

from __future__ import annotations

import dataclasses

from keras_bert.config import LongTextReading


@dataclasses.dataclass(frozen=True, kw_only=True)
class Columns:
    """The columns of a CSV, TSV or JSONL file: `text`, `text_b` (the second text of
    sentence pairs; None: single texts) and `label`. CoNLL and SQuAD JSON files have none."""

    text: str
    text_b: str | None
    label: str


@dataclasses.dataclass(frozen=True, kw_only=True)
class TaskSettings:
    """A new head on the encoder of `source`, as `keras-bert finetune` builds it; each kind
    reads the fields it has.

    Every kind: `source` (what `from_pretrained` reads), `seq_length` (the training length),
    `rules` (tokenizer rules; None: the model's own), `precision` (a dtype policy name),
    `seed` (the new head's initial weights), `dropout` (before the head; None: the kind's
    default). Sentence kinds (classify, multilabel, regress): `columns` (a pair model when
    `columns.text_b` is set; `keras-bert predict` reads them by default), `pooling`,
    `reading` (texts longer than `seq_length`). Tag and squad: `doc_stride`. Squad:
    `max_query_length`.
    """

    source: str
    seq_length: int
    rules: str | None
    precision: str | None
    seed: int | None
    dropout: float | None
    columns: Columns
    pooling: str
    reading: LongTextReading
    doc_stride: int | None
    max_query_length: int | None
