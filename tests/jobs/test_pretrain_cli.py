"""`keras-bert pretrain` end to end on a small corpus: outputs, metrics, resume, reuse; and
that it trains and measures through `TextPretrainer` (tests/jobs/test_pretrain_engine.py
holds the rest of that rule)."""

import io
import json
import os
import sys
import warnings

import numpy as np
import pytest

from keras_bert.checkpoints import load_model_dir
from keras_bert.cli import main
from keras_bert.models import BertPretrainer
from keras_bert.pretraining.model import TextPretrainer
from tests.support.tiny_data import moby_chapters


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    """The first 15 chapters of the embedded Moby Dick."""
    return moby_chapters(tmp_path_factory.mktemp("corpus"), 15)


ARGS = ["--steps", "6", "--steps-per-epoch", "3", "--batch-size", "8", "--seq-length", "32",
        "--max-predictions", "5"]


def _spy(monkeypatch, name: str) -> list:
    """Calls of `TextPretrainer.<name>` as `(model, result)`, the method still running."""
    calls = []
    method = getattr(TextPretrainer, name)

    def spy(self, *args, **kwargs):
        result = method(self, *args, **kwargs)
        calls.append((self, result))
        return result

    monkeypatch.setattr(TextPretrainer, name, spy)
    return calls


@pytest.fixture(scope="module")
def traced_run(corpus, tmp_path_factory):
    """`(out, fits, evaluations)`: the run, and the `TextPretrainer.fit` and `evaluate`
    calls it made."""
    out = tmp_path_factory.mktemp("pretrain") / "run"
    with warnings.catch_warnings(record=True) as caught, pytest.MonkeyPatch.context() as mp:
        warnings.simplefilter("always")
        fits, evaluations = _spy(mp, "fit"), _spy(mp, "evaluate")
        assert main(["pretrain", "--out", str(out), "--corpus", corpus, *ARGS]) == 0
    (out / "warnings.txt").write_text("\n".join(str(w.message) for w in caught))
    return out, fits, evaluations


@pytest.fixture(scope="module")
def run(traced_run):
    return traced_run[0]


def test_no_ran_out_of_data_warning(run):
    """The held-out set declares its length, so Keras does not warn after each evaluation."""
    assert "ran out of data" not in (run / "warnings.txt").read_text()


def test_the_command_trains_and_measures_through_text_pretrainer(traced_run):
    out, fits, evaluations = traced_run
    assert len(fits) == 1, "keras-bert pretrain did not train through TextPretrainer.fit"
    model, history = fits[0]
    assert len(history.history["loss"]) == 2  # the run's 2 epochs, in that one fit
    assert int(model.pretrainer.optimizer.iterations.numpy()) == 6
    # What the command wrote is that model, and its numbers are that model's evaluate's.
    written = BertPretrainer.from_bert_config(model.pretrainer.config)
    written.load_weights(str(out / "pretrainer.weights.h5"))
    assert len(written.weights) == len(model.pretrainer.weights) > 20
    for a, b in zip(written.weights, model.pretrainer.weights, strict=True):
        np.testing.assert_array_equal(a.numpy(), b.numpy(), err_msg=b.path)
    assert [m for m, _ in evaluations] == [model], "metrics.json not from its evaluate"
    assert json.loads((out / "metrics.json").read_text())["eval"] == evaluations[0][1]


def test_outputs(run):
    for name in ("metrics.json", "history.json", "curves.png", "pretrainer.weights.h5"):
        assert (run / name).exists(), name
    assert os.listdir(run / "logs")  # TensorBoard
    metrics = json.loads((run / "metrics.json").read_text())
    assert metrics["steps"] == 6
    for key in ("mlm_accuracy", "nsp_accuracy", "mlm_loss", "nsp_loss", "loss",
                "mlm_frequency_baseline"):
        assert np.isfinite(metrics["eval"][key]), key
    assert set(metrics["train"]) >= {"mlm_accuracy", "nsp_accuracy", "loss"}
    history = json.loads((run / "history.json").read_text())
    assert len(history["loss"]) == 2 and len(history["val_loss"]) == 2
    assert (run / "curves.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_model_directory_is_usable(run, monkeypatch, capsys):
    model_dir = load_model_dir(str(run / "model"))
    assert model_dir.config.num_layers == 2 and model_dir.config.hidden_size == 128
    assert model_dir.metadata["pretrained_steps"] == 6
    monkeypatch.setattr(sys, "stdin", io.StringIO("Call me Ishmael.\n"))
    assert main(["encode", str(run / "model")]) == 0
    assert len(json.loads(capsys.readouterr().out)) == 128


@pytest.mark.slow
def test_rerun_resumes_and_continue_from_init(run, corpus, tmp_path):
    # A finished run started again trains no further (it restores the last checkpoint).
    before = json.loads((run / "metrics.json").read_text())
    assert main(["pretrain", "--out", str(run), "--corpus", corpus, *ARGS]) == 0
    after = json.loads((run / "metrics.json").read_text())
    assert after["steps"] == before["steps"] == 6
    assert after["eval"]["mlm_loss"] == pytest.approx(before["eval"]["mlm_loss"], rel=1e-6)
    # --init continues from the pretrained model directory.
    out = tmp_path / "more"
    assert main(["pretrain", "--out", str(out), "--corpus", corpus, "--init",
                 str(run / "model"), *ARGS]) == 0
    assert json.loads((out / "metrics.json").read_text())["steps"] == 6


def test_bad_arguments(tmp_path, capsys):
    assert main(["pretrain", "--out", str(tmp_path), "--steps", "10",
                 "--steps-per-epoch", "3"]) == 2
    assert "multiple of steps_per_epoch" in capsys.readouterr().err
