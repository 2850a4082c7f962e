"""One pretraining engine by construction: `keras-bert pretrain` trains and measures through
the Python user's `TextPretrainer` (its `fit` and `evaluate`), and the job's module holds
none of the training composition (model, optimizer, data stream, resumable fit, phase 2),
so a pretraining change is made once."""

from __future__ import annotations

import ast
import json
import os

import numpy as np

from keras_bert.cli import main
from keras_bert.models import BertPretrainer
from keras_bert.pretraining.model import TextPretrainer

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
JOB = os.path.join(ROOT, "keras_bert", "jobs", "pretrain.py")
# What trains a pretrainer, all of it in `keras_bert.pretraining` and `keras_bert.training`:
# the job may name none of it, only `TextPretrainer`'s public methods.
ENGINE_PARTS = {"BertPretrainer", "BertEncoder", "BertTokenizer", "load_pretrainer",
                "create_optimizer", "fit_from_step", "pretraining_dataset",
                "tokenize_documents", "read_examples", "with_known_length",
                "load_phase1_state", "read_phase1", "held_out_scores", "training_stream",
                "held_out_set", "mlm_frequency_baseline", "nsp_majority_baseline"}


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


def test_the_command_trains_and_measures_through_text_pretrainer(corpus, tmp_path,
                                                                 monkeypatch):
    fits, evaluations = _spy(monkeypatch, "fit"), _spy(monkeypatch, "evaluate")
    out = tmp_path / "run"
    assert main(["pretrain", "--out", str(out), "--corpus", corpus, "--steps", "2",
                 "--steps-per-epoch", "1", "--batch-size", "4", "--seq-length", "32",
                 "--max-predictions", "5", "--precision", "float32"]) == 0
    assert len(fits) == 1, "keras-bert pretrain did not train through TextPretrainer.fit"
    model, history = fits[0]
    assert len(history.history["loss"]) == 2  # the run's 2 epochs, in that one fit
    assert int(model.pretrainer.optimizer.iterations.numpy()) == 2
    # What the command wrote is that model, and its numbers are that model's evaluate's.
    written = BertPretrainer.from_bert_config(model.pretrainer.config)
    written.load_weights(str(out / "pretrainer.weights.h5"))
    assert len(written.weights) == len(model.pretrainer.weights) > 20
    for a, b in zip(written.weights, model.pretrainer.weights, strict=True):
        np.testing.assert_array_equal(a.numpy(), b.numpy(), err_msg=b.path)
    assert [m for m, _ in evaluations] == [model], "metrics.json not from its evaluate"
    assert json.loads((out / "metrics.json").read_text())["eval"] == evaluations[0][1]


def test_the_job_names_none_of_the_training_composition():
    """The job module imports and calls no part of the engine (a second composition of
    model, optimizer, stream and fit would need them) and no underscore name of another
    package."""
    with open(JOB, encoding="utf-8") as f:
        tree = ast.parse(f.read())
    named = {alias.asname or alias.name for node in ast.walk(tree)
             if isinstance(node, ast.ImportFrom) for alias in node.names}
    named |= {node.id for node in ast.walk(tree) if isinstance(node, ast.Name)}
    named |= {node.attr for node in ast.walk(tree) if isinstance(node, ast.Attribute)}
    assert not named & ENGINE_PARTS, sorted(named & ENGINE_PARTS)
    private = sorted(alias.name for node in ast.walk(tree) if isinstance(node, ast.ImportFrom)
                     and node.module and node.module.startswith("keras_bert.")
                     and not node.module.startswith("keras_bert.jobs")
                     for alias in node.names if alias.name.startswith("_"))
    assert private == []
    assert "TextPretrainer" in named
