"""Model Garden TF2 checkpoints and TF Hub BERT SavedModels, read and written without Model
Garden (fast). `test_model_garden_exports.py` checks the same code against Model Garden's own
checkpoints and `export_tfhub` SavedModels, in its environment."""

import os

import keras
import numpy as np
import pytest
import tensorflow as tf

from keras_bert.checkpoints import model_garden
from keras_bert.checkpoints.formats import detect_format
from keras_bert.checkpoints.variables import encoder_variables
from keras_bert.cli import main
from keras_bert.config import BertConfig
from keras_bert.models.encoder import BertEncoder

VOCAB = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "call", "me", "ishmael", "."]

# The keys (under `encoder/`, without `/.ATTRIBUTES/VARIABLE_VALUE`) of
# `tf.train.Checkpoint(encoder=BertEncoder(num_layers=2, ...)).save(...)` as Model Garden
# (tf-models-official 2.20.0) writes them, recorded from its own checkpoint.
_BLOCK = ["_attention_layer/_key_dense/bias", "_attention_layer/_key_dense/kernel",
          "_attention_layer/_output_dense/bias", "_attention_layer/_output_dense/kernel",
          "_attention_layer/_query_dense/bias", "_attention_layer/_query_dense/kernel",
          "_attention_layer/_value_dense/bias", "_attention_layer/_value_dense/kernel",
          "_attention_layer_norm/beta", "_attention_layer_norm/gamma",
          "_intermediate_dense/bias", "_intermediate_dense/kernel", "_output_dense/bias",
          "_output_dense/kernel", "_output_layer_norm/beta", "_output_layer_norm/gamma"]
MODEL_GARDEN_KEYS = {
    "layer_with_weights-0/embeddings", "layer_with_weights-1/embeddings",
    "layer_with_weights-2/embeddings", "layer_with_weights-3/beta", "layer_with_weights-3/gamma",
    *[f"layer_with_weights-{n}/{k}" for n in (4, 5) for k in _BLOCK],
    "layer_with_weights-6/bias", "layer_with_weights-6/kernel"}


def _encoder(act="gelu_approximate", seed=0) -> BertEncoder:
    keras.utils.set_random_seed(seed)
    config = BertConfig(vocab_size=len(VOCAB), hidden_size=16, num_layers=2, num_heads=4,
                        intermediate_size=24, max_position_embeddings=32, hidden_act=act)
    encoder = BertEncoder(config)
    for v in encoder.weights:  # layer norms and biases too, so a misplaced one shows
        v.assign(np.random.default_rng(seed).normal(size=v.shape).astype("float32"))
    return encoder


def _vocab(tmp_path) -> str:
    path = tmp_path / "vocab-in.txt"
    path.write_text("\n".join(VOCAB) + "\n")
    return str(path)


def _same(a: BertEncoder, b: BertEncoder) -> None:
    theirs = encoder_variables(b)
    for name, v in encoder_variables(a).items():
        np.testing.assert_array_equal(v.numpy(), theirs[name].numpy(), err_msg=name)


def test_written_checkpoint_has_model_gardens_object_paths_and_reads_back(tmp_path):
    encoder = _encoder()
    path = model_garden.save_checkpoint_dir(encoder, str(tmp_path / "mg"), _vocab(tmp_path))
    keys = tf.train.load_checkpoint(os.path.join(path, "bert_model.ckpt")) \
        .get_variable_to_shape_map()
    suffix = "/.ATTRIBUTES/VARIABLE_VALUE"
    assert {k[len("encoder/"):-len(suffix)] for k in keys if k.startswith("encoder/")} \
        == MODEL_GARDEN_KEYS
    # Einsum kernels, as Model Garden's attention holds them: [hidden, heads, head size].
    assert keys[f"encoder/layer_with_weights-4/_attention_layer/_query_dense/kernel{suffix}"] \
        == [16, 4, 4]
    assert keys[f"encoder/layer_with_weights-5/_attention_layer/_output_dense/kernel{suffix}"] \
        == [4, 4, 16]
    fmt = detect_format(path)
    assert fmt.name == "model_garden" and fmt.vocab(path)[1] is True
    back = fmt.read_encoder(path)
    assert back.config == encoder.config
    _same(encoder, back)


def _fake_hub_saved_model(tmp_path, encoder: BertEncoder, lower_case: bool) -> str:
    """A TF Hub SavedModel's reading surface (the variables with Model Garden's names, the
    `do_lower_case` variable, the vocab asset); the graph is a placeholder, never read."""
    written = model_garden.save_checkpoint_dir(encoder, str(tmp_path / "src"), _vocab(tmp_path))
    hub = tmp_path / "hub"
    (hub / "assets").mkdir(parents=True)
    (hub / "assets" / "vocab.txt").write_text("\n".join(VOCAB) + "\n")
    (hub / "saved_model.pb").write_bytes(b'"inner_activation": "Text>gelu"')
    root = tf.train.Checkpoint(do_lower_case=tf.Variable(lower_case, trainable=False))
    named = model_garden.read_named(os.path.join(written, "bert_model.ckpt"))
    root.variables = [tf.Variable(v, name=n) for n, v in named.items() if n != "save_counter"]
    root.write(str(hub / "variables" / "variables"))
    return str(hub)


@pytest.mark.parametrize("lower_case", [True, False], ids=["uncased", "cased"])
def test_hub_saved_model_gives_vocab_casing_and_encoder(tmp_path, lower_case):
    encoder = _encoder()
    hub = _fake_hub_saved_model(tmp_path, encoder, lower_case)
    fmt = detect_format(hub)
    assert fmt.name == "tf_hub"
    assert fmt.vocab(hub) == (os.path.join(hub, "assets", "vocab.txt"), lower_case)
    back = fmt.read_encoder(hub)
    assert back.config.hidden_act == "gelu_approximate"
    _same(encoder, back)


