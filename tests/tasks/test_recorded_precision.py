"""The precision a model computes in is part of the model (issue: on a CPU with AMX, `auto`
means mixed bfloat16, and a saved model used to load back in float32 and answer otherwise).

`auto` is forced here to the AMX answer (`cpu_flags` patched), so these checks run the
bfloat16 path on every host, CI's AMD one included: `from_pretrained` resolves and prints
it once; `save` records it; `load`, `from_pretrained` on the saved directory, `keras-bert
predict` and the export compute in it, and each answers exactly as the model did.
"""

from __future__ import annotations

import json

import keras
import numpy as np
import pytest

from keras_bert import TextClassifier
from keras_bert.checkpoints import load_model_dir
from keras_bert.checkpoints.model_dir import MANIFEST
from keras_bert.cli import main
from keras_bert.export.session_bundle import SessionBundle
from keras_bert.training import precision
from tests.tasks.text_classification.test_text_classifier import LABELS, SEQ, _sentences

# Mixed bfloat16 against float32 on the same weights: bfloat16 keeps 8 bits of mantissa
# (relative error up to 2**-8 per rounding); through two tiny blocks the logits moved by at
# most ~0.01 in trial runs. The bound says "the same model, computed coarser", not "equal".
BF16_VS_FP32_ATOL = 0.05


@pytest.fixture
def amx_host(monkeypatch):
    """`auto` answers as on an Intel Xeon with AMX, whatever this host is."""
    monkeypatch.setattr(precision, "cpu_flags", lambda path="/proc/cpuinfo": {"amx_bf16"})


@pytest.fixture
def plain_host(monkeypatch):
    """`auto` answers as on a CPU without AMX (CI's AMD EPYC)."""
    monkeypatch.setattr(precision, "cpu_flags", lambda path="/proc/cpuinfo": {"avx512f"})


def _built(model_dir, **kwargs) -> TextClassifier:
    """The classifier as `from_pretrained` builds it (its new head seeded), not fitted."""
    keras.utils.set_random_seed(7)
    return TextClassifier.from_pretrained(model_dir, labels=LABELS, seq_length=SEQ, **kwargs)


def test_auto_is_resolved_once_recorded_and_answered_identically(amx_host, model_dir,
                                                                 tmp_path, capfd):
    """One model built in `auto` on an AMX host serves both checks: resolved and printed once
    and recorded by `save`, then the saved, loaded, predicted and exported answers identical.
    Built, not fitted: no check reads what a fit changes (its weights are saved and loaded
    as the built ones are), and a fit cost ~3 s here; bfloat16 training is
    tests/models/test_pretrainer.py's."""
    clf = _built(model_dir)
    assert "precision: mixed_bfloat16 (auto: CPU with AMX)" in capfd.readouterr().err
    assert clf.network.encoder.dtype_policy.name == "mixed_bfloat16"
    texts = _sentences(2, 16)[0]
    want = clf.predict(texts)
    path = clf.save(str(tmp_path / "model"))
    assert load_model_dir(path).precision == "mixed_bfloat16"
    with open(f"{path}/{MANIFEST}", encoding="utf-8") as f:
        assert json.load(f)["precision"] == "mixed_bfloat16"
    reloaded = TextClassifier.load(path)
    # Loading a saved model resolves nothing: no second line.
    assert "precision:" not in capfd.readouterr().err
    for loaded in (reloaded, TextClassifier.from_pretrained(path)):
        assert loaded.network.encoder.dtype_policy.name == "mixed_bfloat16"
        np.testing.assert_array_equal(loaded.predict(texts)["logits"], want["logits"])
    # keras-bert predict: the same probabilities, to the float32 value JSON carries.
    inputs = tmp_path / "texts.jsonl"
    inputs.write_text("".join(json.dumps({"text": t}) + "\n" for t in texts),
                      encoding="utf-8")
    capfd.readouterr()
    assert main(["predict", path, "--input", str(inputs)]) == 0
    answers = [json.loads(line) for line in capfd.readouterr().out.splitlines()]
    np.testing.assert_array_equal(np.array([a["probabilities"] for a in answers], np.float32),
                                  want["probabilities"])
    # The export, run as TF Serving runs it (its Session loader), computes in bfloat16 too.
    version = clf.export(str(tmp_path / "served"), target=None)
    with SessionBundle(version) as bundle:
        served = bundle.run("serving_default", {"text": np.array(texts, object)})
    np.testing.assert_array_equal(served["logits"], want["logits"])
    assert [s.decode() for s in served["label"]] == list(want["label"])


def test_bfloat16_computes_the_float32_model_within_its_rounding(model_dir, tmp_path):
    # One set of weights computed in two precisions: the model as built serves, without the
    # fit (about 2.5 s on a 2-core Zen 4) that the checks below do not read.
    fp32 = _built(model_dir, precision="float32")
    path = fp32.save(str(tmp_path / "model"))
    bf16 = TextClassifier.load(path, precision="mixed_bfloat16")
    texts = _sentences(2, 16)[0]
    want, got = fp32.predict(texts)["logits"], bf16.predict(texts)["logits"]
    assert not np.array_equal(got, want)  # the bfloat16 path really ran
    np.testing.assert_allclose(got, want, rtol=0, atol=BF16_VS_FP32_ATOL)
    # Told otherwise, the export computes in the precision it is given.
    version = fp32.export(str(tmp_path / "served"), target=None, precision="bfloat16")
    with SessionBundle(version) as bundle:
        served = bundle.run("serving_default", {"text": np.array(texts, object)})
    np.testing.assert_array_equal(served["logits"], got)


def test_without_amx_auto_is_float32_and_old_directories_read_as_float32(plain_host,
                                                                          model_dir,
                                                                          tmp_path):
    clf = _built(model_dir)  # resolved by from_pretrained; a fit would read no check here
    assert clf.network.encoder.dtype_policy.name == "float32"
    path = clf.save(str(tmp_path / "model"))
    manifest = f"{path}/{MANIFEST}"
    with open(manifest, encoding="utf-8") as f:
        saved = json.load(f)
    del saved["precision"]  # as written before the precision was recorded
    with open(manifest, "w", encoding="utf-8") as f:
        json.dump(saved, f)
    assert load_model_dir(path).precision == "float32"
