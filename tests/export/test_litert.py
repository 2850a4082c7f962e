"""The LiteRT export, run in `ai-edge-litert`'s interpreter with TF Text's TFLite kernels,
against the same model's SavedModel run through TF Serving's loader (`SessionBundle`).

Every held-out string is checked end to end: where the file's tokenizer (TF Text's
FastBertTokenizer) gives the SavedModel's ids, the text answers agree (floats within 1e-4,
label names equal); where it does not (the measured tokenizer difference,
`test_litert_tokenizer.py`), the network and outputs are checked on the file's own ids
through both exports' `serve_ids`.
"""

import json
import os

import numpy as np
import pytest
import tensorflow as tf

from keras_bert.cli import main
from keras_bert.export.litert import custom_ops
from keras_bert.export.litert_runtime import LiteRTModel
from keras_bert.export.session_bundle import SessionBundle
from keras_bert.tasks.task_dir import export_model
from tests.export.helpers import LITERT_LABELS, LITERT_SEQ, make_tiny_task_dir
from tests.support.tokenizer_parity import corpus_lines, uncased_vocab_path
from tests.text.test_tokenizer import HARD_CASES

pytest.importorskip("ai_edge_litert")

LABELS = LITERT_LABELS
SEQ = LITERT_SEQ
IDS = ("input_word_ids", "input_mask", "input_type_ids")


def held_out_texts() -> list[str]:
    """Corpus lines, the tokenizer's hard cases and the export's own: empty, 100,000
    characters, non-ASCII, and texts of SEQ - 3, SEQ - 2 and SEQ - 1 word pieces (the
    length limit: [CLS] and [SEP] take two)."""
    return (corpus_lines()[::40] + HARD_CASES + ["", "a" * 100_000, "word " * 20_000,
            "Ελληνικά, 中文, naïve café — “quotes”", *["the " * n for n in (29, 30, 31)]])


def _task_dir(root, task: dict, labels=None) -> str:
    return make_tiny_task_dir(root, task, labels, vocab_file=uncased_vocab_path())


@pytest.fixture(scope="module")
def classifier(litert_classifier_dir, litert_classifier_file, tmp_path_factory):
    """A tiny classifier's SavedModel and LiteRT exports (float32), with the GELU of Google's
    releases (the tanh approximation: one model for its test and the others; the exact
    GELU's LiteRT file: `test_a_windowed_file_says_what_it_read_as_the_saved_model`). The
    task directory and LiteRT file are `tests/export/conftest.py`'s, which
    `test_litert_runtime.py` reads too."""
    saved = export_model(litert_classifier_dir,
                         str(tmp_path_factory.mktemp("litert") / "saved"), target=None)
    return litert_classifier_dir, saved, litert_classifier_file


def _bundle_run(path: str, signature: str, inputs: dict) -> dict:
    with SessionBundle(path) as bundle:
        return bundle.run(signature, inputs)


def _same_ids(lite_ids: dict, saved_ids: dict) -> bool:
    return all(np.array_equal(lite_ids[k], saved_ids[k]) for k in IDS)


def compare(saved_path: str, lite_path: str, texts: list[str], atol: float = 1e-4) -> int:
    """Checks every text (see the module docstring); returns how many were tokenized
    differently."""
    differ = 0
    with LiteRTModel(lite_path) as lite, SessionBundle(saved_path) as bundle:
        for text in texts:
            batch = np.array([text.encode("utf-8", "surrogatepass")], dtype=object)
            lite_ids = lite.run("preprocess", text=batch)
            if _same_ids(lite_ids, bundle.run("preprocess", {"text": batch})):
                got, want = lite.run("serving_default", text=batch), bundle.run(
                    "serving_default", {"text": batch})
            else:
                differ += 1
                got = lite.run("serve_ids", **lite_ids)
                want = bundle.run("serve_ids", {k: lite_ids[k] for k in IDS})
            assert sorted(got) == sorted(want)
            for name, value in want.items():
                if value.dtype.kind == "f":
                    np.testing.assert_allclose(got[name], value, atol=atol, err_msg=name)
                else:
                    np.testing.assert_array_equal(got[name], value, err_msg=name)
    return differ


