"""One pretraining engine by construction: `keras-bert pretrain` trains and measures through
the Python user's `TextPretrainer` (its `fit` and `evaluate`), and the job's module holds
none of the training composition (model, optimizer, data stream, resumable fit, phase 2),
so a pretraining change is made once."""

from __future__ import annotations

import ast
import os

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
JOB = os.path.join(ROOT, "keras_bert", "jobs", "pretrain.py")
# What trains a pretrainer, all of it in `keras_bert.pretraining` and `keras_bert.training`:
# the job may name none of it, only `TextPretrainer`'s public methods.
ENGINE_PARTS = {"BertPretrainer", "BertEncoder", "BertTokenizer", "load_pretrainer",
                "create_optimizer", "fit_from_step", "pretraining_dataset",
                "tokenize_documents", "read_examples", "with_known_length",
                "load_phase1_state", "read_phase1", "held_out_scores", "training_stream",
                "held_out_set", "mlm_frequency_baseline", "nsp_majority_baseline"}


# The command training and measuring through `TextPretrainer.fit` and `evaluate` (its model
# the one written, its numbers that model's) is checked on tests/jobs/test_pretrain_cli.py's
# run: test_the_command_trains_and_measures_through_text_pretrainer, there, so that the
# tier runs one `keras-bert pretrain` for both files (8.2 s on a 2-core Zen 4 saved).


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
