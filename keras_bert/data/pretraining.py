"""The pretraining input pipeline: documents -> NSP pairs -> packed, masked batches.

Tokenization and packing/masking are TensorFlow ops (the same `BertTokenizer`, `BertPacker`
and `BertMasker` that serving uses); the NSP pairing follows the original rules in Python
(`keras_bert.data.nsp`) and feeds `tf.data` batch by batch. With `dynamic=True` every epoch
gets new NSP pairs and new masks, reproducibly from `seed`.

The batches have the structure the TFRecord reader gives (`keras_bert.data.tfrecord`), so a
model trains on either without change.
"""

from __future__ import annotations

import dataclasses
import itertools
from collections.abc import Iterable, Sequence

import numpy as np
import tensorflow as tf

from keras_bert.data.nsp import create_nsp_examples
from keras_bert.text.masker import BertMasker, continuation_flags
from keras_bert.text.packer import BertPacker


@dataclasses.dataclass(frozen=True)
class PretrainingOptions:
    """The knobs of `create_pretraining_data.py`, with its defaults."""

    seq_length: int = 128
    max_predictions: int = 20
    mask_rate: float = 0.15
    whole_word: bool = False
    short_seq_prob: float = 0.1
    dupe_factor: int = 1
    seed: int = 12345


def tokenize_documents(documents: Iterable[Sequence[str]], tokenizer,
                       batch_size: int = 2048) -> list[list[np.ndarray]]:
    """Documents of sentences -> documents of id arrays, tokenized in large TF batches."""
    documents = [list(doc) for doc in documents]
    sentences = [s for doc in documents for s in doc]
    ids: list[np.ndarray] = []
    for start in range(0, len(sentences), batch_size):
        ragged = tokenizer.tokenize(tf.constant(sentences[start:start + batch_size]))
        values, splits = ragged.flat_values.numpy(), ragged.row_splits.numpy()
        ids.extend(np.split(values, splits[1:-1]))
    out, position = [], 0
    for doc in documents:
        out.append(ids[position:position + len(doc)])
        position += len(doc)
    return out


def _flat_batches(examples, batch_size: int):
    """NSP examples -> (flat A ids, A lengths, flat B ids, B lengths, labels) per batch."""
    for start in range(0, len(examples), batch_size):
        chunk = examples[start:start + batch_size]
        yield (np.concatenate([e.tokens_a for e in chunk]).astype(np.int32),
               np.array([len(e.tokens_a) for e in chunk], np.int32),
               np.concatenate([e.tokens_b for e in chunk]).astype(np.int32),
               np.array([len(e.tokens_b) for e in chunk], np.int32),
               np.array([e.is_random_next for e in chunk], np.int32))


def _nsp_epochs(token_documents, options: PretrainingOptions, batch_size: int, dynamic: bool):
    """A generator factory: each call is one epoch of NSP batches (new pairs if dynamic)."""
    epochs = itertools.count()

    def generate():
        epoch = next(epochs) if dynamic else 0
        examples = create_nsp_examples(token_documents, options.seq_length,
                                       options.short_seq_prob, options.dupe_factor,
                                       seed=options.seed + 1000003 * epoch)
        yield from _flat_batches(examples, batch_size)

    return generate


def pretraining_dataset(token_documents: Sequence[Sequence[np.ndarray]], tokenizer,
                        batch_size: int, options: PretrainingOptions = PretrainingOptions(),
                        dynamic: bool = True, drop_remainder: bool = False) -> tf.data.Dataset:
    """Batches of pretraining features from tokenized documents (see `tokenize_documents`),
    with NSP pairs made anew each epoch when `dynamic`.

    Each element is a dict: `input_word_ids`, `input_mask`, `input_type_ids`
    (`[batch, seq_length]`), `masked_lm_positions`, `masked_lm_ids`, `masked_lm_weights`
    (`[batch, max_predictions]`) and `next_sentence_labels` (`[batch]`, 1 = random next).
    Use `drop_remainder=True` for static shapes (TPU, XLA).
    """
    vector = tf.TensorSpec([None], tf.int32)
    ds = tf.data.Dataset.from_generator(
        _nsp_epochs(token_documents, options, batch_size, dynamic),
        output_signature=(vector, vector, vector, vector, vector))
    return _pack_and_mask(ds, tokenizer, batch_size, options, dynamic, drop_remainder)


def examples_dataset(examples, tokenizer, batch_size: int,
                     options: PretrainingOptions = PretrainingOptions()) -> tf.data.Dataset:
    """Packed, masked batches of fixed NSP examples (one pass, masks seeded by
    `options.seed`): what `create-pretraining-data` writes to TFRecords."""
    vector = tf.TensorSpec([None], tf.int32)
    ds = tf.data.Dataset.from_generator(lambda: _flat_batches(examples, batch_size),
                                        output_signature=(vector,) * 5)
    return _pack_and_mask(ds, tokenizer, batch_size, options, False, False)


def _pack_and_mask(ds, tokenizer, batch_size, options, dynamic, drop_remainder):
    """Flat NSP batches -> packed `[CLS] A [SEP] B [SEP]` inputs with MLM masks and labels."""
    ids = tokenizer.special_token_ids
    packer = BertPacker(options.seq_length, ids["cls"], ids["sep"], ids["pad"])
    masker = BertMasker(
        tokenizer.vocab_size, ids["mask"], special_ids=ids.values(),
        max_predictions=options.max_predictions, mask_rate=options.mask_rate,
        whole_word=options.whole_word,
        continuation=continuation_flags(tokenizer.vocab) if options.whole_word else None)
    if drop_remainder:
        ds = ds.filter(lambda a, la, b, lb, y: tf.shape(la)[0] == batch_size)
    seeds = tf.data.Dataset.random(seed=options.seed, rerandomize_each_iteration=dynamic)

    def pack_and_mask(batch, seed_pair):
        flat_a, len_a, flat_b, len_b, labels = batch
        inputs = packer([tf.RaggedTensor.from_row_lengths(flat_a, len_a),
                         tf.RaggedTensor.from_row_lengths(flat_b, len_b)])
        if drop_remainder:
            inputs = {k: tf.ensure_shape(v, [batch_size, options.seq_length])
                      for k, v in inputs.items()}
        features = masker(inputs, seed_pair)
        features["next_sentence_labels"] = labels
        return features

    ds = tf.data.Dataset.zip(ds, seeds.batch(2))
    return ds.map(pack_and_mask, num_parallel_calls=tf.data.AUTOTUNE).prefetch(
        tf.data.AUTOTUNE)
