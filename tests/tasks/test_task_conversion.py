"""`keras-bert convert` keeps the heads of fine-tuned Hugging Face BERT models: for each head
type a small random transformers model is saved, converted through the CLI, loaded as
keras_bert loads it, and compared with transformers on the same texts (token ids first,
then logits within 1e-4); each converted directory goes back `--to huggingface` and
transformers loads it with no missing or unexpected weights. One classifier goes on through
`keras-bert export` into TF Serving's loader and answers what transformers predicts."""

from __future__ import annotations

import json
import warnings

import numpy as np
import pytest

from keras_bert.checkpoints import load_model_dir
from keras_bert.checkpoints.formats import load_pretrainer
from keras_bert.checkpoints.pretraining_heads import PRETRAINING_HEADS
from keras_bert.cli import main
from keras_bert.tasks.task_dir import read_task_dir
from keras_bert.tasks.task_model import TextTaskModel
from tests.support.reference import require

VOCAB = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", *(
    "the a cat dog sat on mat call me ishmael who is where capital of union paris rome "
    "naive cafe own ##ers sailed to sea what . , ! ? ##s ##ed").split()]
TEXTS = ["Call me Ishmael.", "The cats sat on the mat!",
         "Naïve café owners sailed to Paris, twice?"]  # accents, wordpieces, [UNK]
TEXTS_B = ["Who is Ishmael?", "a dog", "where is the capital of the union?"]
TOLERANCE = 1e-4


PARITY: dict[str, float] = {}  # max |ours - transformers| per output, shown with `pytest -s`


@pytest.fixture(scope="module")
def hf():
    yield require("torch"), require("transformers")
    for name, diff in PARITY.items():
        print(f"parity {name}: max |ours - transformers| = {diff:.1e}")


def _hf_dir(tmp_path, hf, class_name: str, seed: int = 0, **config) -> tuple[str, object]:
    """A random `transformers.<class_name>` (every weight moved off its initial value) saved
    with an uncased vocab.txt and tokenizer_config.json."""
    torch, transformers = hf
    path = tmp_path / class_name
    path.mkdir()
    (path / "vocab.txt").write_text("\n".join(VOCAB) + "\n", encoding="utf-8")
    torch.manual_seed(seed)
    model = getattr(transformers, class_name)(transformers.BertConfig(
        vocab_size=len(VOCAB), hidden_size=64, num_hidden_layers=2, num_attention_heads=4,
        intermediate_size=128, **config)).eval()
    with torch.no_grad():
        for p in model.parameters():
            p.add_(torch.randn_like(p) * 0.1)
    model.save_pretrained(str(path))
    (path / "tokenizer_config.json").write_text(json.dumps(
        {"do_lower_case": True, "tokenizer_class": "BertTokenizer"}), encoding="utf-8")
    return str(path), model


def _convert(capsys, *argv) -> str:
    assert main(["convert", *argv]) == 0, capsys.readouterr().err
    return capsys.readouterr().out


def _same_inputs(hf, hf_path, preprocessor, texts, texts_b=None):
    """Our preprocessor's and transformers' BertTokenizerFast's ids for the same texts,
    asserted equal; returns `(ours, theirs)` model inputs."""
    torch, transformers = hf
    tokenizer = transformers.BertTokenizerFast.from_pretrained(hf_path)
    theirs = tokenizer(texts, texts_b, padding=True, return_tensors="np")
    segments = texts if texts_b is None else (texts, texts_b)
    ours = {k: v.numpy() for k, v in preprocessor.with_length(None, 64)(segments).items()}
    for our_name, their_name in (("input_word_ids", "input_ids"),
                                 ("input_mask", "attention_mask"),
                                 ("input_type_ids", "token_type_ids")):
        np.testing.assert_array_equal(ours[our_name], theirs[their_name], err_msg=our_name)
    assert (ours["input_word_ids"] == VOCAB.index("[UNK]")).any()  # "twice" has no pieces
    return ours, {k: torch.tensor(v) for k, v in theirs.items()}


def _close(name: str, ours, theirs, mask=None) -> None:
    ours, theirs = np.asarray(ours), np.asarray(theirs)
    if mask is not None:
        ours, theirs = ours[mask.astype(bool)], theirs[mask.astype(bool)]
    diff = PARITY[name] = float(np.max(np.abs(ours - theirs)))
    assert diff <= TOLERANCE, (name, diff)


