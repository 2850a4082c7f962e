"""`keras-bert export --xla`: the network XLA-compiled over length buckets. Loaded as TF
Serving loads it (Session, fresh process), it answers what the plain export answers on
texts of many lengths, batch 1 and mixed batches (11 texts: 16 rows compiled), for a
sentence-level kind, the embedder and the per-token kinds (tagger, span QA: their outputs cut
back to the packed length); its warmup file holds one request per length bucket."""

from __future__ import annotations

import os
import sys

import numpy as np
import pytest
import tensorflow as tf

from keras_bert.cli import main
from keras_bert.export.exporter import bucket_word_counts
from keras_bert.tasks.batches import length_buckets
from keras_bert.tasks.serving import pad_to_bucket
from tests.export.helpers import (
    make_tiny_model_dir,
    make_tiny_task_dir,
    read_outputs,
    run_session_jobs,
)
from tests.export.run_session_bundle import save_arrays

WORDS = "call me ishmael the whale sat on the mat in paris".split()
TEXTS = ["", "Call me Ishmael."] + [" ".join(WORDS[i % len(WORDS)] for i in range(n))
                                   for n in (5, 13, 14, 15, 29, 30, 40, 61, 80)]


TASKS = {"classify": ({"kind": "classify", "seq_length": 32}, ["a", "b", "c"]),
         "tag": ({"kind": "tag", "seq_length": 24, "num_classes": 3}, ["B-PER", "I-PER", "O"]),
         "squad": ({"kind": "squad", "seq_length": 40, "max_query_length": 8, "doc_stride": 16,
                    "version_2": True}, None)}


def _request(kind: str, texts: list[str]) -> dict:
    """`serving_default`'s inputs: span QA reads each text as the context of one question."""
    strings = np.array([t.encode() for t in texts], dtype=object)
    if kind == "squad":
        return {"question": np.array([b"who sat on the mat?"] * len(texts), dtype=object),
                "context": strings}
    return {"text": strings}


@pytest.mark.slow  # over 30 s in CI's durations log docs/runs/ci-durations-2026-11-26-8c1e29d.md
@pytest.mark.parametrize("kind", ["classify", "embed", "tag", "squad"])
def test_xla_export_answers_as_the_plain_export(tmp_path, kind):
    if kind == "embed":
        model_dir = make_tiny_model_dir(tmp_path / "m")
    else:
        model_dir = make_tiny_task_dir(tmp_path / "m", *TASKS[kind])
    for flag, version in (([], "1"), (["--xla"], "2")):
        assert main(["export", model_dir, str(tmp_path / "serving"), "--version", version,
                     *flag]) == 0
    jobs, outs = [], {}
    for index, texts in enumerate([[t] for t in TEXTS] + [TEXTS]):
        inputs = str(tmp_path / f"in-{index}.npz")
        save_arrays(inputs, _request(kind, texts))
        for version in ("1", "2"):
            out = str(tmp_path / f"out-{index}-{version}.npz")
            jobs.append({"export": str(tmp_path / "serving" / version),
                         "signature": "serving_default", "inputs": inputs, "outputs": out})
            outs[index, version] = out
    for version, compiled in (("1", 0), ("2", 1)):  # the network under jit_compile: XLA
        graph = (tmp_path / "serving" / version / "saved_model.pb").read_bytes()
        assert min(graph.count(b"_XlaMustCompile"), 1) == compiled, version
    run_session_jobs(sys.executable, jobs, tmp_path)
    for index in range(len(TEXTS) + 1):
        plain, xla = (read_outputs(outs[index, v]) for v in ("1", "2"))
        assert "error" not in xla, xla
        assert sorted(plain) == sorted(xla)
        for key, want in plain.items():
            if want.dtype.kind == "f":
                np.testing.assert_allclose(xla[key], want, rtol=0, atol=1e-5, err_msg=key)
            else:
                np.testing.assert_array_equal(xla[key], want, err_msg=key)

    warmup = os.path.join(tmp_path, "serving", "2", "assets.extra", "tf_serving_warmup_requests")
    records = list(tf.data.TFRecordDataset(warmup))
    longest = 64 if kind == "embed" else TASKS[kind][0]["seq_length"]  # embed: 64 positions
    assert len(records) == 1 + len(bucket_word_counts(length_buckets(longest)))


def test_buckets():
    assert length_buckets(64) == [16, 32, 48, 64]
    assert length_buckets(512) == [16, 32, 48, 64, 80, 96, 112, 128, 160, 192, 224, 256,
                                   384, 512]
    assert length_buckets(200) == [16, 32, 48, 64, 80, 96, 112, 128, 160, 192, 200]
    assert length_buckets(8) == [8] and length_buckets(16) == [16]
    assert bucket_word_counts(length_buckets(64)) == [14, 30, 46, 62]
    assert bucket_word_counts(length_buckets(512))[-1] == 510
    for batch, rows in ((1, 1), (2, 2), (3, 4), (5, 8), (11, 16), (0, 0)):
        for length, longest, want in ((1, 64, 16), (16, 64, 16), (17, 64, 32), (33, 64, 48),
                                      (64, 64, 64), (40, 48, 48), (129, 512, 160),
                                      (200, 512, 224), (300, 512, 384)):
            ids = tf.reshape(tf.range(1, batch * length + 1), [batch, length])
            mask = tf.ones([batch, length], tf.int32)
            padded = pad_to_bucket({"input_word_ids": ids, "input_mask": mask}, longest)
            assert padded["input_word_ids"].shape == (rows, want), (batch, length, longest)
            # the first rows are the inputs, then masked-out positions; extra rows copy row 0
            np.testing.assert_array_equal(padded["input_word_ids"][:batch, :length], ids)
            assert int(tf.reduce_sum(padded["input_mask"][:batch])) == batch * length
            assert not np.any(padded["input_word_ids"][:, length:])
            if batch:
                np.testing.assert_array_equal(padded["input_word_ids"][batch:],
                                              np.repeat(padded["input_word_ids"][:1],
                                                        rows - batch, axis=0))
