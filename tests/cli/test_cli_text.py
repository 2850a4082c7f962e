"""`keras-bert tokenize` and `keras-bert create-pretraining-data` end to end."""

import io
import os
import sys

import numpy as np
import pytest

from keras_bert.cli import main
from keras_bert.pretraining.tfrecord import read_examples
from keras_bert.text import BertTokenizer
from tests.support.reference import minilm_dir


@pytest.fixture(scope="module")
def vocab():
    return os.path.join(minilm_dir(), "vocab.txt")


def _stdin(monkeypatch, data: bytes):
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(data), encoding="utf-8"))


def test_tokenize_one_line_per_line(monkeypatch, capsys, vocab):
    lines = ["Call me Ishmael.", "", "Héllo [MASK] wörld!"]
    _stdin(monkeypatch, "\n".join(lines).encode() + b"\n")
    assert main(["tokenize", "--vocab", vocab]) == 0
    out = capsys.readouterr().out.splitlines()
    expected = BertTokenizer(vocab, lower_case=True).tokenize(lines).to_list()
    assert out == [" ".join(map(str, row)) for row in expected]
    assert out[1] == ""
    _stdin(monkeypatch, b"Hello [MASK] world\n")
    assert main(["tokenize", "--vocab", vocab, "--tokens", "--preserve-special-tokens"]) == 0
    assert capsys.readouterr().out.split() == ["hello", "[MASK]", "world"]
    _stdin(monkeypatch, b"Hello World\n")
    assert main(["tokenize", "--vocab", vocab, "--tokens", "--cased"]) == 0
    assert "hello" not in capsys.readouterr().out.split()


def test_create_pretraining_data(capsys, tmp_path, vocab):
    corpus = tmp_path / "corpus.txt"
    rng = np.random.default_rng(0)
    words = "the whale ship sea captain harpoon crew ocean storm deck".split()
    docs = ["\n".join(" ".join(rng.choice(words, rng.integers(4, 12))).capitalize() + "."
                      for _ in range(rng.integers(3, 9))) for _ in range(40)]
    corpus.write_text("\n\n".join(docs) + "\n")
    out = tmp_path / "records" / "train.tfrecord"
    assert main(["create-pretraining-data", "--vocab", vocab, "--input", str(corpus),
                 "--output", str(out), "--num-shards", "2", "--seq-length", "32",
                 "--max-predictions", "5", "--dupe-factor", "3"]) == 0
    printed = capsys.readouterr().out
    assert "sentences" in printed and "wrote" in printed
    assert sorted(os.listdir(out.parent)) == ["train.tfrecord-00000-of-00002",
                                              "train.tfrecord-00001-of-00002"]
    batch = next(iter(read_examples(str(out) + "-*", 32, 5, batch_size=10_000)))
    n = batch["input_word_ids"].shape[0]
    assert n > 60
    tokenizer = BertTokenizer(vocab)
    assert (batch["input_word_ids"].numpy()[:, 0] == tokenizer.cls_id).all()
    weights = batch["masked_lm_weights"].numpy()
    assert (weights.sum(axis=1) >= 1).all() and (weights.sum(axis=1) <= 5).all()
    labels = batch["next_sentence_labels"].numpy()
    assert 0 < labels.mean() < 1


def test_finetune_options_are_the_jobs_fields():
    """`keras-bert finetune`'s options are `FinetuneJob`'s fields: each default, choice and
    help is written once, on the field, and the parsed options build the same job."""
    import dataclasses

    from keras_bert.cli import build_parser
    from keras_bert.config import AGGREGATIONS, POOLING_MODES, READING_MODES
    from keras_bert.jobs.finetune import FinetuneJob
    from keras_bert.tasks.registry import FINETUNE_KINDS
    from keras_bert.training.precision import PRECISION_CHOICES

    parser = build_parser()
    finetune = parser._subparsers._group_actions[0].choices["finetune"]
    actions = {a.dest: a for a in finetune._actions}
    for dest, choices in (("task", FINETUNE_KINDS), ("precision", PRECISION_CHOICES),
                          ("long_text", READING_MODES), ("window_aggregate", AGGREGATIONS),
                          ("pooling", POOLING_MODES)):
        assert tuple(actions[dest].choices) == tuple(choices), dest
    for field in dataclasses.fields(FinetuneJob):
        if field.init and field.metadata.get("cli") is not False:
            assert actions[field.name].help == field.metadata["help"], field.name
            if field.default is not dataclasses.MISSING:
                assert actions[field.name].default == field.default, field.name
    args = parser.parse_args(["finetune", "--task", "tag", "--model", "m", "--train", "t",
                              "--out", "o", "--seq-length", "64", "--dropout", "0.2"])
    job = FinetuneJob(task="tag", model="m", train="t", out="o", seq_length=64, dropout=0.2)
    from keras_bert.cli.options import job_from_args

    assert job_from_args(FinetuneJob, args, verbose=1) == job


def test_rules_choices_are_the_libraries():
    from keras_bert.jobs.options import RULES_NAMES
    from keras_bert.text.rules import RULES

    assert RULES_NAMES == tuple(RULES)


@pytest.mark.parametrize("command", ["tokenize", "encode", "build-vocab",
                                     "create-pretraining-data", "pretrain", "finetune",
                                     "predict", "distill", "export", "attention", "convert"])
def test_every_tokenizing_command_takes_rules(command):
    from keras_bert.cli import build_parser

    parser = build_parser()
    sub = parser._subparsers._group_actions[0].choices[command]
    (action,) = [a for a in sub._actions if a.dest == "rules"]
    assert tuple(action.choices) == ("google", "huggingface") and action.default is None


def test_attention_title_names_the_model_and_the_text():
    from keras_bert.visualize.attention_maps import attention_title

    assert (attention_title("/runs/sst2/model", "a fine film")
            == "sst2/model: \u201ca fine film\u201d")
    title = attention_title("/x/minilm/", "w " * 60, "b")
    assert title.startswith("minilm: \u201cw w") and len(title) < 70 and "\u2026" in title
