"""No train/serve skew: the features a model is fitted on are the ones its export makes, and
`keras-bert predict` answers what the export answers, for every task kind.

Each case fine-tunes a tiny model for one epoch with `run_finetuning` on hard strings (the
tokenizer's hard cases) and real text (the embedded corpus), exports the result, and
compares, on the same strings:

- the training path: the `tf.data` batches the job's task model streams (what `model.fit`
  receives), with the export's `preprocess` signature run by TF Serving's loader path
  (`SessionBundle`): identical ids, masks and segment ids, padded to the training length
  (`--seq-length` export) or to each batch's longest text (default export); for taggers,
  the training label of every word sits where the export reads the word's prediction;
- `keras-bert predict` output with the export's `serving_default` outputs.

The embed kind is not fine-tuned: its path is `TextEmbedder.predict` (`keras-bert encode`).
"""

from __future__ import annotations

import json
import os

import numpy as np
import pytest

from keras_bert.cli import main
from keras_bert.data.corpus import default_corpus_files
from keras_bert.export.session_bundle import SessionBundle
from keras_bert.jobs.finetune import FinetuneJob, finetuning_model, run_finetuning
from keras_bert.tasks.task_dir import export_model
from tests.export.helpers import WORDS, make_tiny_model_dir
from tests.text.test_tokenizer import HARD_CASES

# slow: every test over ~30 s, or behind a fixture that is (CI's durations log
# docs/runs/ci-durations-2026-11-26-8c1e29d.md)
pytestmark = pytest.mark.slow

SEQ = 24
INPUTS = ("input_word_ids", "input_mask", "input_type_ids")