def _back_to_hf(capsys, hf, converted: str, tmp_path, class_name: str, theirs: dict,
                expected: dict, output: str) -> dict:
    """`convert DIR --to huggingface`: transformers loads every weight of `class_name` and
    answers what the original model answered; returns the written config."""
    torch, transformers = hf
    back = str(tmp_path / f"{class_name}-back")
    assert class_name in _convert(capsys, converted, back, "--to", "huggingface")
    model, info = getattr(transformers, class_name).from_pretrained(
        back, output_loading_info=True)
    assert not info["missing_keys"] and not info["unexpected_keys"], info
    with torch.no_grad():
        got = getattr(model.eval()(**theirs), output).numpy()
    np.testing.assert_allclose(got, expected[output], atol=1e-5)
    with open(f"{back}/config.json", encoding="utf-8") as f:
        return json.load(f)


def _run_hf(hf, model, inputs: dict) -> dict:
    torch, _ = hf
    with torch.no_grad():
        out = model(**inputs)
    return {k: v.numpy() for k, v in out.items() if hasattr(v, "numpy")}


# ----------------------------------------------------------------- sequence classification
@pytest.mark.needs_torch
@pytest.mark.slow  # 30-42 s: kept out of the README's tier (under 15 min); CI runs it once a cycle
def test_sequence_classification_keeps_head_and_labels(hf, tmp_path, capsys):
    names = ["negative", "neutral", "positive"]
    src, reference = _hf_dir(tmp_path, hf, "BertForSequenceClassification",
                             id2label=dict(enumerate(names)),
                             problem_type="single_label_classification")
    dest = str(tmp_path / "classify")
    out = _convert(capsys, src, dest, "--pair")
    assert "kept the BertForSequenceClassification head as a classify model, 3 labels: " \
           "negative, neutral, positive" in out
    loaded, loaded_block = TextTaskModel.load(dest), read_task_dir(dest).block
    assert loaded.kind == "classify" and loaded.labels.names == names
    assert loaded_block["pooling"] == "pooled" and loaded_block["pair"] is True
    assert loaded_block["seq_length"] == 512  # max_position_embeddings; vocab-only tokenizer
    ours, theirs = _same_inputs(hf, src, loaded.preprocessor, TEXTS, TEXTS_B)  # segment ids
    expected = _run_hf(hf, reference, theirs)
    _close("classify logits", loaded.network(ours), expected["logits"])
    config = _back_to_hf(capsys, hf, dest, tmp_path, "BertForSequenceClassification", theirs,
                         expected, "logits")
    assert config["id2label"] == {"0": "negative", "1": "neutral", "2": "positive"}
    assert config["problem_type"] == "single_label_classification"


@pytest.mark.needs_torch
def test_regression_head(hf, tmp_path, capsys):
    src, reference = _hf_dir(tmp_path, hf, "BertForSequenceClassification", num_labels=1)
    dest = str(tmp_path / "regress")
    assert "as a regress model;" in _convert(capsys, src, dest)
    loaded = TextTaskModel.load(dest)
    assert loaded.kind == "regress" and loaded.labels is None
    ours, theirs = _same_inputs(hf, src, loaded.preprocessor, TEXTS)
    expected = _run_hf(hf, reference, theirs)
    assert expected["logits"].shape == (3, 1)
    _close("regress scores", loaded.network(ours), expected["logits"])
    config = _back_to_hf(capsys, hf, dest, tmp_path, "BertForSequenceClassification", theirs,
                         expected, "logits")
    assert config["problem_type"] == "regression" and len(config["id2label"]) == 1


@pytest.mark.slow  # 36 s on a busy 2-core Zen 3: a fresh TensorFlow process
@pytest.mark.needs_torch
def test_classifier_export_answers_through_tf_serving_loader(hf, tmp_path, capsys):
    from tests.export.helpers import run_fresh

    # No id2label: HF's own names LABEL_0, LABEL_1 are kept.
    src, reference = _hf_dir(tmp_path, hf, "BertForSequenceClassification", seed=1)
    dest, base = str(tmp_path / "classify"), str(tmp_path / "serving")
    assert "2 labels: LABEL_0, LABEL_1" in _convert(capsys, src, dest)
    assert main(["export", dest, base, "--version", "1"]) == 0
    served = run_fresh(f"{base}/1", "serving_default",
                       {"text": np.array(TEXTS, dtype=object)}, tmp_path)
    torch, transformers = hf
    batch = transformers.BertTokenizerFast.from_pretrained(src)(TEXTS, padding=True,
                                                                 return_tensors="pt")
    logits = _run_hf(hf, reference, batch)["logits"]
    want = [reference.config.id2label[int(i)] for i in logits.argmax(-1)]
    assert [label.decode() for label in served["label"]] == want
    probabilities = torch.softmax(torch.tensor(logits), -1).numpy()
    np.testing.assert_allclose(served["probabilities"], probabilities, atol=1e-5)


