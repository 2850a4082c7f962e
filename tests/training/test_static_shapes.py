"""Ready for accelerators: `pretrain`'s training input has fully static shapes (fixed batch
and sequence length, the remainder dropped), from the embedded corpus and from
`create-pretraining-data` TFRecords, with gradient accumulation too, so an XLA or TPU step
compiles once; and embedding gradients reach `tf.distribute`'s all-reduce dense."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from keras_bert.cli import main
from keras_bert.data.corpus import DEFAULT_VOCAB
from keras_bert.jobs.pretrain import PretrainJob, pretraining_data, pretraining_model

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def _assert_static(dataset, batch: int, seq: int, predictions: int) -> None:
    for name, spec in dataset.element_spec.items():
        assert spec.shape.is_fully_defined(), (name, spec.shape)
        assert spec.shape[0] == batch, (name, spec.shape)
        if name.startswith("input_"):
            assert spec.shape[1] == seq, (name, spec.shape)
        elif name.startswith("masked_lm_"):
            assert spec.shape[1] == predictions, (name, spec.shape)


@pytest.mark.parametrize("accumulation", [1, 3])
def test_corpus_stream_is_static(tmp_path, accumulation):
    job = PretrainJob(out=str(tmp_path), seq_length=64, max_predictions=10,
                      accumulation_steps=accumulation)
    train, _ = pretraining_model(job).training_data(
        pretraining_data(job)[0], batch_size=8, seed=job.seed,
        steps_per_epoch=job.steps_per_epoch)
    _assert_static(train, 8 * accumulation, 64, 10)
    first = next(iter(train))
    assert tuple(first["input_word_ids"].shape) == (8 * accumulation, 64)


def test_tfrecord_stream_is_static(tmp_path, capsys):
    records = str(tmp_path / "train.tfrecord")
    assert main(["create-pretraining-data", "--vocab", DEFAULT_VOCAB, "--output", records,
                 "--seq-length", "64", "--max-predictions", "10", "--dupe-factor", "1"]) == 0
    capsys.readouterr()
    job = PretrainJob(out=str(tmp_path / "run"), tfrecords=records, seq_length=64,
                      max_predictions=10)
    train, _ = pretraining_model(job).training_data(
        pretraining_data(job)[0], batch_size=16, seed=job.seed,
        steps_per_epoch=job.steps_per_epoch)
    _assert_static(train, 16, 64, 10)


# Keras' own AdamW is the negative control: its sparse gradients reach the all-reduce.
@pytest.mark.slow  # one TensorFlow process of ~12-30 s each
@pytest.mark.parametrize("optimizer", ["keras", "adamw", "lamb"])
def test_embedding_gradients_reach_the_all_reduce_dense(optimizer):
    """Under MirroredStrategy (2 logical CPUs), Keras' AdamW hands its cross-replica
    all-reduce sparse embedding gradients (an all-gather, which XLA cannot compile on GPUs:
    keras-team/keras#19809); ours hand it dense ones only (a subprocess: logical devices
    must be set before TensorFlow starts)."""
    env = dict(os.environ, PYTHONPATH=ROOT, TF_CPP_MIN_LOG_LEVEL="3")
    env.pop("TF_CONFIG", None)
    run = subprocess.run([sys.executable, "-m", "tests.training.dense_allreduce_job",
                          optimizer], cwd=ROOT, env=env, capture_output=True, text=True,
                         timeout=600)
    assert run.returncode == 0, (run.stdout + run.stderr)[-3000:]
    want = ("keras: ['IndexedSlices', 'SymbolicTensor']" if optimizer == "keras"
            else "ours: ['SymbolicTensor']")
    assert want in run.stdout, run.stdout[-2000:]
