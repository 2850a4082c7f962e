"""`keras-bert convert` and `keras-bert encode` end to end on the real MiniLM weights."""

import io
import json
import sys

import numpy as np
import pytest

from keras_bert.cli import main
from tests.reference import minilm_dir, require

LINES = ["Call me Ishmael.", "", "The State of the Union is strong.",
         "Naïve café owners ate crème brûlée — twice!"]


@pytest.fixture(scope="module")
def converted(tmp_path_factory):
    dest = tmp_path_factory.mktemp("cli") / "minilm"
    assert main(["convert", minilm_dir(), str(dest)]) == 0
    return str(dest)


def _encode(monkeypatch, capsys, model_dir, *flags):
    monkeypatch.setattr(sys, "stdin", io.StringIO("\n".join(LINES) + "\n"))
    assert main(["encode", model_dir, *flags]) == 0
    return [json.loads(line) for line in capsys.readouterr().out.splitlines()]


@pytest.mark.parametrize("pooling", ["pooled", "cls", "mean"])
def test_encode_matches_transformers(monkeypatch, capsys, converted, pooling):
    torch = require("torch")
    transformers = require("transformers")
    vectors = _encode(monkeypatch, capsys, converted, "--pooling", pooling, "--batch-size", "3")
    assert len(vectors) == len(LINES)  # one line out per line in, empty ones included
    assert all(len(v) == 384 for v in vectors)
    tokenizer = transformers.BertTokenizerFast.from_pretrained(minilm_dir())
    model = transformers.BertModel.from_pretrained(minilm_dir()).eval()
    batch = tokenizer(LINES, padding=True, return_tensors="pt")
    with torch.no_grad():
        out = model(**batch)
    mask = batch["attention_mask"][:, :, None].float()
    expected = {"pooled": out.pooler_output,
                "cls": out.last_hidden_state[:, 0],
                "mean": (out.last_hidden_state * mask).sum(1) / mask.sum(1)}[pooling]
    np.testing.assert_allclose(np.array(vectors), expected.numpy(), atol=1e-4)


def test_convert_reports_errors(capsys, tmp_path):
    assert main(["convert", str(tmp_path / "missing"), str(tmp_path / "out")]) == 2
    assert "Not a directory" in capsys.readouterr().err
    assert main(["encode", str(tmp_path)]) == 2
    assert "not a keras_bert model directory" in capsys.readouterr().err
