"""`BertPretrainer`: outputs, the weighted losses and metrics against NumPy, `fit` /
`evaluate` / `predict`, mixed precision, XLA, serialization and the TFRecord pipeline."""

import keras
import numpy as np
import pytest
import tensorflow as tf

from keras_bert import BertEncoder
from keras_bert.models import BertPretrainer
from keras_bert.models.pretrainer import masked_lm_loss
from keras_bert.pretraining.tfrecord import read_examples, write_examples

BATCH, SEQ, PREDICTIONS = 4, 12, 3


def _batch(config, seed=0, batch=BATCH):
    """A synthetic pretraining batch with padding, two segments and padded predictions."""
    rng = np.random.default_rng(seed)
    ids = rng.integers(5, config.vocab_size, (batch, SEQ)).astype(np.int32)
    mask = np.ones((batch, SEQ), np.int32)
    mask[1, 8:] = 0
    ids[mask == 0] = 0
    types = np.zeros((batch, SEQ), np.int32)
    types[:, 6:] = 1
    positions = np.stack([rng.choice(np.arange(1, 8), PREDICTIONS, replace=False)
                          for _ in range(batch)]).astype(np.int32)
    weights = np.ones((batch, PREDICTIONS), np.float32)
    weights[0, 2] = weights[2, 1:] = 0.0  # padding predictions
    positions[weights == 0] = 0
    labels = np.take_along_axis(ids, positions, axis=1)
    labels[weights == 0] = 0
    masked = ids.copy()
    np.put_along_axis(masked, positions, 4, axis=1)  # [MASK]
    return {"input_word_ids": masked, "input_mask": mask, "input_type_ids": types,
            "masked_lm_positions": positions, "masked_lm_ids": labels,
            "masked_lm_weights": weights,
            "next_sentence_labels": (np.arange(batch) % 2).astype(np.int32)}


def _dataset(config, steps=1, seed=0):
    return tf.data.Dataset.from_tensors(_batch(config, seed)).repeat(steps)


def _log_softmax(x):
    x = x - x.max(-1, keepdims=True)
    return x - np.log(np.exp(x).sum(-1, keepdims=True))


def test_outputs_and_inputs(tiny_config):
    model = BertPretrainer.from_bert_config(tiny_config)
    batch = _batch(tiny_config)
    out = model(batch)  # the labels in the dict are ignored
    assert set(out) == {"mlm_logits", "nsp_logits"}
    assert out["mlm_logits"].shape == (BATCH, PREDICTIONS, tiny_config.vocab_size)
    assert out["nsp_logits"].shape == (BATCH, 2)
    assert isinstance(model.encoder, BertEncoder) and model.config == tiny_config
    with pytest.raises(KeyError, match="masked_lm_positions"):
        model({k: v for k, v in batch.items() if k != "masked_lm_positions"})
    with pytest.raises(TypeError, match="BertEncoder"):
        BertPretrainer(tiny_config)
    assert BertPretrainer.from_preset("tiny", vocab_size=64).config.hidden_size == 128


def test_losses_and_metrics_match_numpy(tiny_config):
    model = BertPretrainer.from_bert_config(tiny_config)
    model.compile(optimizer="adam")
    batch = _batch(tiny_config)
    out = model(batch)
    mlm, nsp = out["mlm_logits"].numpy(), out["nsp_logits"].numpy()
    w = batch["masked_lm_weights"]
    ce = -np.take_along_axis(_log_softmax(mlm), batch["masked_lm_ids"][..., None], -1)[..., 0]
    mlm_loss = (ce * w).sum() / (w.sum() + 1e-5)
    nsp_ce = -np.take_along_axis(_log_softmax(nsp), batch["next_sentence_labels"][:, None], -1)
    nsp_loss = nsp_ce.mean()
    mlm_acc = ((mlm.argmax(-1) == batch["masked_lm_ids"]) * w).sum() / w.sum()
    nsp_acc = (nsp.argmax(-1) == batch["next_sentence_labels"]).mean()

    np.testing.assert_allclose(masked_lm_loss(batch["masked_lm_ids"], w, mlm), mlm_loss,
                               rtol=1e-5)
    logs = model.evaluate(_dataset(tiny_config), verbose=0, return_dict=True)
    np.testing.assert_allclose(logs["mlm_loss"], mlm_loss, rtol=1e-5)
    np.testing.assert_allclose(logs["nsp_loss"], nsp_loss, rtol=1e-5)
    np.testing.assert_allclose(logs["loss"], mlm_loss + nsp_loss, rtol=1e-5)
    np.testing.assert_allclose(logs["mlm_accuracy"], mlm_acc, rtol=1e-6)
    np.testing.assert_allclose(logs["nsp_accuracy"], nsp_acc, rtol=1e-6)
    # Labels given as `y` (a dict) work the same; `loss=` in compile is refused.
    x = {k: batch[k] for k in ("input_word_ids", "input_mask", "input_type_ids",
                               "masked_lm_positions")}
    y = {k: batch[k] for k in ("masked_lm_ids", "masked_lm_weights", "next_sentence_labels")}
    logs_xy = model.evaluate(x, y, batch_size=BATCH, verbose=0, return_dict=True)
    np.testing.assert_allclose(logs_xy["loss"], logs["loss"], rtol=1e-6)
    with pytest.raises(ValueError, match="own losses"):
        model.compile(optimizer="adam", loss="mse")