def test_layout_and_metadata(classifier):
    _, saved, lite = classifier
    files = sorted(os.listdir(lite.path))
    assert files == ["labels.txt", "metadata.json", "model.tflite", "vocab.txt"]
    with open(os.path.join(lite.path, "metadata.json"), encoding="utf-8") as f:
        on_disk = json.load(f)
    with LiteRTModel(lite.path) as model:
        assert model.metadata == on_disk == lite.metadata  # the file carries the same JSON
        assert model.labels == LABELS
        for name in ("serving_default", "serve_ids", "preprocess"):
            assert model.signatures[name] == saved.signatures[name], name
        assert sorted(model.interpreter.get_signature_list()) == sorted(saved.signatures)


def test_the_tanh_gelu_of_googles_releases_exports_and_answers_as_the_saved_model(classifier):
    """A model with Google's GELU (the tanh approximation: `Tanh` and `Pow`) passes the TF
    Serving op audit of every target and answers in LiteRT as its SavedModel."""
    from keras_bert.export.op_audit import TARGETS, check

    _, saved, lite = classifier
    for target in TARGETS:
        report = check(saved.path, target)
        assert report.ok and {"Tanh", "Pow"} <= set(report.ops), target
    compare(saved.path, lite.path, corpus_lines()[::200] + HARD_CASES[:8])


def test_classifier_answers_as_the_saved_model(classifier):
    _, saved, lite = classifier
    texts = held_out_texts()
    differ = compare(saved.path, lite.path, texts)
    assert differ < len(texts) // 4  # the corpus itself is tokenized identically
    answers = LiteRTModel(lite.path).predict(["Call me Ishmael.", "the " * 31])
    assert answers[0]["label"] in LABELS
    assert answers[1]["num_tokens"] == 31 and answers[1]["truncated"]


def test_length_limit_as_the_saved_model(classifier):
    _, saved, lite = classifier
    texts = ["the " * n for n in (SEQ - 3, SEQ - 2, SEQ - 1)]
    got = LiteRTModel(lite.path)(texts)
    want = _bundle_run(saved.path, "serving_default", {"text": np.array(texts, dtype=object)})
    np.testing.assert_array_equal(got["num_tokens"], [SEQ - 3, SEQ - 2, SEQ - 1])
    np.testing.assert_array_equal(got["truncated"], [False, False, True])
    np.testing.assert_array_equal(got["truncated"], want["truncated"])
    np.testing.assert_allclose(got["logits"], want["logits"], atol=1e-4)


def _hidden_widths(model: LiteRTModel) -> set[int]:
    """The sequence widths of `serving_default`'s `[1, width, hidden]` tensors (the
    network's activations) after the last call; `hidden` read from the word embeddings'
    `[vocab_size, hidden]` table; 1, the `[CLS]` row the pooler reads, left out."""
    interpreter = model.interpreter
    index = interpreter._interpreter.GetSubgraphIndexFromSignature("serving_default")
    shapes = [tuple(int(n) for n in d["shape"])
              for d in interpreter.get_tensor_details(subgraph_index=index)]
    vocab = model.metadata["tokenizer"]["vocab_size"]
    hidden = next(shape[1] for shape in shapes if len(shape) == 2 and shape[0] == vocab)
    return {shape[1] for shape in shapes
            if len(shape) == 3 and shape[::2] == (1, hidden)} - {1}


def test_network_runs_at_each_texts_length(classifier):
    """The network computes at each text's packed length, not at max_length, whatever
    the length before it; the one interpreter resizes (it is not rebuilt) and answers as
    the SavedModel does after every change of length."""
    _, saved, lite = classifier
    model = LiteRTModel(lite.path)
    interpreter = model.interpreter
    with SessionBundle(saved.path) as bundle:
        for n in (5, 20, 3, 3, SEQ + 8, 0, 12):
            text = np.array(["the " * n], dtype=object)
            got = model.run("serving_default", text=text)
            want = bundle.run("serving_default", {"text": text})
            np.testing.assert_allclose(got["logits"], want["logits"], atol=1e-4, err_msg=n)
            assert _hidden_widths(model) == {min(n, SEQ - 2) + 2}, n
    assert model.interpreter is interpreter


