"""`create-pretraining-data --runner direct`: the Beam pipeline writes exactly the examples of
the single-process writer (the same multiset of serialized records) for the same inputs and
seed, with several DirectRunner worker processes, inputs in three formats over three files,
a random-next pool smaller than the corpus and whole-word masking; and the per-document
determinism that makes it so."""

from __future__ import annotations

import collections
import glob
import json
import os
import random
import re

import numpy as np
import pytest
import tensorflow as tf

from keras_bert.cli import main
from keras_bert.data.corpus import default_corpus_files, read_documents
from keras_bert.pretraining.dataset import PretrainingOptions, tokenize_documents
from keras_bert.pretraining.document_examples import (
    DocumentExampleMaker,
    RandomNextPool,
    clean_document,
    document_key,
)
from keras_bert.pretraining.tfrecord import read_examples
from keras_bert.text import BertTokenizer
from tests.support.reference import require

VOCAB = glob.glob(os.path.join(os.path.dirname(default_corpus_files()[0]), "..", "vocab",
                               "*.txt"))[0]


@pytest.fixture(scope="module")
def documents():
    """Real documents: Moby Dick chapters and State of the Union addresses, cut to 40
    sentences each (every document is used, in three formats below)."""
    docs = []
    for path in default_corpus_files():
        docs.extend(d[:40] for d in list(read_documents(path, "prose"))[:18])
    return docs


@pytest.fixture(scope="module")
def corpus_files(tmp_path_factory, documents):
    """The documents in a JSONL file, a sentence-per-line file and a prose file."""
    root = tmp_path_factory.mktemp("beam_corpus")
    thirds = [documents[i::3] for i in range(3)]
    with open(root / "a.jsonl", "w", encoding="utf-8") as f:
        for doc in thirds[0]:
            f.write(json.dumps({"text": " ".join(doc)}) + "\n")
    (root / "b.txt").write_text("\n\n".join("\n".join(doc) for doc in thirds[1]) + "\n",
                                encoding="utf-8")
    (root / "c.txt").write_text("\n\n\n".join(" ".join(doc) for doc in thirds[2]) + "\n",
                                encoding="utf-8")
    return [str(root / name) for name in ("a.jsonl", "b.txt", "c.txt")]


def _records(pattern: str) -> collections.Counter:
    paths = sorted(glob.glob(pattern))
    assert paths, pattern
    return collections.Counter(r.numpy() for r in tf.data.TFRecordDataset(paths))


def _counts(printed: str) -> dict:
    match = re.search(r"wrote (\d+) examples of (\d+) documents .*; (\d+) tokens, (\d+) masked",
                      printed)
    assert match, printed
    return dict(zip(("examples", "documents", "tokens", "masked"), map(int, match.groups()),
                    strict=True))


@pytest.mark.slow
def test_direct_runner_writes_what_the_single_process_writer_writes(corpus_files, documents,
                                                                    tmp_path, capsys):
    require("apache_beam")
    common = ["--vocab", VOCAB, "--input", *corpus_files, "--seq-length", "64",
              "--max-predictions", "10", "--dupe-factor", "2", "--whole-word",
              "--random-next-pool", "12", "--seed", "7", "--num-shards", "3"]
    assert main(["create-pretraining-data", *common, "--output", str(tmp_path / "one")]) == 0
    single = _counts(capsys.readouterr().out)
    assert main(["create-pretraining-data", *common, "--output", str(tmp_path / "beam"),
                 "--runner", "direct", "--workers", "2"]) == 0
    beam = _counts(capsys.readouterr().out)
    assert beam == single  # Beam metrics == the writer's own counts
    assert single["documents"] == len(documents) and single["examples"] > 300

    ours, theirs = _records(str(tmp_path / "one-*-of-00003")), _records(
        str(tmp_path / "beam-*-of-00003"))
    assert sum(ours.values()) == single["examples"]
    assert ours == theirs

    batch = next(iter(read_examples(str(tmp_path / "beam-*"), 64, 10, 10**6)))  # all
    ids, weights = batch["input_word_ids"].numpy(), batch["masked_lm_weights"].numpy()
    assert (ids[:, 0] == 2).all()  # [CLS] of the embedded vocab
    assert int(weights.sum()) == single["masked"]
    assert int(batch["input_mask"].numpy().sum()) == single["tokens"]
    assert 0.3 < batch["next_sentence_labels"].numpy().mean() < 0.7


@pytest.fixture(scope="module")
def tokenized(documents):
    tokenizer = BertTokenizer(VOCAB)
    tokens = [clean_document(d) for d in tokenize_documents(documents, tokenizer)]
    return tokenizer, [document_key(d) for d in documents], tokens


