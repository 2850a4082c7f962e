"""Bad input to the CLI ends with one line naming the problem (exit 2), never a traceback.

Files that are not UTF-8 (CSV, TSV, JSONL, CoNLL, SQuAD, predict's stdin) name the file and
line; `encode` drops bytes that are not UTF-8 exactly as `tokenize` does; a directory, a
missing file, a damaged TensorFlow checkpoint and a one-class training file each get one
line; `--debug` shows the traceback instead.
"""

from __future__ import annotations

import io
import json
import sys

import numpy as np
import pytest

from keras_bert.cli import main
from tests.jobs.test_finetune import FAST


def _error_line(capsys) -> str:
    err = capsys.readouterr().err
    assert "Traceback" not in err
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    return lines[0]


@pytest.mark.parametrize("suffix, header, row", [
    (".csv", b"text,label\n", b"a whale,whale\n"),
    (".tsv", b"text\tlabel\n", b"a whale\twhale\n"),
    (".jsonl", b"", b'{"text": "a whale", "label": "whale"}\n'),
])
def test_invalid_utf8_names_file_and_line(suffix, header, row, model_dir, tmp_path, capsys):
    path = tmp_path / f"train{suffix}"
    bad = row.replace(b"whale", b"wh\xffale", 1)
    path.write_bytes(header + row + row + bad + row)
    line = 4 if header else 3
    code = main(["finetune", "--task", "classify", "--model", model_dir, "--train", str(path),
                 "--out", str(tmp_path / "out"), *FAST])
    assert code == 2
    message = _error_line(capsys)
    assert f"{path}: line {line}: invalid UTF-8 (byte 0xff" in message


def test_invalid_utf8_in_conll_squad_and_stdin(model_dir, tmp_path, capsys, monkeypatch):
    conll = tmp_path / "train.conll"
    conll.write_bytes(b"paris NN B-LOC\n\nrome NN B-LOC\nis NN O\n\xe9t\xe9 NN O\n")
    assert main(["finetune", "--task", "tag", "--model", model_dir, "--train", str(conll),
                 "--out", str(tmp_path / "tag"), *FAST]) == 2
    assert f"{conll}: line 5: invalid UTF-8 (byte 0xe9 at byte column 1)" in _error_line(capsys)
    squad = tmp_path / "train.json"
    squad.write_bytes(b'{"data": [\n{"title": "\xc3"}]}')
    assert main(["finetune", "--task", "squad", "--model", model_dir, "--train", str(squad),
                 "--out", str(tmp_path / "qa"), *FAST]) == 2
    assert f"{squad}: line 2: invalid UTF-8" in _error_line(capsys)
    # predict reads stdin lines: the bad one is named
    stdin = io.TextIOWrapper(io.BytesIO(b"a whale\nsea \xfe\n"), encoding="utf-8")
    monkeypatch.setattr(sys, "stdin", stdin)
    classifier = _classifier(model_dir, tmp_path, capsys)
    assert main(["predict", classifier, "--input", "-"]) == 2
    assert "stdin: line 2: invalid UTF-8 (byte 0xfe at byte column 5)" in _error_line(capsys)


def _classifier(model_dir, tmp_path, capsys) -> str:
    train = tmp_path / "ok.csv"
    train.write_text("text,label\n" + "a whale,whale\nthe sea,other\n" * 8)
    assert main(["finetune", "--task", "classify", "--model", model_dir, "--train",
                 str(train), "--out", str(tmp_path / "clf"), *FAST]) == 0
    capsys.readouterr()
    return str(tmp_path / "clf" / "model")


def test_encode_drops_bad_bytes_like_tokenize(model_dir, capsys, monkeypatch):
    def run(command, data):
        monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(data), encoding="utf-8"))
        assert main(command) == 0
        return capsys.readouterr().out.splitlines()

    vocab = f"{model_dir}/vocab.txt"
    dirty, clean = b"the wh\xffale \xc3sea\n", b"the whale sea\n"
    assert run(["tokenize", "--vocab", vocab], dirty) == run(["tokenize", "--vocab", vocab],
                                                             clean)
    a = np.array(json.loads(run(["encode", model_dir, "--seq-length", "32"], dirty)[0]))
    b = np.array(json.loads(run(["encode", model_dir, "--seq-length", "32"], clean)[0]))
    np.testing.assert_array_equal(a, b)


def test_one_class_training_file_is_refused(model_dir, tmp_path, capsys):
    train = tmp_path / "one.csv"
    train.write_text("text,label\n" + "a whale,whale\n" * 8)
    assert main(["finetune", "--task", "classify", "--model", model_dir, "--train", str(train),
                 "--out", str(tmp_path / "out"), *FAST]) == 2
    message = _error_line(capsys)
    assert "one class" in message and "whale" in message


def test_paths_that_are_not_files_get_one_line(model_dir, tmp_path, capsys):
    for train, expected in [(tmp_path, "IsADirectoryError"),
                            (tmp_path / "missing.csv", "missing.csv"),
                            (tmp_path / "one.csv" / "x.csv", "NotADirectoryError")]:
        (tmp_path / "one.csv").write_text("text,label\n")
        assert main(["finetune", "--task", "classify", "--model", model_dir, "--train",
                     str(train), "--out", str(tmp_path / "out"), *FAST]) == 2
        assert expected in _error_line(capsys)


def test_damaged_tensorflow_checkpoint_gets_one_line_and_debug_a_traceback(tmp_path, capsys):
    source = tmp_path / "google"
    source.mkdir()
    (source / "vocab.txt").write_text("[PAD]\n[UNK]\n[CLS]\n[SEP]\n[MASK]\nwhale\n")
    (source / "bert_config.json").write_text(json.dumps({
        "vocab_size": 6, "hidden_size": 8, "num_hidden_layers": 1, "num_attention_heads": 2,
        "intermediate_size": 16, "max_position_embeddings": 16, "type_vocab_size": 2}))
    (source / "bert_model.ckpt.index").write_bytes(b"not a checkpoint index" * 10)
    (source / "bert_model.ckpt.data-00000-of-00001").write_bytes(b"\0" * 64)
    assert main(["convert", str(source), str(tmp_path / "out")]) == 2
    message = _error_line(capsys)
    assert message.startswith("keras-bert convert: error: ")
    assert "bert_model.ckpt: not a readable TensorFlow checkpoint" in message
    with pytest.raises(Exception):  # noqa: B017 -- whatever TensorFlow raises, unchanged
        main(["--debug", "convert", str(source), str(tmp_path / "out2")])