def test_nsp_loss_weight_scales_only_the_nsp_term(tiny_config):
    model = BertPretrainer.from_bert_config(tiny_config)
    weighted = BertPretrainer.from_bert_config(tiny_config, nsp_loss_weight=4.0)
    weighted.set_weights(model.get_weights())
    for m in (model, weighted):
        m.compile(optimizer="adam")
    plain = model.evaluate(_dataset(tiny_config), verbose=0, return_dict=True)
    logs = weighted.evaluate(_dataset(tiny_config), verbose=0, return_dict=True)
    assert logs["nsp_loss"] == pytest.approx(plain["nsp_loss"], rel=1e-6)  # logged unweighted
    assert logs["loss"] == pytest.approx(plain["mlm_loss"] + 4.0 * plain["nsp_loss"], rel=1e-5)
    assert BertPretrainer.from_config(weighted.get_config()).nsp_loss_weight == 4.0
    with pytest.raises(ValueError, match="nsp_loss_weight"):
        BertPretrainer(model.encoder, nsp_loss_weight=-1.0)


def test_padding_predictions_do_not_count(tiny_config):
    """Whatever a weight-0 prediction says, the MLM loss and accuracy do not change."""
    model = BertPretrainer.from_bert_config(tiny_config)
    model.compile(optimizer="adam")
    batch = _batch(tiny_config)
    changed = dict(batch, masked_lm_ids=np.where(batch["masked_lm_weights"] > 0,
                                                 batch["masked_lm_ids"], 17))
    a = model.evaluate(tf.data.Dataset.from_tensors(batch), verbose=0, return_dict=True)
    b = model.evaluate(tf.data.Dataset.from_tensors(changed), verbose=0, return_dict=True)
    assert a["mlm_loss"] == pytest.approx(b["mlm_loss"], rel=1e-6)
    assert a["mlm_accuracy"] == pytest.approx(b["mlm_accuracy"], rel=1e-6)


def test_nsp_loss_reaches_pooler_and_encoder_but_not_the_mlm_head(tiny_config_no_dropout):
    """The next sentence loss trains the NSP head, the pooler and the encoder under [CLS]
    (every layer), and leaves the MLM-only variables alone."""
    from keras_bert.models.pretrainer import next_sentence_loss

    model = BertPretrainer.from_bert_config(tiny_config_no_dropout)
    batch = _batch(tiny_config_no_dropout)
    with tf.GradientTape() as tape:
        loss = next_sentence_loss(batch["next_sentence_labels"], model(batch)["nsp_logits"])
    variables = model.trainable_variables
    norms = {v.path: 0.0 if g is None else float(tf.norm(g))
             for v, g in zip(variables, tape.gradient(loss, variables), strict=True)}
    reached = [path for path, norm in norms.items() if norm > 1e-9]
    for part in ("nsp_head/", "pooler/", "word_embeddings/", "type_embeddings/"):
        assert any(part in path for path in reached), (part, reached)
    for layer in range(tiny_config_no_dropout.num_layers):
        assert any(f"transformer_layer_{layer}/" in path for path in reached), layer
    mlm_only = [path for path in norms if path.startswith("mlm_head/")]  # not the tied table
    assert mlm_only and all(norms[path] == 0.0 for path in mlm_only)


def test_fit_memorises_next_sentence_labels(tiny_config_no_dropout):
    """End to end through `fit`: the NSP head separates a fixed batch's two labels."""
    model = BertPretrainer.from_bert_config(tiny_config_no_dropout)
    model.compile(optimizer=keras.optimizers.Adam(3e-3))
    history = model.fit(_dataset(tiny_config_no_dropout, steps=40), verbose=0)
    logs = model.evaluate(_dataset(tiny_config_no_dropout), verbose=0, return_dict=True)
    assert logs["nsp_accuracy"] == 1.0 and logs["nsp_loss"] < 0.3, (logs, history.history)


# 8 s on a 2-core Zen 4 (a traced fit of its own): slow. In the README's tier:
# tests/pretraining/test_tfrecord.py::test_round_trip_over_shards (read_examples gives back
# the written batches: names, int32 / float32 dtypes, shapes, values),
# test_fit_memorises_next_sentence_labels (graph-mode `fit` on such batches) and
# tests/training/test_static_shapes.py::test_tfrecord_stream_is_static (records into fit's
# stream).
@pytest.mark.slow
def test_fit_on_the_tfrecord_pipeline_decreases_the_loss(tiny_config_no_dropout, tmp_path):
    """Graph-mode `fit` on the batches `keras_bert.pretraining.tfrecord` reads, as they are."""
    config = tiny_config_no_dropout
    path = str(tmp_path / "examples.tfrecord")
    write_examples([_batch(config, seed=0)], path)
    dataset = read_examples(path, SEQ, PREDICTIONS, batch_size=BATCH, repeat=True)
    model = BertPretrainer.from_bert_config(config)
    model.compile(optimizer=keras.optimizers.Adam(3e-3), jit_compile=False)
    callback = _PerBatchLoss()
    history = model.fit(dataset, steps_per_epoch=12, epochs=1, verbose=0, callbacks=[callback])
    assert callback.losses[-1] < callback.losses[0] - 0.5, callback.losses
    assert set(history.history) == {"loss", "mlm_loss", "nsp_loss", "mlm_accuracy",
                                    "nsp_accuracy"}


