"""Model Garden's own BERT checkpoints and TF Hub SavedModels, converted and checked against
Model Garden itself (slow: it builds `tf-models-official` 2.20.0's environment).

`run_model_garden.py` makes, in that environment, small random BERTs, one cased with the
masked LM head and one uncased without: their TF2 checkpoints (`tf.train.Checkpoint`), the
encoder SavedModels that `official.nlp.tools.export_tfhub_lib` exports from them (what TF Hub
and Kaggle's `tensorflow/bert` hold), the matching preprocessing SavedModels, and the
encoders' outputs as `tf.saved_model.load` runs them there, on held-out text tokenized by
that preprocessing. Here each checkpoint and SavedModel is converted and must give those
outputs within 1e-5 (and the masked LM head its logits); the converted tokenizer must give
the same ids; a random encoder written as a Model Garden checkpoint here must restore into
Model Garden's `BertEncoder` there and give our outputs; and a classifier fine-tuned from a
converted SavedModel must answer in TF Serving's Session loader as in process.
"""

from __future__ import annotations

import json
import os
import subprocess

import numpy as np
import pytest

from keras_bert.checkpoints import load_model_dir
from keras_bert.checkpoints.conversion import write_checkpoint
from keras_bert.environment import user_environment
from keras_bert.tasks.task_conversion import convert
from keras_bert.text.preprocessor import BertPreprocessor
from keras_bert.text.vocab_builder import build_vocab, save_vocab
from tests.checkpoints.model_garden_env import SCRIPT, model_garden_python
from tests.export.helpers import run_fresh

pytestmark = [pytest.mark.slow, pytest.mark.timeout(2400), pytest.mark.slow(env="tf-models-2.20.0")]

CORPUS = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(__file__))),
                      "keras_bert", "data", "corpus", "moby_dick.txt")
SEQ = 32
IDS = ("input_word_ids", "input_mask", "input_type_ids")
# name -> (lower_case, with the masked LM head)
# Each casing and each head once: every case costs Model Garden two SavedModel exports (~25 s).
CASES = {"cased-mlm": (False, True), "uncased": (True, False)}
LAYOUTS = {"hub": "tf_hub", "ckpt": "model_garden"}
CLASSIFIED = "uncased"  # the case with a fine-tuned Model Garden classifier too


def _lines() -> list[str]:
    with open(CORPUS, encoding="utf-8") as f:
        return [line.strip() for line in f if len(line.split()) > 3]


def _held_out() -> list[str]:
    """Text the vocabularies were not learned from (the corpus' end), and some harder."""
    return [*_lines()[-12:], "", "Naïve café owners ate CRÈME BRÛLÉE!", "Ahab's whale—white?",
            "北京 and 東京", "the whale 🐳 sat", "x" * 40]


@pytest.fixture(scope="module")
def made(tmp_path_factory):
    """The Model Garden cases (see the module docstring), `{name: folder}`, and the outputs
    of Model Garden's `BertEncoder` restored from `written`'s checkpoint (`"restored"`)."""
    root = tmp_path_factory.mktemp("model_garden")
    train = _lines()[:600]
    vocabs = {}
    for lower_case in (False, True):
        vocabs[lower_case] = str(root / f"vocab-{'uncased' if lower_case else 'cased'}.txt")
        save_vocab(build_vocab(train, 400, lower_case=lower_case), vocabs[lower_case])
    cases = [{"dir": str(root / name), "vocab": vocabs[lower_case], "lower_case": lower_case,
              "with_mlm": with_mlm, "seed": seed, "classifier": name == CLASSIFIED}
             for seed, (name, (lower_case, with_mlm)) in enumerate(CASES.items())]
    written = _written(root, vocabs[False])
    restore = {"dir": written["dir"], "inputs": written["inputs"],
               "outputs": str(root / "restored.npz")}
    # One run of Model Garden's environment (its imports alone take ~25 s).
    _run(root, {"texts": _held_out(), "cases": cases, "restore": [restore]})
    return {**{name: root / name for name in CASES}, "restored": restore["outputs"],
            "written": written}


def _written(root, vocab_file: str) -> dict:
    """A random keras_bert encoder written by `convert --to model-garden`'s writer, the ids
    of the held-out text and its outputs on them (every variable drawn at random)."""
    import keras

    from keras_bert.checkpoints.model_dir import save_model_dir
    from keras_bert.config import BertConfig
    from keras_bert.models.encoder import BertEncoder

    keras.utils.set_random_seed(9)
    with open(vocab_file, encoding="utf-8") as f:
        size = len(f.read().splitlines())
    encoder = BertEncoder(BertConfig(vocab_size=size, hidden_size=32, num_layers=2,
                                     num_heads=4, intermediate_size=48,
                                     max_position_embeddings=64,
                                     hidden_act="gelu_approximate"))
    rng = np.random.default_rng(9)
    for v in encoder.weights:
        base = 1.0 if v.path.endswith("gamma") else 0.0
        v.assign(base + 0.3 * rng.standard_normal(v.shape).astype("float32"))
    source = save_model_dir(encoder, str(root / "ours"), vocab_file, lower_case=False)
    dest = write_checkpoint(source.path, str(root / "ours-model-garden"), to="model_garden")
    packed = BertPreprocessor(source.tokenizer(), seq_length=SEQ)(np.array(_held_out()))
    ids = {k: np.asarray(packed[k]) for k in IDS}
    np.savez(root / "ours-in.npz", **ids)
    outputs = encoder(ids, training=False)
    return {"dir": dest, "inputs": str(root / "ours-in.npz"),
            **{k: np.asarray(outputs[k]) for k in ("sequence_output", "pooled_output")}}


