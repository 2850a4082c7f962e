"""`keras_bert.training.backends`: the device classes, the XLA default per class, and
`fit` with static batches (a `TPUStrategy`'s: the remainder dropped, one shape, XLA) for
the kinds that read windows; compile settings that survive the optimizer `fit` sizes.

A TPU is not available here: `static_batches` is forced to the answer a `TPUStrategy`
gives, and the step is XLA-compiled, which is what a TPU runs (not verified on one).
"""

from __future__ import annotations

import keras
import numpy as np
import pytest

from keras_bert import FitSchedule, QuestionAnswerer, TextClassifier, TokenClassifier
from keras_bert.tasks.batches import Batching
from keras_bert.training import backends
from keras_bert.training.backends import XLA_BY_DEVICE, Devices, default_jit_compile

SEQ = 24


@pytest.mark.parametrize("devices, kind", [
    (Devices(8, (), frozenset({"amx_bf16"})), "tpu"),
    (Devices(0, ((9, 0),), frozenset({"amx_bf16"})), "gpu"),
    (Devices(0, (), frozenset({"avx512f", "amx_bf16"})), "cpu_amx"),
    (Devices(0, (), frozenset({"avx2"})), "cpu"),
    (Devices(0, (), frozenset()), "cpu"),
])
def test_device_class(devices, kind):
    assert devices.kind == kind


def test_xla_default_follows_the_device_class():
    assert keras.backend.backend() == "tensorflow"
    for kind, flags in (("tpu", (1, (), frozenset())), ("gpu", (0, ((8, 0),), frozenset())),
                        ("cpu_amx", (0, (), frozenset({"amx_bf16"}))),
                        ("cpu", (0, (), frozenset())), ):
        assert default_jit_compile(Devices(*flags)) is XLA_BY_DEVICE[kind]
    assert XLA_BY_DEVICE["gpu"] and XLA_BY_DEVICE["tpu"]


def test_this_process_devices_are_read_through_tensorflow():
    found = backends.devices()
    assert found.tpus == 0 and isinstance(found.gpus, tuple)
    assert default_jit_compile() is XLA_BY_DEVICE[found.kind]


# 9 s on a 2-core Zen 4 (an XLA compilation): slow. In the README's tier:
# test_window_kinds_fit_in_static_batches_under_xla[tag] (a task model compiled with
# jit_compile=True keeps it through the fit that compiles again for its own steps, starts
# at the device's default, and its optimizer runs the fit's steps).
@pytest.mark.slow
def test_compile_settings_survive_the_optimizer_fit_sizes(model_dir):
    keras.utils.set_random_seed(0)
    clf = TextClassifier.from_pretrained(model_dir, ["a", "b"], seq_length=SEQ,
                                         precision="float32")
    assert clf.jit_compile is default_jit_compile()
    clf.compile(schedule=FitSchedule(learning_rate=1e-3), jit_compile=True,
                weighted_metrics=["accuracy"])
    clf.fit(["the sea", "a ship", "the whale", "calm sea"], ["a", "b", "a", "b"], epochs=1,
            batch_size=2, seed=0, verbose=0)
    assert clf.jit_compile is True  # fit compiled again, for its own number of steps
    assert clf.compiled and clf.optimizer.iterations.numpy() == 2


def _tag_data(n: int):
    from tests.jobs.test_finetune import _tagged_sentence

    rng = np.random.default_rng(3)
    rows = [_tagged_sentence(rng) for _ in range(n)]
    return [w for w, _ in rows], [t for _, t in rows]


def _squad_data(tmp_path, n: int):
    from tests.jobs.test_finetune import _squad_file

    _, paragraphs = _squad_file(tmp_path / "squad.json", np.random.default_rng(4), n)
    return ([(p["qas"][0]["question"], p["context"]) for p in paragraphs],
            [{"text": a["text"], "start": a["answer_start"]}
             for a in (p["qas"][0]["answers"][0] for p in paragraphs)])


class _Shapes(keras.callbacks.Callback):
    def __init__(self):
        super().__init__()
        self.steps = 0

    def on_train_batch_end(self, batch, logs=None):
        self.steps += 1


# squad: 7 s on a 2-core Zen 4 (an XLA compilation), slow; `tag` keeps the XLA fit on
# static window batches in the README's tier.
@pytest.mark.parametrize("kind", ["tag", pytest.param("squad", marks=pytest.mark.slow)])
def test_window_kinds_fit_in_static_batches_under_xla(kind, model_dir, tmp_path, monkeypatch):
    """Windows are rows at the sequence length: with the remainder dropped and full-length
    batches (what `fit` uses under a TPUStrategy: `Batching.resolved(..., static=True)`)
    every batch has one fully defined shape, and the XLA-compiled step trains on
    `count // batch`."""
    keras.utils.set_random_seed(0)
    if kind == "tag":
        model = TokenClassifier.from_pretrained(model_dir, ["B-LOC", "B-PER", "I-PER", "O"],
                                                seq_length=SEQ, precision="float32")
        x, y = _tag_data(21)
    else:
        model = QuestionAnswerer.from_pretrained(model_dir, max_query_length=10,
                                                 seq_length=SEQ, precision="float32")
        x, y = _squad_data(tmp_path, 21)
    assert model.jit_compile is default_jit_compile()
    rows = model._rows(x, y)
    stream, count = model._stream(rows, 4, seed=1, drop_remainder=True,
                                  batching=Batching().resolved(SEQ, True, static=True))
    for spec in keras.tree.flatten(stream.element_spec):
        assert spec.shape.is_fully_defined() and spec.shape[0] == 4, spec
        if len(spec.shape) > 1:
            assert spec.shape[1] == SEQ, spec
    monkeypatch.setattr(backends, "static_batches", lambda model: True)
    model.compile(schedule=FitSchedule(learning_rate=1e-3), jit_compile=True)
    steps = _Shapes()
    history = model.fit(x, y, epochs=1, batch_size=4, seed=1, verbose=0, callbacks=[steps])
    assert steps.steps == count // 4 < -(-count // 4), (steps.steps, count)
    assert model.jit_compile is True and np.isfinite(history.history["loss"][0])
    assert model.compiled and model.optimizer.iterations.numpy() == steps.steps