# --------------------------------------------------------------------- token classification
@pytest.mark.needs_torch
def test_token_classification_head(hf, tmp_path, capsys):
    tags = ["O", "B-PER", "I-PER", "B-LOC", "I-LOC"]
    src, reference = _hf_dir(tmp_path, hf, "BertForTokenClassification",
                             id2label=dict(enumerate(tags)))
    dest = str(tmp_path / "tag")
    assert main(["convert", src, dest, "--pair"]) == 2  # a sequence classifier's option
    (error,) = [line for line in capsys.readouterr().err.splitlines()
                if line.startswith("keras-bert convert: error:")]
    assert "pair" in error and "TokenClassifier" in error and not (tmp_path / "tag").exists()
    out = _convert(capsys, src, dest)
    assert "as a tag model, 5 labels: O, B-PER, I-PER, B-LOC, I-LOC" in out
    assert "left at their initial values: pooler" in out  # HF's token model has none
    loaded = TextTaskModel.load(dest)
    assert loaded.kind == "tag" and loaded.labels.names == tags
    ours, theirs = _same_inputs(hf, src, loaded.preprocessor, TEXTS)
    expected = _run_hf(hf, reference, theirs)
    _close("tag logits (real tokens)", loaded.network(ours), expected["logits"],
           mask=ours["input_mask"])
    config = _back_to_hf(capsys, hf, dest, tmp_path, "BertForTokenClassification", theirs,
                         expected, "logits")
    assert list(config["id2label"].values()) == tags


# ------------------------------------------------------------------------ question answering
@pytest.mark.needs_torch
def test_question_answering_head(hf, tmp_path, capsys):
    src, reference = _hf_dir(tmp_path, hf, "BertForQuestionAnswering")
    dest = str(tmp_path / "squad")
    assert "as a squad model;" in _convert(capsys, src, dest)
    loaded, loaded_block = TextTaskModel.load(dest), read_task_dir(dest).block
    assert loaded.kind == "squad"
    assert (loaded_block["seq_length"], loaded_block["doc_stride"],
            loaded_block["max_query_length"]) == (384, 128, 64)
    ours, theirs = _same_inputs(hf, src, loaded.preprocessor, TEXTS_B, TEXTS)
    expected = _run_hf(hf, reference, theirs)
    got = loaded.network(ours)
    for name in ("start_logits", "end_logits"):
        _close(f"squad {name} (real tokens)", got[name], expected[name],
               mask=ours["input_mask"])
    _back_to_hf(capsys, hf, dest, tmp_path, "BertForQuestionAnswering", theirs, expected,
                "start_logits")


# --------------------------------------------------------------------- pretraining heads
@pytest.mark.needs_torch
@pytest.mark.parametrize("class_name", ["BertForMaskedLM", "BertForPreTraining"])
def test_pretraining_heads_continue_pretraining(hf, tmp_path, capsys, class_name):
    src, reference = _hf_dir(tmp_path, hf, class_name)
    dest = str(tmp_path / "pretrain")
    out = _convert(capsys, src, dest)
    nsp = class_name == "BertForPreTraining"
    assert f"kept the {class_name} heads: masked LM{' and next sentence' * nsp} " \
           f"({PRETRAINING_HEADS}; pretrain --init" in out
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        pretrainer = load_pretrainer(dest)  # what `keras-bert pretrain --init DEST` builds
    warned = " ".join(str(w.message) for w in caught)
    assert ("no nsp and no pooler weights" in warned) == (not nsp), warned
    preprocessor = load_model_dir(dest).preprocessor()
    ours, theirs = _same_inputs(hf, src, preprocessor, TEXTS, TEXTS_B)
    expected = _run_hf(hf, reference, theirs)
    positions = np.array([[1, 3, 5], [2, 4, 6], [1, 2, 9]], np.int32)
    got = pretrainer({**ours, "masked_lm_positions": positions})
    want = np.take_along_axis(expected["logits" if not nsp else "prediction_logits"],
                              positions[:, :, None], axis=1)
    _close(f"{class_name} MLM logits", got["mlm_logits"], want)
    if nsp:
        _close("BertForPreTraining NSP logits", got["nsp_logits"],
               expected["seq_relationship_logits"])
    _back_to_hf(capsys, hf, dest, tmp_path, class_name, theirs, expected,
                "prediction_logits" if nsp else "logits")