def _run(root, spec: dict) -> None:
    manifest = root / "spec.json"
    manifest.write_text(json.dumps(spec))
    env = user_environment(TF_CPP_MIN_LOG_LEVEL="3")
    env.pop("PYTHONPATH", None)
    done = subprocess.run([model_garden_python(), SCRIPT, str(manifest)], cwd=str(root),
                          env=env, capture_output=True, text=True, timeout=1200)
    assert done.returncode == 0, done.stderr[-3000:]


@pytest.fixture(scope="module")
def converted(made, tmp_path_factory):
    """Each case's SavedModel and checkpoint converted by `convert`: `{(name, layout): dir}`."""
    root = tmp_path_factory.mktemp("converted")
    return {(name, layout): convert(str(made[name] / layout), str(root / f"{name}-{layout}"))
            for name in CASES for layout in LAYOUTS}


def _reference(made, name) -> dict:
    with np.load(made[name] / "reference.npz") as data:
        return {k: data[k] for k in data.files}


@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("name", CASES)
def test_converted_encoder_answers_as_model_garden(made, converted, name, layout):
    model_dir, reference = converted[(name, layout)], _reference(made, name)
    assert model_dir.metadata["format"] == LAYOUTS[layout]
    assert model_dir.lower_case is CASES[name][0]  # the SavedModel's do_lower_case / vocab
    with open(made[name] / "ckpt" / "vocab.txt", encoding="utf-8") as f:
        assert model_dir.tokenizer().vocab == f.read().splitlines()
    packed = BertPreprocessor(model_dir.tokenizer(), seq_length=SEQ)(np.array(_held_out()))
    for key in IDS:  # the same ids as Model Garden's preprocessing SavedModel
        np.testing.assert_array_equal(np.asarray(packed[key]), reference[key], err_msg=key)
    outputs = model_dir.load_encoder()({k: reference[k] for k in IDS}, training=False)
    for key in ("sequence_output", "pooled_output"):
        np.testing.assert_allclose(np.asarray(outputs[key]), reference[key], rtol=0, atol=1e-5,
                                   err_msg=key)


@pytest.mark.parametrize("layout", LAYOUTS)
def test_masked_lm_head_is_kept(made, converted, layout):
    """A `model_with_mlm` SavedModel and a `BertPretrainerV2` checkpoint keep their masked LM
    head: `pretrain --init` continues from the logits Model Garden's `mlm` gives."""
    from keras_bert.checkpoints.formats import load_pretrainer

    (name,) = [n for n, (_, with_mlm) in CASES.items() if with_mlm]
    reference = _reference(made, name)
    pretrainer = load_pretrainer(converted[(name, layout)].path)
    logits = pretrainer({k: reference[k] for k in (*IDS, "masked_lm_positions")},
                        training=False)["mlm_logits"]
    np.testing.assert_allclose(np.asarray(logits), reference["mlm_logits"], rtol=0, atol=1e-5)


def test_written_checkpoint_restores_into_model_gardens_encoder(made):
    """`--to model-garden`'s checkpoint, restored into Model Garden's `BertEncoder` as its
    exporter restores one, gives our encoder's outputs."""
    with np.load(made["restored"]) as restored:
        for key in ("sequence_output", "pooled_output"):
            np.testing.assert_allclose(restored[key], made["written"][key], rtol=0, atol=1e-5,
                                       err_msg=key)


def test_model_gardens_fine_tuned_classifier_converts_with_its_head(made, tmp_path):
    """`BertClassifier`'s checkpoint becomes a text classifier whose logits are Model
    Garden's (the ids of its preprocessing, within 1e-5), and which answers so from TF
    Serving's loader too."""
    from keras_bert.tasks.task_model import TextTaskModel

    model_dir = convert(str(made[CLASSIFIED] / "clf"), str(tmp_path / "clf"))
    model = TextTaskModel.load(model_dir.path)
    assert list(model.labels.names) == ["LABEL_0", "LABEL_1", "LABEL_2"]
    reference = _reference(made, CLASSIFIED)
    with np.load(made[CLASSIFIED] / "clf_reference.npz") as data:
        want = data["logits"]
    logits = model.network({k: reference[k] for k in IDS}, training=False)
    np.testing.assert_allclose(np.asarray(logits), want, rtol=0, atol=1e-5)
    served = run_fresh(model.export(str(tmp_path / "export")), "serve_ids",
                       {k: reference[k] for k in IDS}, tmp_path)
    np.testing.assert_allclose(served["logits"], want, rtol=0, atol=1e-5)


def test_classifier_fine_tuned_from_a_hub_saved_model_answers_in_tf_serving(converted,
                                                                            tmp_path):
    import keras

    from keras_bert import TextClassifier

    keras.utils.set_random_seed(0)
    source = load_model_dir(converted[("cased-mlm", "hub")].path).path
    clf = TextClassifier.from_pretrained(source, labels=["land", "sea"], seq_length=SEQ,
                                         precision="float32")
    clf.compile()
    texts = _lines()[:16]
    clf.fit(texts, ["sea" if "whale" in t.lower() else "land" for t in texts], epochs=1,
            batch_size=8, seed=0, verbose=0)
    asked = np.array(_held_out(), dtype=object)
    want = clf.predict(list(asked))
    served = run_fresh(clf.export(str(tmp_path / "export")), "serving_default",
                       {"text": asked}, tmp_path)
    np.testing.assert_allclose(served["logits"], want["logits"], rtol=0, atol=1e-5)
    assert [v.decode() for v in served["label"]] == list(want["label"])
