"""No train/serve skew: the features a model is fitted on are the ones its export makes, and
`keras-bert predict` answers what the export answers.

Each case fine-tunes a tiny model for one epoch with `run_finetuning` on hard strings (the
tokenizer's hard cases) and real text (the embedded corpus), exports the result, and
compares, on the same strings:

- the training path: the `tf.data` batches `finetuning_inputs` builds (what `model.fit`
  receives), with the export's `preprocess` signature run by TF Serving's loader path
  (`SessionBundle`): identical ids, masks and segment ids, padded to the training length
  (`--seq-length` export) or to each batch's longest text (default export);
- `keras-bert predict` output with the export's `serving_default` outputs.
"""

from __future__ import annotations

import json
import os

import numpy as np
import pytest

from keras_bert.cli import main
from keras_bert.data.corpus import default_corpus_files
from keras_bert.export.exporter import export_model
from keras_bert.export.session_bundle import SessionBundle
from keras_bert.training.finetune_job import FinetuneJob, finetuning_inputs, run_finetuning
from tests.export.helpers import make_tiny_model_dir
from tests.text.test_tokenizer import HARD_CASES

SEQ = 24
INPUTS = ("input_word_ids", "input_mask", "input_type_ids")


def _real_lines(count: int) -> list[str]:
    lines = []
    for path in default_corpus_files():
        with open(path, encoding="utf-8") as f:
            lines += [line.strip() for line in f if len(line.split()) > 3][:count // 2]
    return lines[:count]


def _texts() -> list[str]:
    return [t for t in HARD_CASES if t.strip()] + _real_lines(40)


def _write_jsonl(path, texts, texts_b, labels) -> str:
    with open(path, "w", encoding="utf-8") as f:
        for i, text in enumerate(texts):
            row = {"text": text, "label": labels[i % len(labels)]}
            if texts_b is not None:
                row["text_b"] = texts_b[i]
            f.write(json.dumps(row) + "\n")
    return str(path)


@pytest.fixture(scope="module", params=["classify-pair", "regress"])
def finetuned(request, tmp_path_factory):
    """A one-epoch fine-tuned tiny model, its job and its two exports."""
    root = tmp_path_factory.mktemp(request.param)
    base = make_tiny_model_dir(root / "base")
    texts = _texts()
    pair = request.param == "classify-pair"
    texts_b = texts[::-1] if pair else None
    labels = ["yes", "no", "maybe"] if pair else ["0.5", "-1.25", "3"]
    data = _write_jsonl(root / "data.jsonl", texts, texts_b, labels)
    job = FinetuneJob(task=request.param.split("-")[0], model=base, train=data, eval=data,
                      out=str(root / "out"), text_b_column="text_b" if pair else None,
                      seq_length=SEQ, epochs=1, batch_size=16, verbose=0)
    run_finetuning(job)
    model_dir = os.path.join(job.out, "model")
    exports = {"fixed": export_model(model_dir, str(root / "fixed"), seq_length=SEQ).path,
               "dynamic": export_model(model_dir, str(root / "dynamic")).path}
    return job, texts, texts_b, model_dir, exports, data


def _training_features(job) -> dict[str, np.ndarray]:
    _, _, data = finetuning_inputs(job)
    batches = [x for x, _ in data.eval.as_numpy_iterator()]  # the eval file, in order
    return {k: np.concatenate([b[k] for b in batches]) for k in INPUTS}


def _request(texts, texts_b) -> dict:
    request = {"text": np.asarray(texts, object)}
    if texts_b is not None:
        request["text_b"] = np.asarray(texts_b, object)
    return request


def test_training_features_are_the_exports_preprocessing(finetuned):
    job, texts, texts_b, _, exports, _ = finetuned
    trained = _training_features(job)
    assert trained["input_word_ids"].shape == (len(texts), SEQ)
    with SessionBundle(exports["fixed"]) as bundle:
        fixed = bundle.run("preprocess", _request(texts, texts_b))
    for name in INPUTS:
        np.testing.assert_array_equal(fixed[name], trained[name], name)
    with SessionBundle(exports["dynamic"]) as bundle:
        dynamic = bundle.run("preprocess", _request(texts, texts_b))
    width = dynamic["input_word_ids"].shape[1]
    assert width == trained["input_mask"].sum(axis=1).max() <= SEQ  # the longest, truncated
    for name in INPUTS:
        np.testing.assert_array_equal(dynamic[name], trained[name][:, :width], name)
    # The hard cases reach the model as more than [CLS] [SEP] and some are truncated.
    assert (trained["input_mask"].sum(axis=1) == SEQ).any()


def test_predict_answers_what_the_export_answers(finetuned, capsys):
    job, texts, texts_b, model_dir, exports, data = finetuned
    capsys.readouterr()
    assert main(["predict", model_dir, "--input", data]) == 0
    predicted = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert len(predicted) == len(texts)
    with SessionBundle(exports["dynamic"]) as bundle:
        served = bundle.run("serving_default", _request(texts, texts_b))
    if job.task == "regress":
        np.testing.assert_allclose([p["score"] for p in predicted],
                                   served["score"].reshape(-1), rtol=1e-5, atol=1e-5)
    else:
        np.testing.assert_allclose([p["probabilities"] for p in predicted],
                                   served["probabilities"], rtol=1e-5, atol=1e-6)
        assert [p["label"] for p in predicted] == [
            s.decode() for s in served["label"].reshape(-1)]