@pytest.mark.slow
def test_fit_under_xla(tiny_config_no_dropout):
    """`jit_compile=True`: XLA-compiled training steps compute what eager steps compute from
    the same weights (each step's loss, then the weights), and they learn (one-layer model;
    ~10 s, nearly all of it XLA compiling the step; the eager steps add 1-3 s)."""
    config = tiny_config_no_dropout.replace(num_layers=1)
    models = {True: BertPretrainer.from_bert_config(config),
              False: BertPretrainer.from_bert_config(config)}
    models[False].set_weights(models[True].get_weights())
    losses = {}
    for jit, model in models.items():
        model.compile(optimizer=keras.optimizers.Adam(3e-3), jit_compile=jit, run_eagerly=not jit)
        callback = _PerBatchLoss()
        model.fit(_dataset(config, steps=3), verbose=0, callbacks=[callback])
        running = np.array(callback.losses)  # the mean loss so far, after each step
        losses[jit] = running * [1, 2, 3] - np.concatenate([[0.0], running[:-1] * [1, 2]])
    assert models[True].jit_compile and not models[False].jit_compile
    # Measured (3 seeds, 2 cores): step losses equal to 2e-7 relative, weights to 9e-7.
    np.testing.assert_allclose(losses[True], losses[False], rtol=1e-4)
    for a, b in zip(models[True].weights, models[False].weights, strict=True):
        np.testing.assert_allclose(a.numpy(), b.numpy(), rtol=0, atol=2e-5, err_msg=a.path)
    # The one batch's loss after 2 updates: measured 0.43-0.48 lower (5.30 -> 4.82 here);
    # an optimizer that does nothing leaves it where it was.
    assert losses[True][-1] < losses[True][0] - 0.25, losses[True]


class _PerBatchLoss(keras.callbacks.Callback):
    """Records the running `loss` log after each training batch."""

    def on_train_begin(self, logs=None):
        self.losses = []

    def on_train_batch_end(self, batch, logs=None):
        self.losses.append(float(logs["loss"]))


@pytest.mark.parametrize("policy", ["mixed_float16", "mixed_bfloat16"])
def test_mixed_precision_trains_without_nan(tiny_config, policy):
    keras.config.set_dtype_policy(policy)  # conftest restores the global policy
    model = BertPretrainer.from_bert_config(tiny_config)
    assert model.dtype_policy.name == policy
    # Eager steps: the dtypes are the same as in a graph, and tracing costs ~10 s per test.
    model.compile(optimizer=keras.optimizers.Adam(1e-3), run_eagerly=True)
    if policy == "mixed_float16":
        assert isinstance(model.optimizer, keras.optimizers.LossScaleOptimizer)
    history = model.fit(_dataset(tiny_config, steps=3), verbose=0)
    for name, values in history.history.items():
        assert np.isfinite(values).all(), name
    out = model(_batch(tiny_config))
    assert out["mlm_logits"].dtype == "float32" and out["nsp_logits"].dtype == "float32"
    assert model.encoder.embeddings.compute_dtype == policy.split("_")[1]
    assert model.encoder.token_embedding.embeddings.dtype == "float32"


def test_keras_round_trip_keeps_weights_tie_policy_and_optimizer(tiny_config, tmp_path):
    model = BertPretrainer.from_bert_config(tiny_config, dtype="mixed_bfloat16")
    model.compile(optimizer=keras.optimizers.Adam(1e-3), run_eagerly=True)
    model.fit(_dataset(tiny_config, steps=2), verbose=0)
    path = str(tmp_path / "pretrainer.keras")
    model.save(path)
    loaded = keras.saving.load_model(path)
    assert isinstance(loaded, BertPretrainer) and loaded.config == tiny_config
    assert loaded.dtype_policy.name == "mixed_bfloat16"
    assert loaded.mlm_head.embedding is loaded.encoder.token_embedding
    batch = _batch(tiny_config)
    for key, value in model(batch).items():
        np.testing.assert_array_equal(loaded(batch)[key], value)
    assert loaded.compiled and loaded.optimizer.iterations.numpy() == 2
    predicted = loaded.predict(_dataset(tiny_config), verbose=0)
    assert predicted["mlm_logits"].shape == (BATCH, PREDICTIONS, tiny_config.vocab_size)
    np.testing.assert_array_equal(predicted["nsp_logits"], model(batch)["nsp_logits"])
    clone = BertPretrainer.from_config(model.get_config())
    assert clone.mlm_head.embedding is clone.encoder.token_embedding
    assert clone.config == model.config and clone.dtype_policy.name == "mixed_bfloat16"
