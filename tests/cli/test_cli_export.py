"""`keras-bert export --hub` and `--format litert`: the options of the SavedModel export they
would not apply are refused by name in one line, before anything is written; the options
they take still work."""

import json
import os

import pytest

from keras_bert.cli import main

# Each option the single SavedModel or LiteRT export takes and the hub pair does not.
IGNORED_BY_HUB = [["--version", "3"], ["--max-length", "32"], ["--precision", "bfloat16"],
                  ["--xla"], ["--pooling", "mean"], ["--null-score-threshold", "1.5"],
                  ["--model-name", "other"], ["--format", "litert"], ["--quantize", "int8"],
                  ["--litert-tokenizer", "none"]]


# Each option of the SavedModel export alone, which the LiteRT file would ignore.
IGNORED_BY_LITERT = [["--seq-length", "16"], ["--xla"], ["--null-score-threshold", "1.5"],
                     ["--model-name", "other"], ["--target", "serving-2.20"], ["--no-audit"]]


@pytest.fixture(scope="module")
def model_dir(tiny_model_dir):
    """The session's tiny encoder (`tests/conftest.py`: `make_tiny_model_dir`, seed 0); the
    tests export it elsewhere and never write into it."""
    return tiny_model_dir


@pytest.mark.parametrize("option", IGNORED_BY_HUB, ids=lambda o: o[0])
def test_hub_refuses_an_option_it_would_ignore(model_dir, tmp_path, capsys, option):
    code = main(["export", model_dir, str(tmp_path / "hub"), "--hub", *option])
    err = capsys.readouterr().err.strip()
    assert code != 0 and err.count("\n") == 0, err
    assert f"{option[0]}: not an option of --hub" in err
    assert not (tmp_path / "hub").exists()


def test_hub_names_every_ignored_option_at_once(model_dir, tmp_path, capsys):
    code = main(["export", model_dir, str(tmp_path / "hub"), "--hub", "--quantize", "int8",
                 "--format", "litert"])
    err = capsys.readouterr().err.strip()
    assert code != 0 and "--format, --quantize: not an option of --hub" in err


def test_hub_takes_its_own_options(model_dir, tmp_path, capsys):
    code = main(["export", model_dir, str(tmp_path / "hub"), "--hub", "--precision", "float32",
                 "--seq-length", "16", "--quantize", "none", "--format", "saved_model"])
    assert code == 0, capsys.readouterr().err
    paths = json.loads(capsys.readouterr().out)
    assert sorted(paths) == ["encoder", "preprocess"]
    assert all(os.path.exists(os.path.join(p, "saved_model.pb")) for p in paths.values())


@pytest.mark.parametrize("option", IGNORED_BY_LITERT, ids=lambda o: o[0])
def test_litert_refuses_an_option_it_would_ignore(model_dir, tmp_path, capsys, option):
    code = main(["export", model_dir, str(tmp_path / "lite"), "--format", "litert",
                 "--litert-tokenizer", "none", *option])
    err = capsys.readouterr().err.strip()
    assert code != 0 and err.count("\n") == 0, err
    assert f"{option[0]}: not an option of --format litert" in err
    assert not (tmp_path / "lite").exists()