@pytest.mark.slow
@pytest.mark.parametrize("task,labels", [
    ({"kind": "multilabel", "seq_length": SEQ, "thresholds": [0.4, 0.5, 0.6]}, LABELS),
    ({"kind": "regress", "seq_length": SEQ}, None),
    ({"kind": "embed", "seq_length": SEQ}, None)])
def test_each_sentence_kind_answers_as_the_saved_model(tmp_path, task, labels):
    task_dir = _task_dir(tmp_path, task, labels)
    saved = export_model(task_dir, str(tmp_path / "saved"), target=None)
    lite = export_model(task_dir, str(tmp_path / "lite"), format="litert",
                        tokenizer="fast-bert")
    assert sorted(lite.metadata["signatures"]) == sorted(saved.signatures)
    compare(saved.path, lite.path, corpus_lines()[:20] + HARD_CASES[:10] + [""])


def test_ids_only_file(classifier, tmp_path):
    task_dir, saved, _ = classifier
    lite = export_model(task_dir, str(tmp_path / "ids"), format="litert", tokenizer="none")
    model = LiteRTModel(lite.path)
    assert sorted(model.signatures) == ["serve_ids"]
    with open(lite.file, "rb") as f:
        assert custom_ops(f.read()) == []  # builtin ops only: any LiteRT build runs it
    with pytest.raises(ValueError, match="takes token ids"):
        model(["text"])
    ids = _bundle_run(saved.path, "preprocess", {"text": np.array(["Call me Ishmael."],
                                                                  dtype=object)})
    got = model.run("serve_ids", **ids)
    want = _bundle_run(saved.path, "serve_ids", ids)
    np.testing.assert_allclose(got["logits"], want["logits"], atol=1e-4)


# ----------------------------------------------------------------------------- bad input
def test_refuses_what_the_format_cannot_hold(tiny_model_dir, tmp_path, capsys):
    """Every kind goes to LiteRT; what is left is refused in one line: a tokenizer that
    keeps literal special tokens (FastBert splits them), no tokenizer choice, SavedModel
    options. The model: the session's tiny encoder (`tests/conftest.py`), whose vocabulary
    is neither Google's nor Hugging Face's."""
    from keras_bert.checkpoints import load_model_dir
    from keras_bert.text.preprocessor import BertPreprocessor
    from keras_bert.text.tokenizer import BertTokenizer
    from tests.export.helpers import task_model

    base = load_model_dir(tiny_model_dir)
    keeps = BertPreprocessor(BertTokenizer(base.preprocessor().tokenizer.vocab,
                                           preserve_special_tokens=True), 16)
    model = task_model({"kind": "classify", "seq_length": 16}, base.load_encoder(), keeps,
                       ["a", "b"])
    with pytest.raises(ValueError, match="keeps literal special tokens") as raised:
        model.export(str(tmp_path / "a"), format="litert", tokenizer="fast-bert")
    assert "\n" not in str(raised.value)
    task_dir = tiny_model_dir
    with pytest.raises(ValueError, match="xla: not an option of the LiteRT export"):
        export_model(task_dir, str(tmp_path / "d"), format="litert", tokenizer="none", xla=True)
    assert not any(p.exists() for p in (tmp_path / "a", tmp_path / "d"))
    code = main(["export", task_dir, str(tmp_path / "e"), "--format", "litert"])
    err = capsys.readouterr().err.strip()
    assert code != 0 and err.count("\n") == 0 and "neither Google's nor Hugging Face's" in err
    assert not (tmp_path / "e").exists()


def test_cli_refusal_is_one_line(classifier, tmp_path, capsys):
    task_dir, _, _ = classifier
    code = main(["export", task_dir, str(tmp_path / "x"), "--format", "litert", "--xla",
                 "--litert-tokenizer", "fast-bert"])
    err = capsys.readouterr().err.strip()
    assert code != 0 and err.count("\n") == 0 and "--xla: not an option of --format litert" in err
    code = main(["export", task_dir, str(tmp_path / "y"), "--quantize", "int8"])
    err = capsys.readouterr().err.strip()
    assert code != 0 and err.count("\n") == 0 and "SavedModel has no int8 form" in err


