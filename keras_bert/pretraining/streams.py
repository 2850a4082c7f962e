"""What `TextPretrainer` trains and is measured on, from either kind of pretraining data:
documents (corpus files or lists of sentences; NSP pairs and masks made on the fly by
`keras_bert.pretraining.dataset`) or `PretrainingRecords` (the TFRecords
`create-pretraining-data` and the Beam pipeline write, read by
`keras_bert.pretraining.tfrecord`).

`training_stream` is the endless stream `fit` trains on, a pure function of the step (a
resumed run skips to its step and sees what the uninterrupted run saw); `held_out_set` is a
fixed evaluation set, the same batches on every pass.
"""

from __future__ import annotations

import dataclasses
import os

import tensorflow as tf

from keras_bert.pretraining.dataset import (
    PretrainingOptions,
    pretraining_dataset,
    tokenize_documents,
)

# TFRecords are shuffled in a buffer of this many examples (from the stream's seed).
SHUFFLE_BUFFER = 10_000


@dataclasses.dataclass(frozen=True)
class PretrainingRecords:
    """TFRecord files of pretraining examples (`pattern`: a file or a glob), as
    `TextPretrainer.fit` / `evaluate` data. Their sequence length and masked predictions
    must be the model's (`seq_length`, `MaskingConfig.max_predictions`)."""

    pattern: str


def as_documents(x) -> list[list[str]]:
    """Documents of sentences from `x`: a corpus file path or a list of them (the formats
    `keras-bert pretrain --corpus` reads), or documents (each a list of sentences, or one
    string with a sentence per line). Blank sentences are dropped; at least two documents
    (NSP's random next sentences come from another one)."""
    from keras_bert.data.corpus import guess_format
    from keras_bert.data.corpus import read_documents as read_file

    if isinstance(x, (str, os.PathLike)):
        x = [x]
    if x is None or isinstance(x, (tf.data.Dataset, PretrainingRecords)):
        raise TypeError("documents are a corpus file path, a list of them, or a list of "
                        "documents (lists of sentences, or strings with one per line)")
    items = list(x)
    if items and all(isinstance(i, (str, os.PathLike)) and os.path.isfile(i) for i in items):
        documents = [d for path in items for d in read_file(str(path), guess_format(str(path)))]
    else:
        documents = []
        for number, item in enumerate(items):
            sentences = item.splitlines() if isinstance(item, str) else item
            if isinstance(sentences, (bytes, dict)) or not all(
                    isinstance(s, str) for s in sentences):
                raise TypeError(f"document {number} is not a list of sentences (strings) "
                                f"nor a string: {type(item).__name__}")
            sentences = [s.strip() for s in sentences if s.strip()]
            if sentences:
                documents.append(sentences)
    if len(documents) < 2:
        raise ValueError(f"pretraining needs at least 2 documents with text, got "
                         f"{len(documents)}")
    return documents


def training_stream(data, tokenizer, batch_size: int, options: PretrainingOptions,
                    steps_per_epoch: int | None = None) -> tuple[tf.data.Dataset, int]:
    """`(stream, steps_per_epoch)`: the endless stream of full batches of `batch_size`
    from `data` (documents: new NSP pairs and masks every pass; records: shuffled, from
    `options.seed`) and the steps of an epoch (`steps_per_epoch`; by default, for
    documents, the full batches of one pass over their NSP pairs)."""
    if isinstance(data, PretrainingRecords):
        if steps_per_epoch is None:
            raise ValueError("TFRecords make an endless stream: give steps_per_epoch")
        stream = _records(data, options, batch_size, shuffle=True)
    else:
        documents = tokenize_documents(as_documents(data), tokenizer)
        stream = pretraining_dataset(documents, tokenizer, batch_size, options, dynamic=True,
                                     drop_remainder=True).repeat()
        if steps_per_epoch is None:
            steps_per_epoch = _pairs_in_one_pass(documents, options) // batch_size
    if int(steps_per_epoch) < 1:
        raise ValueError(f"the documents do not fill one update of {batch_size} examples; "
                         "pass fewer, or give steps_per_epoch")
    return stream, int(steps_per_epoch)


def held_out_set(data, tokenizer, batch_size: int, steps: int, options: PretrainingOptions,
                 whole: bool = False) -> tf.data.Dataset | None:
    """The first `steps` batches of `batch_size` from `data`, the same on every pass (no
    shuffle; documents: the pairs and masks of `options.seed`), with their number declared
    (`keras_bert.pretraining.evaluation.with_known_length`); None when there are none.
    `whole`: the last batch is dropped when partial, so that the stream declares its batch
    size (what Keras' `distribute_dataset` slices each batch per process by)."""
    from keras_bert.pretraining.evaluation import with_known_length

    if isinstance(data, PretrainingRecords):
        dataset = _records(data, options, batch_size, shuffle=False, drop_remainder=whole)
    else:
        tokens = tokenize_documents(as_documents(data), tokenizer)
        dataset = pretraining_dataset(tokens, tokenizer, batch_size, options, dynamic=False,
                                      drop_remainder=whole)
    return with_known_length(dataset.take(int(steps)))


def _records(records: PretrainingRecords, options: PretrainingOptions, batch_size: int,
             shuffle: bool, drop_remainder: bool = False) -> tf.data.Dataset:
    """Training (`shuffle`: shuffled, repeated, full batches) or held-out batches (the last
    one partial unless `drop_remainder`)."""
    from keras_bert.pretraining.tfrecord import read_examples

    if not shuffle:
        return read_examples(records.pattern, options.seq_length, options.max_predictions,
                             batch_size, drop_remainder=drop_remainder)
    return read_examples(records.pattern, options.seq_length, options.max_predictions,
                         batch_size, shuffle_buffer=SHUFFLE_BUFFER, seed=options.seed,
                         repeat=True, drop_remainder=True)


def _pairs_in_one_pass(token_documents, options: PretrainingOptions) -> int:
    """The NSP pairs the first pass over the documents makes (what one epoch holds)."""
    from keras_bert.pretraining.nsp import as_int_documents, create_nsp_examples

    return len(create_nsp_examples(as_int_documents(token_documents), options.seq_length,
                                   options.short_seq_prob, options.dupe_factor,
                                   seed=options.seed))


__all__ = ["SHUFFLE_BUFFER", "PretrainingRecords", "as_documents", "held_out_set",
           "training_stream"]