def test_exact_gelu_is_refused_by_the_writer(tmp_path):
    vocab = _vocab(tmp_path)
    with pytest.raises(ValueError, match="exact .erf. GELU.*Model Garden's 'gelu' is the tanh"):
        model_garden.save_checkpoint_dir(_encoder("gelu_exact"), str(tmp_path / "mg"), vocab)
    assert not (tmp_path / "mg").exists()


def test_saved_model_that_is_not_bert_gets_one_line(tmp_path, capsys):
    module = tf.Module()
    module.weight = tf.Variable([1.0, 2.0], name="dense/kernel")
    module.f = tf.function(lambda x: x * module.weight,
                           input_signature=[tf.TensorSpec([2], tf.float32)])
    tf.saved_model.save(module, str(tmp_path / "other"))
    assert main(["convert", str(tmp_path / "other"), str(tmp_path / "out")]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "Traceback" not in err
    assert "not a BERT encoder" in err and "word_embeddings/embeddings" in err


def _classifier_checkpoint(tmp_path, encoder: BertEncoder, head: dict) -> str:
    """A checkpoint with Model Garden's variable names for `encoder` and a classifier head
    (`head`: Model Garden name -> array), as a fine-tuned `BertClassifier`'s holds them."""
    written = model_garden.save_checkpoint_dir(encoder, str(tmp_path / "src"), _vocab(tmp_path))
    named = model_garden.read_named(os.path.join(written, "bert_model.ckpt"))
    root = tf.train.Checkpoint()
    root.model = [tf.Variable(v, name=n) for n, v in {**named, **head}.items()
                  if n != "save_counter"]
    clf = tmp_path / "clf"
    root.write(str(clf / "bert_model.ckpt"))
    (clf / "vocab.txt").write_text("\n".join(VOCAB) + "\n")
    return str(clf)


def test_fine_tuned_classifier_keeps_its_head(tmp_path):
    from keras_bert.tasks.task_conversion import convert
    from keras_bert.tasks.task_model import TextTaskModel

    encoder = _encoder()
    rng = np.random.default_rng(1)
    kernel, bias = rng.normal(size=(16, 3)).astype("float32"), rng.normal(size=3).astype("f4")
    src = _classifier_checkpoint(tmp_path, encoder, {
        "sentence_prediction/logits/kernel": kernel, "sentence_prediction/logits/bias": bias})
    model = TextTaskModel.load(convert(src, str(tmp_path / "out")).path)
    assert list(model.labels.names) == ["LABEL_0", "LABEL_1", "LABEL_2"]
    ids = {"input_word_ids": np.array([[2, 5, 6, 7, 8, 3]], "int32"),
           "input_mask": np.ones((1, 6), "int32"), "input_type_ids": np.zeros((1, 6), "int32")}
    pooled = np.asarray(encoder(ids, training=False)["pooled_output"])
    np.testing.assert_allclose(np.asarray(model.network(ids, training=False)),
                               pooled @ kernel + bias, rtol=0, atol=1e-5)


def test_classifier_head_with_an_inner_layer_gets_one_line(tmp_path, capsys):
    src = _classifier_checkpoint(tmp_path, _encoder(), {
        "sentence_prediction/pooler_dense/kernel": np.zeros((16, 16), "float32"),
        "sentence_prediction/logits/kernel": np.zeros((16, 3), "float32"),
        "sentence_prediction/logits/bias": np.zeros(3, "float32")})
    assert main(["convert", src, str(tmp_path / "out")]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "--encoder-only" in err
    assert main(["convert", src, str(tmp_path / "out"), "--encoder-only"]) == 0


def test_masked_lm_head_is_kept_unless_encoder_only(tmp_path):
    import h5py

    from keras_bert.checkpoints.conversion import convert
    from keras_bert.checkpoints.formats import load_pretrainer

    rng = np.random.default_rng(2)
    mlm = {"bert/cls/predictions/transform/dense/kernel": (16, 16), "bert/cls/predictions/"
           "transform/dense/bias": (16,), "bert/cls/predictions/transform/LayerNorm/gamma": (16,),
           "bert/cls/predictions/transform/LayerNorm/beta": (16,),
           "bert/cls/predictions/output_bias/bias": (len(VOCAB),)}
    mlm = {name: rng.normal(size=shape).astype("float32") for name, shape in mlm.items()}
    src = _classifier_checkpoint(tmp_path, _encoder(), mlm)  # a pretrainer's, no classifier
    kept = convert(src, str(tmp_path / "kept"))
    with h5py.File(os.path.join(kept.path, "pretraining_heads.weights.h5")) as f:
        np.testing.assert_array_equal(f["mlm/transform/kernel"][()],
                                      mlm["bert/cls/predictions/transform/dense/kernel"])
        np.testing.assert_array_equal(f["mlm/output_bias"][()],
                                      mlm["bert/cls/predictions/output_bias/bias"])
        assert "nsp" not in f  # Model Garden's pretrainer has none: reported, not invented
    assert kept.metadata["initialised"] == ["nsp/bias", "nsp/kernel"]
    with pytest.warns(UserWarning, match="no nsp weights"):  # read in place, as --init does
        direct = load_pretrainer(src)
    np.testing.assert_array_equal(direct.mlm_head.output_bias.numpy(),
                                  mlm["bert/cls/predictions/output_bias/bias"])
    alone = convert(src, str(tmp_path / "alone"), encoder_only=True)
    assert not os.path.exists(os.path.join(alone.path, "pretraining_heads.weights.h5"))