def test_refuses_a_file_another_tool_wrote(tmp_path):
    module = tf.Module()
    module.f = tf.function(lambda x: {"y": x * 2.0},
                           input_signature=[tf.TensorSpec([None], tf.float32)])
    converter = tf.lite.TFLiteConverter.from_concrete_functions(
        [module.f.get_concrete_function()], module)
    (tmp_path / "other.tflite").write_bytes(converter.convert())
    with pytest.raises(ValueError, match="written by another tool"):
        LiteRTModel(str(tmp_path / "other.tflite"))
    (tmp_path / "junk.tflite").write_bytes(b"\x00" * 64)
    with pytest.raises(ValueError, match="not a LiteRT"):
        LiteRTModel(str(tmp_path / "junk.tflite"))


def test_wrong_input_type_leaves_the_interpreter_answering(classifier):
    _, _, lite = classifier
    model = LiteRTModel(lite.path)
    first = model(["Call me Ishmael."])
    with pytest.raises(TypeError, match="a string or a list of strings, got int"):
        model([1, 2])
    with pytest.raises(ValueError, match="serving_default takes text"):
        model.run("serving_default", input_word_ids=np.zeros([1, 4], np.int32))
    with pytest.raises((ValueError, RuntimeError)):  # LiteRT's own check of the dtype
        model.run("serving_default", text=np.zeros([1], np.float32))
    again = model(["Call me Ishmael."])
    np.testing.assert_array_equal(again["logits"], first["logits"])


def test_cli_writes_a_quantized_file_with_label_names(classifier, tmp_path, capsys):
    task_dir, _, _ = classifier
    assert main(["export", task_dir, str(tmp_path / "q"), "--format", "litert",
                 "--quantize", "int8", "--litert-tokenizer", "fast-bert"]) == 0
    assert "model.tflite" in capsys.readouterr().out
    with LiteRTModel(str(tmp_path / "q" / "1")) as model:
        assert model.metadata["quantize"] == "int8"
        answers = model.predict(["Call me Ishmael.", "", "naïve café"])
    assert all(a["label"] in LABELS for a in answers)


def test_a_windowed_file_says_what_it_read_as_the_saved_model(tmp_path):
    """The README tier's guard of the windowed LiteRT graph (`litert_windows.py`), which
    `test_litert_spans.py` checks for every windowed kind in the slow tier: a classifier at
    16 pieces (14 a window) reading in windows 3 pieces apart, at most 3 a text, answers
    and says what it read (`num_tokens`, `num_windows`, `truncated`) as its SavedModel."""
    task = {"kind": "classify", "seq_length": 16,
            "long_text": {"mode": "windows", "doc_stride": 3, "max_windows": 3}}
    task_dir = make_tiny_task_dir(tmp_path, task, LABELS, vocab_file=uncased_vocab_path())
    saved = export_model(task_dir, str(tmp_path / "saved"), target=None)
    lite = export_model(task_dir, str(tmp_path / "lite"), format="litert", tokenizer="fast-bert")
    texts = ["", "the " * 14, "the " * 15, "the " * 17, "the " * 40]
    with LiteRTModel(lite.path) as model, SessionBundle(saved.path) as bundle:
        got = model(text=texts)
        want = bundle.run("serving_default", {"text": np.array([t.encode() for t in texts],
                                                               dtype=object)})
    # One window up to 14 pieces; 15 and 17 pieces need a second (starting at piece 3);
    # 40 would need 10 and read the first 3 (pieces 0-19 of 40): truncated.
    assert want["num_windows"].tolist() == [1, 1, 2, 2, 3]
    assert want["truncated"].tolist() == [False, False, False, False, True]
    assert want["num_tokens"].tolist() == [0, 14, 15, 17, 40]
    for name in ("num_tokens", "num_windows", "truncated"):
        np.testing.assert_array_equal(got[name], want[name], err_msg=name)
    np.testing.assert_allclose(got["logits"], want["logits"], atol=1e-4)