def _real_lines(count: int) -> list[str]:
    """`count` lines of the embedded corpus, each cut at 400 characters: its lines run to
    113,251 characters (whole speeches), which at the taggers' 16 tokens made ~28,000
    training windows (1,760 steps) for a check that needs several windows per text."""
    lines = []
    for path in default_corpus_files():
        with open(path, encoding="utf-8") as f:
            lines += [line.strip()[:400] for line in f if len(line.split()) > 3][:count // 2]
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


@pytest.fixture(scope="module", params=["classify-pair", "regress", "multilabel"])
def finetuned(request, tmp_path_factory):
    """A one-epoch fine-tuned tiny model, its job and its two exports."""
    root = tmp_path_factory.mktemp(request.param)
    base = make_tiny_model_dir(root / "base")
    texts = _texts()
    pair = request.param == "classify-pair"
    texts_b = texts[::-1] if pair else None
    labels = {"classify-pair": ["yes", "no", "maybe"], "regress": ["0.5", "-1.25", "3"],
              "multilabel": [["b"], ["a", "c"], []]}[request.param]  # JSON list form
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
    batches = [x for x, _ in _eval_stream(job).as_numpy_iterator()]  # the eval file, in order
    return {k: np.concatenate([b[k] for b in batches]) for k in INPUTS}


def _eval_stream(job):
    """The batches `keras-bert finetune` validates on: its eval file's rows, in order."""
    model, _, evaluation = finetuning_model(job)
    return model._stream(evaluation, job.batch_size)[0]


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
    elif job.task == "multilabel":
        np.testing.assert_allclose([[p["scores"][n] for n in ("a", "b", "c")] for p in predicted],
                                   served["scores"], rtol=1e-5, atol=1e-6)
        assert [p["labels"] + [""] * (3 - len(p["labels"])) for p in predicted] == [
            [s.decode() for s in row] for row in served["labels"]]
    else:
        np.testing.assert_allclose([p["probabilities"] for p in predicted],
                                   served["probabilities"], rtol=1e-5, atol=1e-6)
        assert [p["label"] for p in predicted] == [
            s.decode() for s in served["label"].reshape(-1)]


# ---------------------------------------------------------------------------- tag, squad
TAG_SEQ, QA_SEQ = 16, 40


def _tagged_sentences() -> list[list[str]]:
    sentences = [t.split() for t in _texts() if t.split()]
    long = [w for s in sentences[-6:] for w in s]  # several windows at TAG_SEQ
    return sentences + [long]


def _write_conll(path, sentences) -> str:
    tags = ["O", "B-PER", "I-PER", "B-LOC"]
    with open(path, "w", encoding="utf-8") as f:
        for i, words in enumerate(sentences):
            f.write("".join(f"{w} {tags[(i + j) % 4]}\n" for j, w in enumerate(words)) + "\n")
    return str(path)


def _squad_examples() -> list[dict]:
    contexts = [t for t in _texts() if len(t.split()) > 2][::3]
    contexts.append(" ".join(contexts[-5:]))  # a long context: several windows
    qas = []
    for i, context in enumerate(contexts):
        words = context.split()
        answer = words[len(words) // 2]
        qas.append({"context": context, "qas": [{
            "id": f"q{i}", "question": f"what about {words[0]} {words[-1]}?",
            "answers": [{"text": answer, "answer_start": context.index(answer)}]}]})
    return qas


# Sentence-level models reading long texts in windows (issue 31): windows of WINDOW_SEQ
# positions advancing by WINDOW_STRIDE word pieces, at most WINDOW_CAP a text.
WINDOW_SEQ, WINDOW_STRIDE, WINDOW_CAP = 16, 6, 3


def _window_texts(base: str) -> list[str]:
    """The hard cases of reading in windows beside the tokenizer's and real lines: an empty
    text, a text of exactly one window's word pieces (WINDOW_SEQ - 2), one piece more (a
    second window), a text of 100,000 characters (far past the cap) and a text whose
    windows are exactly the cap."""
    from keras_bert.checkpoints import load_model_dir

    tokenizer = load_model_dir(base).preprocessor().tokenizer
    words = [w for w in WORDS if len(tokenizer.tokenize(w).numpy()) == 1]
    pieces = (words * 40)[:2 * WINDOW_SEQ + 2 * WINDOW_STRIDE]

    def of_length(n):
        text = " ".join(pieces[:n])
        assert len(tokenizer.tokenize(text).numpy()) == n
        return text

    one_window = WINDOW_SEQ - 2
    at_cap = one_window + (WINDOW_CAP - 1) * WINDOW_STRIDE
    hundred_k = (" ".join(pieces) + " ") * (100_000 // len(" ".join(pieces) + " ") + 1)
    return (["", of_length(one_window), of_length(one_window + 1), of_length(at_cap),
             hundred_k[:100_000]] + _texts()[::4])


@pytest.fixture(scope="module", params=["tag", "squad", "classify-windows"])
def finetuned_windows(request, tmp_path_factory):
    """A one-epoch tiny tagger / span-QA model / classifier reading in windows, its job,
    inputs file and export."""
    root = tmp_path_factory.mktemp(request.param)
    base = make_tiny_model_dir(root / "base")
    windows = {}
    if request.param == "classify-windows":
        texts = _window_texts(base)
        data = _write_jsonl(root / "data.jsonl", texts, None, ["yes", "no", "maybe"])
        inputs = {"text": texts}
        seq = WINDOW_SEQ
        windows = dict(long_text="windows", doc_stride=WINDOW_STRIDE, max_windows=WINDOW_CAP)
    elif request.param == "tag":
        sentences = _tagged_sentences()
        data = _write_conll(root / "train.conll", sentences)
        inputs = {"text": [" ".join(s) for s in sentences]}
        seq = TAG_SEQ
    else:
        paragraphs = _squad_examples()
        data = str(root / "train.json")
        with open(data, "w", encoding="utf-8") as f:
            json.dump({"data": [{"title": "t", "paragraphs": paragraphs}]}, f)
        inputs = {"question": [p["qas"][0]["question"] for p in paragraphs],
                  "context": [p["context"] for p in paragraphs]}
        seq = QA_SEQ
    job = FinetuneJob(task=request.param.split("-")[0], model=base, train=data, eval=data,
                      out=str(root / "out"), seq_length=seq, epochs=1, batch_size=16,
                      max_query_length=8 if request.param == "squad" else None, verbose=0,
                      **windows)
    run_finetuning(job)
    model_dir = os.path.join(job.out, "model")
    export = export_model(model_dir, str(root / "export"), seq_length=seq).path
    return job, inputs, data, model_dir, export


def test_windows_trained_on_are_the_exports(finetuned_windows):
    job, inputs, _, _, export = finetuned_windows
    batches = list(_eval_stream(job).as_numpy_iterator())
    trained = {k: np.concatenate([x[k] for x, _ in batches]) for k in INPUTS}
    request = {k: np.asarray(v, object) for k, v in inputs.items()}
    with SessionBundle(export) as bundle:
        served = bundle.run("preprocess", request)
    assert len(trained["input_word_ids"]) > len(next(iter(inputs.values())))  # windows
    for name in INPUTS:
        np.testing.assert_array_equal(served[name], trained[name], name)
    if job.task == "tag":
        # Every word's training label sits where the export reads its prediction.
        labels = np.concatenate([y for _, y in batches])
        gold = [t for _, tags in _conll_tags(job.train) for t in tags]
        names = sorted(set(gold))
        read = labels[served["word_window"], served["word_column"]]
        assert read.tolist() == [names.index(t) for t in gold]
    elif job.task == "squad":
        assert served["window_row"].tolist() == sorted(served["window_row"].tolist())
    else:  # each text's windows in order, as many as the cap allows; the empty text one
        with SessionBundle(export) as bundle:
            answers = bundle.run("serving_default", request)
        counts = answers["num_windows"].reshape(-1)
        assert served["text_index"].tolist() == np.repeat(np.arange(len(counts)),
                                                          counts).tolist()
        assert counts[:5].tolist() == [1, 1, 2, WINDOW_CAP, WINDOW_CAP]
        assert answers["truncated"].reshape(-1)[:5].tolist() == [False, False, False,
                                                                  False, True]
        assert answers["num_tokens"].reshape(-1)[:3].tolist() == [0, WINDOW_SEQ - 2,
                                                                   WINDOW_SEQ - 1]


def _conll_tags(path):
    from keras_bert.tasks.token_classification.conll import read_conll

    return [(s.words, s.tags) for s in read_conll(path)]


def test_predict_tags_and_answers_what_the_export_answers(finetuned_windows, capsys):
    job, inputs, data, model_dir, export = finetuned_windows
    capsys.readouterr()
    assert main(["predict", model_dir, "--input", data]) == 0
    predicted = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    request = {k: np.asarray(v, object) for k, v in inputs.items()}
    with SessionBundle(export) as bundle:
        served = bundle.run("serving_default", request)
    if job.task == "classify":
        np.testing.assert_allclose([p["probabilities"] for p in predicted],
                                   served["probabilities"], rtol=1e-5, atol=1e-6)
        for name in ("num_tokens", "num_windows", "truncated"):
            assert [p[name] for p in predicted] == served[name].reshape(-1).tolist(), name
    elif job.task == "tag":
        assert len(predicted) == len(inputs["text"])
        for i, p in enumerate(predicted):
            n = int(served["num_words"][i])
            assert n == len(p["tokens"]) == len(p["tags"])  # every word tagged
            assert p["tags"] == [t.decode() for t in served["labels"][i, :n]]
    else:
        assert [p["answer"] for p in predicted] == [a.decode() for a in served["answer"]]
        for p, context, start in zip(predicted, inputs["context"], served["start"],
                                     strict=True):
            if p["start"] is not None:  # character offsets of the served byte offsets
                assert len(context[:p["start"]].encode()) == start
                assert context[p["start"]:p["end"]] == p["answer"]


def test_embedder_preprocessing_is_the_exports(tmp_path):
    from keras_bert import TextEmbedder
    from keras_bert.checkpoints import load_model_dir

    model_dir = load_model_dir(make_tiny_model_dir(tmp_path / "base"))
    texts = _texts()
    # A plain encoder directory's export embeds with BERT's pooled output.
    embedder = TextEmbedder.from_pretrained(model_dir.path, pooling="pooled", seq_length=24,
                                            precision="float32")
    local = {k: v.numpy() for k, v in
             embedder.preprocessor.with_length(None, 24)(np.asarray(texts, object)).items()}
    export = export_model(model_dir.path, str(tmp_path / "export"), max_length=24).path
    with SessionBundle(export) as bundle:
        served = bundle.run("preprocess", {"text": np.asarray(texts, object)})
        vectors = bundle.run("serving_default", {"text": np.asarray(texts, object)})
    for name in INPUTS:
        np.testing.assert_array_equal(served[name], local[name], name)
    np.testing.assert_allclose(vectors["embedding"], embedder.predict(texts)["embedding"],
                               rtol=1e-5, atol=1e-5)
