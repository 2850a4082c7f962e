"""The TF Hub-style preprocess + encoder pair, loaded back with TensorFlow alone."""

import os

import numpy as np
import pytest
import tensorflow as tf

from keras_bert import BertConfig
from keras_bert.export.hub_pair import export_hub_pair
from keras_bert.models import BertPretrainer
from keras_bert.text import BertTokenizer
from keras_bert.text.packer import BertPacker
from keras_bert.text.preprocessor import BertPreprocessor

VOCAB = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "call", "me", "ish", "##mael", ".",
         "who", "?", "the", "whale"]
CONFIG = BertConfig(vocab_size=len(VOCAB), hidden_size=16, num_layers=2, num_heads=2,
                    intermediate_size=32, max_position_embeddings=64)


@pytest.fixture(scope="module")
def exported(tmp_path_factory):
    tokenizer = BertTokenizer(VOCAB)
    pretrainer = BertPretrainer.from_bert_config(CONFIG)
    paths = export_hub_pair(pretrainer.encoder, BertPreprocessor(tokenizer),
                            str(tmp_path_factory.mktemp("hub")),
                            pretrainer=pretrainer, default_seq_length=12)
    return paths, tokenizer, pretrainer


@pytest.fixture(scope="module")
def preprocess(exported):
    """The preprocess half, loaded once for the tests that read it."""
    return tf.saved_model.load(exported[0]["preprocess"])


def test_preprocess(exported, preprocess):
    _, tokenizer, _ = exported
    texts = tf.constant(["Call me Ishmael.", "Who? The whale."])
    ids = preprocess.tokenize(texts)
    assert ids.to_list() == tokenizer.tokenize(texts).to_list() == [[5, 6, 7, 8, 9],
                                                                   [10, 11, 12, 13, 9]]
    packed = preprocess(texts)
    assert packed["input_word_ids"].shape == (2, 12)
    pair = preprocess.bert_pack_inputs([ids, ids], seq_length=9)
    expected = BertPacker(9, 2, 3, 0)([ids, ids])
    for name in expected:
        np.testing.assert_array_equal(pair[name], expected[name])
    assert pair["input_word_ids"].numpy()[0].tolist() == [2, 5, 6, 7, 3, 5, 6, 7, 3]
    assert preprocess.bert_pack_inputs([ids], seq_length=20)["input_mask"].shape == (2, 20)


def test_encoder_and_mlm(exported, preprocess):
    paths, _, pretrainer = exported
    encoder = tf.saved_model.load(paths["encoder"])
    inputs = preprocess(tf.constant(["Call me Ishmael.", "The whale?"]))
    out = encoder(inputs)
    expected = pretrainer.encoder(inputs)
    np.testing.assert_allclose(out["pooled_output"], expected["pooled_output"], atol=1e-6)
    np.testing.assert_allclose(out["default"], expected["pooled_output"], atol=1e-6)
    assert len(out["encoder_outputs"]) == 2
    served = encoder.signatures["serving_default"](**inputs)
    assert sorted(served) == ["default", "pooled_output", "sequence_output"]
    positions = tf.constant([[1, 2], [3, 1]], tf.int32)
    mlm = encoder.mlm({**inputs, "masked_lm_positions": positions})["mlm_logits"]
    np.testing.assert_allclose(
        mlm, pretrainer({**inputs, "masked_lm_positions": positions})["mlm_logits"], atol=1e-5)
    assert mlm.shape == (2, 2, len(VOCAB))


def test_hub_pair_is_atomic_and_never_overwritten(exported, tmp_path, monkeypatch):
    paths, tokenizer, pretrainer = exported
    before = sorted(os.listdir(os.path.dirname(paths["encoder"])))
    with pytest.raises(FileExistsError, match="exists"):
        export_hub_pair(pretrainer.encoder, BertPreprocessor(tokenizer),
                        os.path.dirname(paths["encoder"]))
    assert sorted(os.listdir(os.path.dirname(paths["encoder"]))) == before
    # A failure while writing the encoder leaves neither half (nor a temporary directory).
    from keras_bert.export import hub_pair

    real = hub_pair.save_functions

    def fail_on_encoder(path, functions, *args, **kwargs):
        if "mlm" in functions or "tokenize" not in functions:
            raise RuntimeError("disk full")
        return real(path, functions, *args, **kwargs)

    monkeypatch.setattr(hub_pair, "save_functions", fail_on_encoder)
    with pytest.raises(RuntimeError, match="disk full"):
        export_hub_pair(pretrainer.encoder, BertPreprocessor(tokenizer), str(tmp_path / "pair"))
    assert os.listdir(tmp_path / "pair") == []


def test_preprocess_pads_to_the_models_length_else_128():
    """`__call__`'s length: the one asked for, else the model's fixed (training) length,
    else `DEFAULT_SEQ_LENGTH` (128, as TF Hub's BERT preprocessors)."""
    from keras_bert.export.hub_pair import preprocess_functions

    tokenizer = BertTokenizer(VOCAB)
    texts = tf.constant(["Call me Ishmael.", "Who?"])
    for preprocessor, asked, width in ((BertPreprocessor(tokenizer, seq_length=10), None, 10),
                                       (BertPreprocessor(tokenizer, seq_length=10), 12, 12),
                                       (BertPreprocessor(tokenizer, None, 64), None, 128)):
        call = preprocess_functions(preprocessor, asked)["__call__"]
        assert call(texts)["input_word_ids"].shape == (2, width), (asked, width)
