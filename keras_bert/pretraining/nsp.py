"""Next-sentence-prediction examples from documents, by the rules of BERT's original
`create_pretraining_data.py`:

- every document is cut into chunks of whole sentences that reach a target length
  (`seq_length - 3` tokens, or with probability `short_seq_prob` a random shorter one);
- segment A is a random number of the chunk's first sentences; with probability 1/2 (and
  always when the chunk has one sentence) segment B is taken from a random *other* document
  starting at a random sentence ("random next", label 1) and the unused sentences of the chunk
  are put back for the next chunk; otherwise B is the rest of the chunk (label 0);
- a segment never mixes documents; the pair is cut to `seq_length - 3` tokens by removing
  tokens from the longer segment, from its front or back at random;
- `dupe_factor` passes over the corpus, then the examples are shuffled.

Documents are lists of sentences, each sentence a list of token ids.
"""

from __future__ import annotations

import dataclasses
import random
from collections.abc import Callable, Sequence

from keras_bert.config import DEFAULT_SEQ_LENGTH

Document = Sequence[Sequence[int]]
# Documents random next segments are drawn from when a corpus is made one document at a time
# (`keras_bert.pretraining.document_examples`): the whole corpus up to this size.
DEFAULT_POOL_SIZE = 10_000


@dataclasses.dataclass(frozen=True)
class NspExample:
    """One pretraining pair: segment ids A and B and whether B is a random next segment."""

    tokens_a: list[int]
    tokens_b: list[int]
    is_random_next: bool


def truncate_pair_randomly(tokens_a: list[int], tokens_b: list[int], max_tokens: int,
                           rng: random.Random) -> None:
    """Cuts the pair to `max_tokens` in place, as the original's token-by-token loop: remove
    one token from the longer list (B on a tie), at its front if `rng.random() < 0.5`, else
    at its back. Computed in closed form with the same draws from `rng`."""
    len_a, len_b = len(tokens_a), len(tokens_b)
    excess = len_a + len_b - max_tokens
    if excess <= 0:
        return
    fronts = [rng.random() < 0.5 for _ in range(excess)]  # one draw per removed token
    # Which list each cut hits depends on the lengths only: first the longer one alone
    # until it is the shorter by one (A) or equal (B), then B and A alternately.
    if len_a > len_b:
        first, lead, other = min(excess, len_a - len_b), tokens_a, tokens_b
    else:
        first, lead, other = min(excess, len_b - len_a + 1), tokens_b, tokens_a
    rest = fronts[first:]
    lead_cuts = fronts[:first] + rest[1::2]
    other_cuts = rest[0::2]
    for tokens, cuts in ((lead, lead_cuts), (other, other_cuts)):
        front = sum(cuts)
        back = len(cuts) - front
        del tokens[len(tokens) - back:]
        del tokens[:front]


def random_other_document(documents: Sequence[Document], index: int
                          ) -> Callable[[random.Random], Document]:
    """The original's sampler: a uniformly random document other than `documents[index]`
    (10 tries, as the original, then whatever the last draw gave)."""
    def sample(rng: random.Random) -> Document:
        for _ in range(10):
            other = rng.randint(0, len(documents) - 1)
            if other != index:
                break
        return documents[other]
    return sample


def examples_from_document(document: Document, random_document: Callable[[random.Random],
                                                                          Document],
                           seq_length: int, short_seq_prob: float,
                           rng: random.Random) -> list[NspExample]:
    """The NSP examples of `document`; `random_document(rng)` supplies the document a
    random next segment is taken from (see `random_other_document`)."""
    max_tokens = seq_length - 3  # [CLS] A [SEP] B [SEP]
    target = max_tokens
    if rng.random() < short_seq_prob:
        target = rng.randint(2, max_tokens)
    examples: list[NspExample] = []
    chunk: list[Sequence[int]] = []
    chunk_length = 0
    i = 0
    while i < len(document):
        chunk.append(document[i])
        chunk_length += len(document[i])
        if i == len(document) - 1 or chunk_length >= target:
            a_end = rng.randint(1, len(chunk) - 1) if len(chunk) >= 2 else 1
            tokens_a = [t for sentence in chunk[:a_end] for t in sentence]
            tokens_b: list[int] = []
            random_next = len(chunk) == 1 or rng.random() < 0.5
            if random_next:
                other = random_document(rng)
                for sentence in other[rng.randint(0, len(other) - 1):]:
                    tokens_b.extend(sentence)
                    if len(tokens_b) >= target - len(tokens_a):
                        break
                i -= len(chunk) - a_end  # the unused sentences start the next chunk
            else:
                tokens_b = [t for sentence in chunk[a_end:] for t in sentence]
            truncate_pair_randomly(tokens_a, tokens_b, max_tokens, rng)
            if tokens_a and tokens_b:
                examples.append(NspExample(tokens_a, tokens_b, random_next))
            chunk, chunk_length = [], 0
        i += 1
    return examples


def as_int_documents(documents: Sequence[Document]) -> list[list[list[int]]]:
    """Documents as lists of non-empty sentences of Python ints, empty documents dropped.

    Sentences that already are lists are kept as they are (not copied): convert a corpus
    once with this function and pass the result to `create_nsp_examples` for every epoch.
    NumPy arrays become lists of Python ints (`tolist`), far faster to slice and compare.
    """
    out = []
    for doc in documents:
        sentences = [s if type(s) is list else (s.tolist() if hasattr(s, "tolist") else list(s))
                     for s in doc if len(s)]
        if sentences:
            out.append(sentences)
    return out


def create_nsp_examples(documents: Sequence[Document], seq_length: int = DEFAULT_SEQ_LENGTH,
                        short_seq_prob: float = 0.1, dupe_factor: int = 1,
                        seed: int = 12345) -> list[NspExample]:
    """All NSP examples of a corpus: `dupe_factor` passes, shuffled, reproducible by `seed`.

    Empty sentences and documents are dropped first; at least two documents are needed for
    random next segments.
    """
    if seq_length < 5:
        raise ValueError(f"seq_length must be at least 5, got {seq_length}")
    documents = as_int_documents(documents)
    if len(documents) < 2:
        raise ValueError(f"NSP needs at least 2 non-empty documents, got {len(documents)}")
    rng = random.Random(seed)
    examples = []
    for _ in range(dupe_factor):
        for index in range(len(documents)):
            examples.extend(examples_from_document(
                documents[index], random_other_document(documents, index), seq_length,
                short_seq_prob, rng))
    rng.shuffle(examples)
    return examples
