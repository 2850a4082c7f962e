"""`create-pretraining-data --runner direct`: the Beam pipeline writes exactly the examples of
the single-process writer (the same multiset of serialized records) for the same inputs and
seed, with several DirectRunner worker processes, inputs in three formats over three files,
a random-next pool smaller than the corpus and whole-word masking; and the per-document
determinism that makes it so. `--runner dask` on a `dask.distributed` cluster of 2 worker
processes on 127.0.0.1 writes exactly the DirectRunner's examples."""

from __future__ import annotations

import collections
import contextlib
import glob
import io
import json
import os
import random
import re
import socket
import time

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


def _options(corpus_files) -> list[str]:
    """The corpus and the options every writer below is given."""
    return ["--vocab", VOCAB, "--input", *corpus_files, "--seq-length", "64",
            "--max-predictions", "10", "--dupe-factor", "2", "--whole-word",
            "--random-next-pool", "12", "--seed", "7", "--num-shards", "3"]


@pytest.fixture(scope="module")
def direct_run(corpus_files, tmp_path_factory):
    """The DirectRunner's shards (2 worker processes) and the counts it printed."""
    require("apache_beam")
    output = tmp_path_factory.mktemp("direct") / "beam"
    printed = io.StringIO()
    with contextlib.redirect_stdout(printed):
        assert main(["create-pretraining-data", *_options(corpus_files), "--output",
                     str(output), "--runner", "direct", "--workers", "2"]) == 0
    return f"{output}-*-of-00003", _counts(printed.getvalue())


@pytest.mark.slow
def test_direct_runner_writes_what_the_single_process_writer_writes(corpus_files, documents,
                                                                    direct_run, tmp_path,
                                                                    capsys):
    assert main(["create-pretraining-data", *_options(corpus_files), "--output",
                 str(tmp_path / "one")]) == 0
    single = _counts(capsys.readouterr().out)
    beam_shards, beam = direct_run
    assert beam == single  # Beam metrics == the writer's own counts
    assert single["documents"] == len(documents) and single["examples"] > 300

    ours, theirs = _records(str(tmp_path / "one-*-of-00003")), _records(beam_shards)
    assert sum(ours.values()) == single["examples"]
    assert ours == theirs

    batch = next(iter(read_examples(beam_shards, 64, 10, 10**6)))  # all
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
    assert "--workers, --beam-options and --dask-address need --runner" in capsys.readouterr().err
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


@pytest.fixture(scope="module")
def dask_cluster():
    """A `dask.distributed` cluster of 2 worker processes on 127.0.0.1, and a client of it."""
    require("apache_beam")
    distributed = require("distributed")
    with distributed.LocalCluster(n_workers=2, processes=True, threads_per_worker=1,
                                  host="127.0.0.1", dashboard_address=None) as cluster, \
            distributed.Client(cluster, set_as_default=False) as client:
        yield cluster, client


@pytest.mark.slow
def test_dask_runner_on_a_local_cluster_writes_what_the_direct_runner_writes(
        corpus_files, direct_run, dask_cluster, tmp_path, capsys):
    cluster, client = dask_cluster
    output = tmp_path / "dask" / "beam"
    assert main(["create-pretraining-data", *_options(corpus_files), "--output", str(output),
                 "--runner", "dask", "--dask-address", cluster.scheduler_address]) == 0
    assert "the dask runner reports no Beam metrics, so no counts" in capsys.readouterr().out
    direct_shards, direct = direct_run
    ours = _records(f"{output}-*-of-00003")
    assert sum(ours.values()) == direct["examples"]
    assert ours == _records(direct_shards)
    # The shards alone: no temporary folder of Beam's write is left.
    assert sorted(os.listdir(output.parent)) == [f"beam-{i:05d}-of-00003" for i in range(3)]
    # Both worker processes ran the pipeline's tasks (one input file per Dask partition).
    executed = client.run(lambda dask_worker: dask_worker.state.executed_count)
    assert len(executed) == 2 and min(executed.values()) > 0, executed


# 73 s on a busy 2-core Zen 3: starts a LocalCluster of 2 workers; the one-line refusal of a
# scheduler nobody answers stays in the README's tier
@pytest.mark.slow
def test_dask_runner_refuses_too_small_a_corpus_and_leaves_nothing(dask_cluster, tmp_path,
                                                                   capsys):
    cluster, _ = dask_cluster
    corpus = tmp_path / "corpus.txt"
    corpus.write_text("One sentence here. Another one follows.", encoding="utf-8")
    out = tmp_path / "out"
    assert main(["create-pretraining-data", "--vocab", VOCAB, "--input", str(corpus),
                 "--output", str(out / "records"), "--num-shards", "2", "--runner", "dask",
                 "--dask-address", cluster.scheduler_address]) == 2
    error = capsys.readouterr().err.strip().splitlines()[-1]
    assert "NSP needs at least 2 different non-empty documents, got fewer" in error, error
    assert os.listdir(out) == []


def test_a_dask_scheduler_nobody_answers_is_named_in_one_line(tmp_path, capsys):
    require("apache_beam")
    require("distributed")
    with socket.socket() as free:  # a port of 127.0.0.1 that nothing listens on once closed
        free.bind(("127.0.0.1", 0))
        address = f"tcp://127.0.0.1:{free.getsockname()[1]}"
    start = time.monotonic()
    assert main(["create-pretraining-data", "--vocab", VOCAB, "--output",
                 str(tmp_path / "out" / "records"), "--runner", "dask", "--dask-address",
                 address, "--dask-timeout", "1"]) == 2
    assert 1 <= time.monotonic() - start < 9  # the stated timeout, not Dask's default of 30 s
    assert capsys.readouterr().err.strip().splitlines() == [
        f"keras-bert create-pretraining-data: error: ConnectionError: no Dask scheduler "
        f"answered at {address} within 1 s"]
    assert not os.path.exists(tmp_path / "out")  # refused before anything is made
