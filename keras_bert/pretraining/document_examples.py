"""Pretraining examples made one document at a time, reproducibly: what
`create-pretraining-data` writes, in one process or as an Apache Beam pipeline.

Determinism by construction: a document's examples depend only on the seed, the document and
the pool of random-next documents, never on which worker handles it or in which order:
- the document's key is a hash of its text (`document_key`);
- dupe pass `p` draws its NSP chunks, pairs and truncations from
  `random.Random(f"{seed}/{key}/{p}")`, by the original rules (`keras_bert.pretraining.nsp`);
- all passes are packed and masked in one call of the same `BertPacker` / `BertMasker`
  the training pipeline uses, with the mask seed `[seed, key]`.

Random next segments come from the *pool*: the `pool_size` documents with the smallest keys
(a bottom-k sample: a uniform sample of the corpus, the same whatever the sharding, computed
in Beam by one `Top.Smallest` combine and broadcast as a side input). A document draws from
the pool as the original draws from the whole corpus (uniformly, 10 tries to avoid itself).
When the corpus has at most `pool_size` documents the pool is the whole corpus. Identical
documents share a key and so get identical examples.
"""

from __future__ import annotations

import hashlib
import random
from collections.abc import Iterable, Sequence

import numpy as np
import tensorflow as tf

from keras_bert.pretraining.dataset import PretrainingOptions, packer_and_masker
from keras_bert.pretraining.nsp import DEFAULT_POOL_SIZE, NspExample, examples_from_document

__all__ = ["DEFAULT_POOL_SIZE", "DocumentExampleMaker", "RandomNextPool", "clean_document",
           "document_key", "example_rows"]
TokenDocument = list[list[int]]


def document_key(sentences: Sequence[str]) -> int:
    """A 63-bit key from the text of a document (its sentences)."""
    digest = hashlib.sha256("\n".join(sentences).encode("utf-8", "surrogatepass")).digest()
    return int.from_bytes(digest[:8], "big") >> 1


TOO_FEW_DOCUMENTS = "NSP needs at least 2 different non-empty documents, got {}"


class RandomNextPool:
    """The documents random next segments are drawn from: `(key, token document)` pairs."""

    def __init__(self, keyed_documents: Iterable[tuple[int, TokenDocument]]):
        self.entries = sorted(((k, d) for k, d in keyed_documents if d), key=lambda e: e[0])
        if self.distinct(self.entries) < 2:
            raise ValueError(TOO_FEW_DOCUMENTS.format(len(self.entries)))

    @staticmethod
    def distinct(keyed_documents: Iterable[tuple[int, TokenDocument]]) -> int:
        """How many different non-empty documents there are (NSP needs 2)."""
        return len({key for key, document in keyed_documents if document})

    @classmethod
    def smallest(cls, keyed_documents: Iterable[tuple[int, TokenDocument]],
                 size: int = DEFAULT_POOL_SIZE) -> RandomNextPool:
        """The pool of the `size` documents with the smallest keys."""
        if size < 2:
            raise ValueError(f"the random-next pool needs at least 2 documents, got {size}")
        keyed = sorted(((k, d) for k, d in keyed_documents if d), key=lambda e: e[0])
        return cls(keyed[:size])

    def sampler(self, key: int):
        """`rng -> document`: uniform over the pool, avoiding the document `key` itself."""
        entries = self.entries

        def sample(rng: random.Random) -> TokenDocument:
            for _ in range(10):
                other_key, other = entries[rng.randint(0, len(entries) - 1)]
                if other_key != key:
                    break
            return other
        return sample


def clean_document(token_sentences: Iterable) -> TokenDocument:
    """A tokenized document as lists of Python ints, empty sentences dropped."""
    return [s.tolist() if hasattr(s, "tolist") else list(s) for s in token_sentences if len(s)]


class DocumentExampleMaker:
    """`maker(key, document, pool)`: every pretraining example of one tokenized document
    (all dupe passes), packed and masked, as a dict of NumPy arrays in our feature names
    (`input_word_ids` ... `next_sentence_labels`, one row per example)."""

    def __init__(self, tokenizer, options: PretrainingOptions | None = None):
        self.options = options = options or PretrainingOptions()
        packer, masker = packer_and_masker(tokenizer, options)

        @tf.function(input_signature=[tf.TensorSpec([None], tf.int32),
                                      tf.TensorSpec([None], tf.int64)] * 2
                     + [tf.TensorSpec([2], tf.int64)], reduce_retracing=True)
        def pack_and_mask(flat_a, len_a, flat_b, len_b, seed):
            a = tf.RaggedTensor.from_row_lengths(flat_a, len_a, validate=False)
            b = tf.RaggedTensor.from_row_lengths(flat_b, len_b, validate=False)
            return masker(packer([a, b]), seed)

        self._pack_and_mask = pack_and_mask

    def nsp_examples(self, key: int, document: TokenDocument,
                     pool: RandomNextPool) -> list[NspExample]:
        """The NSP pairs of every dupe pass, each pass from its own `(seed, key, pass)`."""
        options, sample = self.options, pool.sampler(key)
        examples = []
        for dupe in range(options.dupe_factor):
            rng = random.Random(f"{options.seed}/{key}/{dupe}")
            examples.extend(examples_from_document(document, sample, options.seq_length,
                                                   options.short_seq_prob, rng))
        return examples

    def __call__(self, key: int, document: TokenDocument, pool: RandomNextPool) -> dict:
        examples = self.nsp_examples(key, document, pool)
        if not examples:
            return {}
        flat_a = np.fromiter((t for e in examples for t in e.tokens_a), np.int32)
        flat_b = np.fromiter((t for e in examples for t in e.tokens_b), np.int32)
        len_a = np.array([len(e.tokens_a) for e in examples], np.int64)
        len_b = np.array([len(e.tokens_b) for e in examples], np.int64)
        seed = np.array([self.options.seed, key], np.int64)
        features = {k: v.numpy() for k, v in
                    self._pack_and_mask(flat_a, len_a, flat_b, len_b, seed).items()}
        features["next_sentence_labels"] = np.array([e.is_random_next for e in examples],
                                                    np.int32)
        return features


def example_rows(features: dict) -> Iterable[dict]:
    """The rows of a `DocumentExampleMaker` result, one dict per example."""
    count = len(features.get("next_sentence_labels", ()))
    for row in range(count):
        yield {name: values[row] for name, values in features.items()}