def test_a_documents_examples_depend_only_on_seed_document_and_pool(tokenized):
    tokenizer, keys, tokens = tokenized
    options = PretrainingOptions(seq_length=64, max_predictions=10, dupe_factor=3)
    pool = RandomNextPool.smallest(zip(keys, tokens, strict=True), 10)
    shuffled = list(zip(keys, tokens, strict=True))
    random.Random(0).shuffle(shuffled)
    assert RandomNextPool.smallest(shuffled, 10).entries == pool.entries  # order-free

    maker = DocumentExampleMaker(tokenizer, options)
    first = maker(keys[5], tokens[5], pool)
    maker(keys[9], tokens[9], pool)  # another document in between changes nothing
    again = DocumentExampleMaker(tokenizer, options)(keys[5], tokens[5], pool)
    for name in first:
        np.testing.assert_array_equal(first[name], again[name], err_msg=name)
    other_seed = DocumentExampleMaker(
        tokenizer, PretrainingOptions(seq_length=64, max_predictions=10, dupe_factor=3,
                                      seed=1))(keys[5], tokens[5], pool)
    assert not np.array_equal(other_seed["input_word_ids"][:3], first["input_word_ids"][:3])

    # Pass p has its own generator: pass 0 of three passes is the one pass of dupe_factor=1,
    # and the passes differ.
    three = maker.nsp_examples(keys[5], tokens[5], pool)
    single = PretrainingOptions(seq_length=64, max_predictions=10, dupe_factor=1)
    one_pass = DocumentExampleMaker(tokenizer, single).nsp_examples(keys[5], tokens[5], pool)
    assert three[:len(one_pass)] == one_pass and three[len(one_pass):] != three[:-len(one_pass)]


def test_random_next_segments_come_from_other_pool_documents(tokenized):
    _, keys, tokens = tokenized
    pool = RandomNextPool.smallest(zip(keys, tokens, strict=True), 4)
    assert [k for k, _ in pool.entries] == sorted(keys)[:4]
    own_key, own = pool.entries[0]
    sample, rng = pool.sampler(own_key), random.Random(3)
    drawn = collections.Counter(id(sample(rng)) for _ in range(3000))
    others = {id(doc) for key, doc in pool.entries if key != own_key}
    assert set(drawn) == others and id(own) not in drawn
    assert min(drawn.values()) > 900  # uniform over the other three


def test_bad_pools_are_refused(tokenized):
    _, keys, tokens = tokenized
    with pytest.raises(ValueError, match="at least 2 different"):
        RandomNextPool([(keys[0], tokens[0]), (keys[0], tokens[0])])
    with pytest.raises(ValueError, match="at least 2 documents"):
        RandomNextPool.smallest(zip(keys, tokens, strict=True), 1)


def test_beam_only_options_need_a_runner(tmp_path, capsys):
    assert main(["create-pretraining-data", "--vocab", VOCAB, "--output", str(tmp_path / "x"),
                 "--workers", "2"]) == 2
    assert "--workers and --beam-options need --runner" in capsys.readouterr().err
    assert not os.path.exists(tmp_path / "x")


def test_input_patterns_are_expanded(corpus_files, tmp_path):
    require("apache_beam")
    from keras_bert.pretraining.beam_pipeline import expand_patterns

    folder = os.path.dirname(corpus_files[0])
    assert expand_patterns([os.path.join(folder, "*.txt"), corpus_files[0]]) == [
        corpus_files[1], corpus_files[2], corpus_files[0]]
    with pytest.raises(FileNotFoundError, match="no input file matches"):
        expand_patterns([str(tmp_path / "none-*")])


@pytest.mark.parametrize("texts", [[""], ["One sentence here. Another one follows."],
                                   ["The same document.", "The same document."]],
                         ids=["empty", "one-document", "identical-documents"])
def test_too_small_a_corpus_is_refused_by_both_writers_and_nothing_is_left(tmp_path, capsys,
                                                                           texts):
    require("apache_beam")
    corpus = tmp_path / "corpus.txt"
    corpus.write_text("\n\n".join(texts), encoding="utf-8")
    for runner in ([], ["--runner", "direct"]):
        for shards in ("1", "2"):
            out = tmp_path / "out"
            out.mkdir()
            assert main(["create-pretraining-data", "--vocab", VOCAB, "--input", str(corpus),
                         "--output", str(out / "records"), "--num-shards", shards,
                         *runner]) == 2
            error = capsys.readouterr().err.strip().splitlines()[-1]
            assert "NSP needs at least 2 different non-empty documents, got" in error, error
            assert os.listdir(out) == [], (runner, shards)  # no shards, no Beam temp files
            out.rmdir()