# ------------------------------------------------------------------ heads we cannot keep
@pytest.mark.parametrize("class_name", ["BertForMultipleChoice",
                                        "BertForNextSentencePrediction"])
@pytest.mark.needs_torch
def test_unknown_head_is_refused_unless_encoder_only(hf, tmp_path, capsys, class_name):
    src, _ = _hf_dir(tmp_path, hf, class_name)
    assert main(["convert", src, str(tmp_path / "out")]) == 2
    (error,) = [line for line in capsys.readouterr().err.splitlines()
                if line.startswith("keras-bert convert: error:")]
    assert class_name in error and "--encoder-only" in error
    assert not (tmp_path / "out").exists()
    out = _convert(capsys, src, str(tmp_path / "out"), "--encoder-only")
    assert "dropped: " in out
    assert TextTaskModel.load(str(tmp_path / "out")).kind == "embed"


@pytest.mark.needs_torch
def test_encoder_only_keeps_todays_behaviour(hf, tmp_path, capsys):
    src, _ = _hf_dir(tmp_path, hf, "BertForSequenceClassification")
    out = _convert(capsys, src, str(tmp_path / "enc"), "--encoder-only")
    assert "dropped: classifier" in out
    assert TextTaskModel.load(str(tmp_path / "enc")).kind == "embed"


# ----------------------------------------------------------------------------- multi-label
@pytest.mark.needs_torch
def test_multi_label_head(hf, tmp_path, capsys):
    torch, _ = hf
    names = ["toxic", "insult", "threat"]
    src, reference = _hf_dir(tmp_path, hf, "BertForSequenceClassification", seed=2,
                             id2label=dict(enumerate(names)),
                             problem_type="multi_label_classification")
    dest = str(tmp_path / "multilabel")
    assert "as a multilabel model, 3 labels: toxic, insult, threat" in _convert(capsys, src,
                                                                               dest)
    loaded, loaded_block = TextTaskModel.load(dest), read_task_dir(dest).block
    assert loaded.kind == "multilabel" and loaded.labels.names == names
    assert loaded_block["thresholds"] == [0.5, 0.5, 0.5]
    ours, theirs = _same_inputs(hf, src, loaded.preprocessor, TEXTS)
    expected = _run_hf(hf, reference, theirs)
    scores = torch.sigmoid(torch.tensor(expected["logits"])).numpy()
    _close("multilabel sigmoid scores", 1 / (1 + np.exp(-np.asarray(loaded.network(ours),
                                                                      np.float64))), scores)
    config = _back_to_hf(capsys, hf, dest, tmp_path, "BertForSequenceClassification", theirs,
                         expected, "logits")
    assert config["problem_type"] == "multi_label_classification"


# ------------------------------------------------------------------------------ decisions
def test_serving_length_and_label_rules(tmp_path):
    from keras_bert.checkpoints.hf_architectures import hf_label_names, serving_length

    config = {"max_position_embeddings": 512}
    assert serving_length(str(tmp_path), config) == 512
    assert serving_length(str(tmp_path), {"max_position_embeddings": 2048}) == 512
    (tmp_path / "tokenizer_config.json").write_text('{"model_max_length": 128}')
    assert serving_length(str(tmp_path), config) == 128
    for no_limit in ("1000000000000000019884624838656", "1e30"):  # transformers' "none"
        (tmp_path / "tokenizer_config.json").write_text(f'{{"model_max_length": {no_limit}}}')
        assert serving_length(str(tmp_path), config) == 512
    assert hf_label_names({"id2label": {"1": "b", "0": "a"}}) == ["a", "b"]
    assert hf_label_names({}) == ["LABEL_0", "LABEL_1"]
    with pytest.raises(ValueError, match="not 0..N-1"):
        hf_label_names({"id2label": {"0": "a", "2": "c"}})


def test_mean_pooled_classifier_has_no_hf_equivalent(tmp_path, capsys):
    from tests.export.helpers import make_tiny_task_dir

    task_dir = make_tiny_task_dir(tmp_path, {"kind": "classify", "seq_length": 16,
                                             "num_classes": 2, "pooling": "mean"}, ["a", "b"])
    assert main(["convert", task_dir, str(tmp_path / "hf"), "--to", "huggingface"]) == 2
    assert "mean pooling has no BertForSequenceClassification" in capsys.readouterr().err
    assert "BertModel" in _convert(capsys, task_dir, str(tmp_path / "hf"), "--to",
                                   "huggingface", "--encoder-only")
