"""The pretraining input pipeline: documents -> NSP pairs -> packed, masked batches.

Tokenization and packing/masking are TensorFlow ops (the same `BertTokenizer`, `BertPacker`
and `BertMasker` that serving uses); the NSP pairing follows the original rules in Python
(`keras_bert.pretraining.nsp`, on int lists converted once per corpus) and hands `tf.data` one whole
epoch at a time, which packs and masks it in chunks of at least 256 pairs and cuts those into
batches. With `dynamic=True` every epoch gets new NSP pairs and new masks, reproducibly from
`seed`.

The batches have the structure the TFRecord reader gives (`keras_bert.pretraining.tfrecord`), so a
model trains on either without change.
"""

from __future__ import annotations

import dataclasses
import itertools
import threading
from collections.abc import Iterable, Sequence

import numpy as np
import tensorflow as tf

from keras_bert.config import DEFAULT_SEQ_LENGTH
from keras_bert.pretraining.nsp import as_int_documents, create_nsp_examples
from keras_bert.text.masker import BertMasker, continuation_flags
from keras_bert.text.packer import BertPacker
from keras_bert.training.stream_options import fit_stream


@dataclasses.dataclass(frozen=True)
class PretrainingOptions:
    """The knobs of `create_pretraining_data.py`, with its defaults."""

    seq_length: int = DEFAULT_SEQ_LENGTH
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


def _epoch_arrays(examples):
    """NSP examples -> `(flat A ids, A lengths, flat B ids, B lengths, labels)` of them all."""
    n = len(examples)
    len_a = np.fromiter((len(e.tokens_a) for e in examples), np.int32, n)
    len_b = np.fromiter((len(e.tokens_b) for e in examples), np.int32, n)
    flat_a = np.fromiter(itertools.chain.from_iterable(e.tokens_a for e in examples),
                         np.int32, int(len_a.sum()))
    flat_b = np.fromiter(itertools.chain.from_iterable(e.tokens_b for e in examples),
                         np.int32, int(len_b.sum()))
    labels = np.fromiter((e.is_random_next for e in examples), np.int32, n)
    return flat_a, len_a, flat_b, len_b, labels


def _nsp_epochs(token_documents, options: PretrainingOptions, dynamic: bool):
    """A generator factory: each call yields one epoch of NSP pairs as `_epoch_arrays`
    (new pairs each call if dynamic; the same, made once, if not).

    The documents are converted to int lists once. When dynamic, the pairs of the next epoch
    are made in a background thread while `tf.data` packs and masks the current one (the
    epoch's number alone fixes its pairs, so the results do not depend on the thread).
    """
    documents = as_int_documents(token_documents)
    epochs = itertools.count()
    ahead: dict[int, _Background] = {}  # dynamic: the next epoch, being made
    static: list = []  # not dynamic: the one epoch, made once

    def make(epoch):
        examples = create_nsp_examples(documents, options.seq_length,
                                       options.short_seq_prob, options.dupe_factor,
                                       seed=options.seed + 1000003 * epoch)
        return _epoch_arrays(examples)

    def generate():
        if not dynamic:
            if not static:
                static.append(make(0))
            yield static[0]
            return
        epoch = next(epochs)
        job = ahead.pop(epoch, None)
        arrays = job.result() if job is not None else make(epoch)
        ahead[epoch + 1] = _Background(make, epoch + 1)
        yield arrays

    return generate


class _Background:
    """`fn(*args)` computed in a daemon thread (it never holds up interpreter exit)."""

    def __init__(self, fn, *args):
        self._outcome = None
        self._thread = threading.Thread(target=self._run, args=(fn, args), daemon=True,
                                        name="nsp-next-epoch")
        self._thread.start()

    def _run(self, fn, args):
        try:
            self._outcome = (fn(*args), None)
        except BaseException as error:  # re-raised in the consumer by `result`
            self._outcome = (None, error)

    def result(self):
        self._thread.join()
        value, error = self._outcome
        if error is not None:
            raise error
        return value


