"""The single-process `create-pretraining-data`: documents -> shuffled, sharded TFRecords.

Makes the same examples as the Beam pipeline (`keras_bert.pretraining.beam_pipeline`) for the same
inputs and seed, one document at a time (`keras_bert.pretraining.document_examples`), then shuffles
them all in memory (by `seed`, as the original) and writes them round-robin over the shards.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Sequence

import numpy as np

from keras_bert.pretraining.dataset import PretrainingOptions, tokenize_documents
from keras_bert.pretraining.document_examples import (
    DEFAULT_POOL_SIZE,
    DocumentExampleMaker,
    RandomNextPool,
    clean_document,
    document_key,
)
from keras_bert.pretraining.tfrecord import write_examples

COUNTERS = ("documents", "examples", "tokens", "masked_positions")


def count_features(features: dict) -> dict:
    """The example counters of one document's examples (all of `COUNTERS` but documents)."""
    return {"examples": len(features["next_sentence_labels"]),
            "tokens": int(np.sum(features["input_mask"])),
            "masked_positions": int(np.sum(features["masked_lm_weights"]))}


def write_pretraining_records(documents: Sequence[Sequence[str]], tokenizer, output: str,
                              num_shards: int = 1,
                              options: PretrainingOptions | None = None,
                              pool_size: int = DEFAULT_POOL_SIZE,
                              progress: Callable[[int], None] | None = None
                              ) -> tuple[list[str], dict]:
    """Writes the pretraining examples of `documents` (lists of sentences); returns the shard
    paths and the counters. `progress(n)` is called after each document with its example
    count."""
    options = options or PretrainingOptions()
    keys = [document_key(d) for d in documents]
    token_documents = [clean_document(d) for d in tokenize_documents(documents, tokenizer)]
    pool = RandomNextPool.smallest(zip(keys, token_documents, strict=True), pool_size)
    maker = DocumentExampleMaker(tokenizer, options)
    counts = dict.fromkeys(COUNTERS, 0)
    parts = []
    for key, document in zip(keys, token_documents, strict=True):
        features = maker(key, document, pool) if document else {}
        counts["documents"] += bool(document)
        if features:
            parts.append(features)
            for name, value in count_features(features).items():
                counts[name] += value
        if progress is not None:
            progress(len(features.get("next_sentence_labels", ())))
    if not parts:
        raise ValueError("the corpus gave no pretraining examples")
    columns = {name: np.concatenate([p[name] for p in parts]) for name in parts[0]}
    order = list(range(counts["examples"]))
    random.Random(options.seed).shuffle(order)
    shuffled = {name: values[order] for name, values in columns.items()}
    paths = write_examples([shuffled], output, num_shards)
    return paths, counts