def _chunk_size(batch_size: int) -> int:
    """Examples packed and masked per map call: the smallest multiple of `batch_size` that
    is at least `_MIN_CHUNK` (the map's cost is mostly per call, not per example)."""
    return batch_size * -(-_MIN_CHUNK // batch_size)


_MIN_CHUNK = 256
# Plain tensor code without Python control flow on tensors: no AutoGraph conversion.
_no_autograph = tf.autograph.experimental.do_not_convert
_EPOCH_SIGNATURE = (tf.TensorSpec([None], tf.int32),) * 5


def pretraining_dataset(token_documents: Sequence[Sequence[np.ndarray]], tokenizer,
                        batch_size: int, options: PretrainingOptions = PretrainingOptions(),
                        dynamic: bool = True, drop_remainder: bool = False) -> tf.data.Dataset:
    """Batches of pretraining features from tokenized documents (see `tokenize_documents`),
    with NSP pairs made anew each epoch when `dynamic`.

    Each element is a dict: `input_word_ids`, `input_mask`, `input_type_ids`
    (`[batch, seq_length]`), `masked_lm_positions`, `masked_lm_ids`, `masked_lm_weights`
    (`[batch, max_predictions]`) and `next_sentence_labels` (`[batch]`, 1 = random next).
    Use `drop_remainder=True` for static shapes (TPU, XLA). One pass over the dataset is one
    epoch; `.repeat()` it for more.
    """
    if batch_size < 1:
        raise ValueError(f"batch_size must be positive, got {batch_size}")
    ds = tf.data.Dataset.from_generator(_nsp_epochs(token_documents, options, dynamic),
                                        output_signature=_EPOCH_SIGNATURE)
    return _pack_and_mask(ds, tokenizer, batch_size, options, dynamic, drop_remainder)


def _chunks(ds, chunk: int):
    """Whole epochs of flat NSP arrays -> `(ragged A, ragged B, labels)` of `chunk` pairs."""
    @_no_autograph
    def split(flat_a, len_a, flat_b, len_b, labels):
        a = tf.RaggedTensor.from_row_lengths(flat_a, tf.cast(len_a, tf.int64), validate=False)
        b = tf.RaggedTensor.from_row_lengths(flat_b, tf.cast(len_b, tf.int64), validate=False)

        @_no_autograph
        def take(s):
            return a[s:s + chunk], b[s:s + chunk], labels[s:s + chunk]

        return tf.data.Dataset.from_tensor_slices(tf.range(0, tf.size(labels), chunk)).map(take)

    return ds.flat_map(split)


def packer_and_masker(tokenizer, options: PretrainingOptions) -> tuple[BertPacker, BertMasker]:
    """The `BertPacker` and `BertMasker` of `tokenizer` for `options` (every pretraining
    writer and stream packs and masks with these)."""
    ids = tokenizer.special_token_ids
    masker = BertMasker(
        tokenizer.vocab_size, ids["mask"], special_ids=ids.values(),
        max_predictions=options.max_predictions, mask_rate=options.mask_rate,
        whole_word=options.whole_word,
        continuation=continuation_flags(tokenizer.vocab) if options.whole_word else None)
    return BertPacker.for_tokenizer(tokenizer, options.seq_length), masker


def _pack_and_mask(ds, tokenizer, batch_size, options, dynamic, drop_remainder):
    """Epochs of flat NSP arrays -> batches of packed `[CLS] A [SEP] B [SEP]` inputs with MLM
    masks and labels. Packs and masks chunks of several batches per call, then cuts them
    into `batch_size` batches (one mask seed per chunk)."""
    packer, masker = packer_and_masker(tokenizer, options)
    seeds = tf.data.Dataset.random(seed=options.seed, rerandomize_each_iteration=dynamic)

    @_no_autograph
    def pack_and_mask(pair, seed_pair):
        segment_a, segment_b, labels = pair
        features = masker(packer([segment_a, segment_b]), seed_pair)
        features["next_sentence_labels"] = labels
        return features

    ds = tf.data.Dataset.zip(_chunks(ds, _chunk_size(batch_size)), seeds.batch(2))
    ds = ds.map(pack_and_mask, num_parallel_calls=tf.data.AUTOTUNE)
    return fit_stream(ds.rebatch(batch_size, drop_remainder=drop_remainder)
                      .prefetch(tf.data.AUTOTUNE))
