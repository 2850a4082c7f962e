"""Tagger and span-QA exports: word labels with offsets and in-graph SQuAD decoding, checked
in a fresh TensorFlow-only process against the Keras model and `keras_bert.tasks`' Python
code on the same texts.
Long contexts read in windows: `test_task_exports_long_contexts.py`."""

import json
import os

import numpy as np
import pytest
import tensorflow as tf

from keras_bert.cli import main
from keras_bert.config import default_doc_stride
from keras_bert.export.op_audit import audit
from keras_bert.tasks.question_answering import squad
from keras_bert.tasks.question_answering.span_decoding import NO_SPAN_SCORE, best_spans
from keras_bert.tasks.task_dir import export_model
from keras_bert.tasks.task_model import TextTaskModel
from tests.export.helpers import make_tiny_task_dir, run_fresh, run_in_session_many
from tests.support.devserver import load, model_server
from tests.tasks.question_answering import reference_squad
from tests.tasks.token_classification.reference_alignment import align_sentences
from tests.tasks.token_classification.reference_word_windows import sentence_windows

TAGS = ["B-LOC", "B-PER", "I-PER", "O"]
TAG_SEQ = 12
# Plain words, accents, a zero-width word (no wordpiece: read as [UNK]), tabs and a
# no-break space between words, an empty text, and one longer than the sequence (windows).
SENTENCES = ["Ahab smith sailed to Paris", "Naïve café\towners ate crème\u00a0brûlée",
             "the \u200b cat", "",
             "the cat sat on the mat in rome with the dog and ishmael who sailed to sea"]

QA_TASK = {"kind": "squad", "seq_length": 40, "max_query_length": 8, "doc_stride": 16,
           "version_2": True}
QUESTIONS = ["who sailed to sea?", "what is the capital?", "where does bert read?", "Who?",
             "what is the capital of the union?", "who sat on the mat?"]
CONTEXTS = ["Ahab smith sailed to the sea at once.",
            "The capital of the union is Paris, not Rome.",
            "Naïve café — BERT reads whole sentences at once, in both directions.", "",
            "Rome is the capital; Paris is a city. The cat sat.",
            "The dog and the cat sat on the mat at once, said Ahab to Smith."]


# ---------------------------------------------------------------------------- tagger
@pytest.fixture(scope="module")
def tagger(tmp_path_factory):
    root = tmp_path_factory.mktemp("tagger")
    task_dir = make_tiny_task_dir(root, {"kind": "tag", "seq_length": TAG_SEQ,
                                         "num_classes": len(TAGS)}, TAGS)
    return TextTaskModel.load(task_dir), export_model(task_dir, str(root / "export"))


def test_tagger_export_layout(tagger):
    _, exported = tagger
    assert exported.task == "tag"
    assert exported.signatures["serving_default"] == {
        "inputs": ["text"], "outputs": ["end_offsets", "label_ids", "labels", "num_words",
                                        "scores", "start_offsets", "tokens"]}
    with open(f"{exported.path}/assets/labels.txt", encoding="utf-8") as f:
        assert f.read().split() == TAGS
    assert audit(exported.path).ok  # also checked by the exporter before the version appears


def _word_pieces(tokenizer, words: list[str]) -> list[list[int]]:
    """Each word's wordpiece ids, `[UNK]` for a word without any (the export's rule)."""
    pieces = tokenizer.tokenize(tf.constant(words or [""], tf.string)).to_list()[:len(words)]
    return [p or [tokenizer.unk_id] for p in pieces]


def test_tagger_session_loader_matches_keras_words(tagger):
    """The README tier's guard of every served field of the tagger (words, offsets, labels,
    scores, padding), read through TF Serving's loader path in this process."""
    loaded, exported = tagger
    [got] = run_in_session_many(exported.path, [
        ("serving_default", {"text": np.array(SENTENCES, dtype=object)})])
    _check_tagger_answers(loaded, got)


# ~9 s more than the test above on a busy 2-core Zen 4 (a fresh TensorFlow process): the same
# answers in a process without keras_bert; the README's tier keeps the test above and the op
# audit of the export (`test_tagger_export_layout`).
@pytest.mark.slow
def test_tagger_fresh_process_matches_keras_words(tagger, tmp_path):
    loaded, exported = tagger
    got = run_fresh(exported.path, "serving_default",
                    {"text": np.array(SENTENCES, dtype=object)}, tmp_path)
    _check_tagger_answers(loaded, got)


def _check_tagger_answers(loaded, got: dict) -> None:
    """The tagger export's answers for SENTENCES are the Keras model's, word by word."""
    words = [s.split() for s in SENTENCES]
    np.testing.assert_array_equal(got["num_words"], [len(w) for w in words])
    stride = default_doc_stride(TAG_SEQ)
    special = loaded.preprocessor.tokenizer.special_token_ids
    long_sentence = 0
    for i, text in enumerate(SENTENCES):
        # Reference: the Python windows (the original max-context rule) and the Keras model.
        ref = sentence_windows(_word_pieces(loaded.preprocessor.tokenizer, words[i]), TAG_SEQ,
                               stride, special)
        long_sentence = max(long_sentence, len(ref["ids"]))
        ids = np.asarray([r + [0] * (TAG_SEQ - len(r)) for r in ref["ids"]], np.int32)
        inputs = {"input_word_ids": ids, "input_mask": (np.arange(TAG_SEQ) < np.asarray(
            [len(r) for r in ref["ids"]])[:, None]).astype(np.int32),
                  "input_type_ids": np.zeros_like(ids)}
        logits = np.asarray(loaded.network(inputs, training=False))
        first = np.asarray([logits[w, c] for w, c in ref["words"]]).reshape(-1, len(TAGS))
        n = len(words[i])
        raw = text.encode("utf-8")
        assert [t.decode() for t in got["tokens"][i, :n]] == words[i]
        for j in range(n):  # byte offsets into the original text
            start, end = got["start_offsets"][i, j], got["end_offsets"][i, j]
            assert raw[start:end].decode("utf-8") == words[i][j]
        # Every word has a label, read where its first wordpiece has the most context.
        assert got["label_ids"][i, :n].tolist() == np.argmax(first, axis=-1).tolist()
        assert [t.decode() for t in got["labels"][i, :n]] == [
            TAGS[k] for k in np.argmax(first, axis=-1)]
        np.testing.assert_allclose(got["scores"][i, :n],
                                   tf.nn.softmax(first).numpy().max(axis=-1), atol=1e-5)
        # Padding: documented pad values.
        assert set(got["labels"][i, n:].tolist()) <= {b""}
        assert set(got["label_ids"][i, n:].tolist()) <= {-1}
        assert set(got["start_offsets"][i, n:].tolist()) <= {-1}
    assert long_sentence >= 3  # the long sentence is read in several windows


def test_tagger_serve_ids_labels_every_position(tagger):
    loaded, exported = tagger
    features = align_sentences(loaded.preprocessor.tokenizer, [s.split() for s in SENTENCES],
                               TAG_SEQ)
    out = load(exported.path).signatures["serve_ids"](
        **{k: tf.constant(v) for k, v in features.features().items()})
    logits = np.asarray(loaded.network(features.features(), training=False))
    np.testing.assert_allclose(out["logits"].numpy(), logits, atol=1e-5)
    np.testing.assert_array_equal(out["label_ids"].numpy(), np.argmax(logits, axis=-1))
    assert out["labels"].numpy()[0, 0].decode() == TAGS[np.argmax(logits[0, 0])]


# ---------------------------------------------------------------------------- span QA
def _python_answers(loaded, threshold: float, allow_no_answer: bool = True):
    """`keras_bert.tasks.question_answering.squad`'s features and decoder on the Keras
    model's logits."""
    examples = [squad.SquadExample(str(i), q, c)
                for i, (q, c) in enumerate(zip(QUESTIONS, CONTEXTS, strict=True))]
    features = reference_squad.squad_features(examples, loaded.preprocessor.tokenizer,
                                              seq_length=QA_TASK["seq_length"],
                                              max_query_length=QA_TASK["max_query_length"],
                                              doc_stride=QA_TASK["doc_stride"])
    assert len(features) == len(examples)  # every context fits one window
    inputs = {k: np.stack([getattr(f, k) for f in features])
              for k in ("input_word_ids", "input_mask", "input_type_ids")}
    logits = {k: np.asarray(v) for k, v in loaded.network(inputs, training=False).items()}
    results = reference_squad.decode_predictions(examples, features, logits["start_logits"],
                                       logits["end_logits"], allow_no_answer=allow_no_answer,
                                       null_score_threshold=threshold)
    return [results[ex.qas_id] for ex in examples], features, logits


@pytest.fixture(scope="module")
def span_qa(tmp_path_factory):
    root = tmp_path_factory.mktemp("span_qa")
    task_dir = make_tiny_task_dir(root, QA_TASK)
    loaded = TextTaskModel.load(task_dir)
    # A null-score threshold between the questions' margins, so that "no answer" wins for
    # some questions and a span for others.
    results, _, _ = _python_answers(loaded, 0.0)
    margins = sorted(r["null_score"] - max([c["score"] for c in r["nbest"] if c["text"]],
                                           default=-np.inf) for r in results)
    threshold = float((margins[2] + margins[3]) / 2)
    exported = export_model(task_dir, str(root / "export"), null_score_threshold=threshold)
    return loaded, exported, threshold


def test_span_qa_session_loader_matches_python_decoder(span_qa):
    """The README tier's guard of every served field of span QA (answer, byte offsets,
    has_answer, score), read through TF Serving's loader path in this process."""
    loaded, exported, threshold = span_qa
    [got] = run_in_session_many(exported.path, [("serving_default", {
        "question": np.array(QUESTIONS, dtype=object),
        "context": np.array(CONTEXTS, dtype=object)})])
    _check_span_answers(loaded, threshold, got)


# 56 s on a busy 2-core Zen 3: a fresh TensorFlow process; the README's tier keeps the test
# above and the span QA export's answers against predict
# (tests/tasks/question_answering/test_question_answerer.py)
@pytest.mark.slow
def test_span_qa_fresh_process_matches_python_decoder(span_qa, tmp_path):
    loaded, exported, threshold = span_qa
    assert exported.signatures["serving_default"] == {
        "inputs": ["context", "question"],
        "outputs": ["answer", "end", "has_answer", "score", "start"]}
    got = run_fresh(exported.path, "serving_default",
                    {"question": np.array(QUESTIONS, dtype=object),
                     "context": np.array(CONTEXTS, dtype=object)}, tmp_path)
    _check_span_answers(loaded, threshold, got)


def _check_span_answers(loaded, threshold: float, got: dict) -> None:
    """The span QA export's answers for QUESTIONS are the Python decoder's."""
    expected, _, _ = _python_answers(loaded, threshold)
    answers = [a.decode("utf-8") for a in got["answer"]]
    assert answers == [r["text"] for r in expected]
    assert "" in answers[:3] + answers[4:] and any(answers)  # both outcomes occur
    assert got["has_answer"].tolist() == [bool(r["text"]) for r in expected]
    for i, r in enumerate(expected):
        if r["text"]:  # byte offsets of the Python decoder's character offsets
            context = CONTEXTS[i]
            assert got["start"][i] == len(context[:r["start_char"]].encode("utf-8"))
            assert got["end"][i] == len(context[:r["end_char"]].encode("utf-8"))
        else:
            assert got["start"][i] == got["end"][i] == -1
        np.testing.assert_allclose(got["score"][i], r["score"], atol=1e-5)


@pytest.mark.parametrize("allow_no_answer", [False, True])
def test_best_spans_is_the_python_decoder(span_qa, allow_no_answer):
    loaded, _, threshold = span_qa
    expected, features, logits = _python_answers(loaded, threshold, allow_no_answer)
    in_context = np.stack([f.token_start_char >= 0 for f in features])
    begin = np.argmax(in_context, axis=1)
    spans = best_spans(tf.constant(logits["start_logits"]), tf.constant(logits["end_logits"]),
                       begin, begin + in_context.sum(axis=1), allow_no_answer=allow_no_answer,
                       null_score_threshold=threshold)
    for i, (r, f) in enumerate(zip(expected, features, strict=True)):
        s, e = int(spans["start_position"][i]), int(spans["end_position"][i])
        text = CONTEXTS[i][f.token_start_char[s]:f.token_end_char[e]] if s >= 0 else ""
        assert text == r["text"] and bool(spans["has_answer"][i]) == bool(r["text"])
        # No span possible (v1.1): the finite NO_SPAN_SCORE where the reference has -inf.
        want = r["score"] if np.isfinite(r["score"]) else NO_SPAN_SCORE
        assert float(spans["score"][i]) == pytest.approx(want, abs=1e-5)


# [CLS] q [SEP] c c c c c c [SEP]: the context is positions 3 to 8. The best span of all,
# 3..8 (6 + 6 = 12), is 6 tokens long; of at most 4 or 5 tokens the best is 3..6 (6 + 3 = 9),
# ahead of 5..8 (2 + 6 = 8) and 3..3 (6 + 0).
HAND_START = [0.0, 0.0, 0.0, 6.0, 0.0, 2.0, 0.0, 0.0, 0.0, 0.0]
HAND_END = [0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 3.0, 0.0, 6.0, 0.0]


@pytest.mark.parametrize("max_answer_length, want", [(30, (3, 8, 12.0)), (6, (3, 8, 12.0)),
                                                     (5, (3, 6, 9.0)), (4, (3, 6, 9.0))],
                         ids=["30", "6", "5", "4"])
def test_best_spans_refuses_spans_over_max_answer_length(max_answer_length, want):
    spans = best_spans(tf.constant([HAND_START]), tf.constant([HAND_END]), [3], [9],
                       max_answer_length=max_answer_length)
    got = (int(spans["start_position"][0]), int(spans["end_position"][0]),
           float(spans["score"][0]))
    assert got == want and bool(spans["has_answer"][0])


def test_span_qa_serve_ids_decodes_the_context_only(span_qa):
    loaded, exported, threshold = span_qa
    _, features, logits = _python_answers(loaded, threshold)
    inputs = {k: tf.constant(np.stack([getattr(f, k) for f in features]))
              for k in ("input_word_ids", "input_mask", "input_type_ids")}
    out = load(exported.path).signatures["serve_ids"](**inputs)
    np.testing.assert_allclose(out["start_logits"].numpy(), logits["start_logits"], atol=1e-5)
    for i, f in enumerate(features):
        s, e = int(out["start_position"][i]), int(out["end_position"][i])
        if s >= 0:
            assert f.token_start_char[s] >= 0 and f.token_start_char[e] >= 0 and s <= e


# ---------------------------------------------------------------------------- served
def _query(capsys, *argv) -> list[dict]:
    capsys.readouterr()
    assert main(["query", *argv]) == 0
    return [json.loads(line) for line in capsys.readouterr().out.splitlines()]


def test_served_tagger_and_span_qa_answer_the_query_cli(tagger, span_qa, capsys):
    # The local answers: each export loaded once for this file (`load`: the serve_ids
    # tests' too).
    _, tag_export = tagger
    _, qa_export, _ = span_qa
    local_tags = load(tag_export.path).signatures["serving_default"](
        text=tf.constant(SENTENCES[:2]))
    local_qa = load(qa_export.path).signatures["serving_default"](
        question=tf.constant(QUESTIONS[:2]), context=tf.constant(CONTEXTS[1:2] * 2))
    with model_server(os.path.dirname(tag_export.path), "tagger", grpc_port=0,
                      rest_port=0) as tags, \
            model_server(os.path.dirname(qa_export.path), "qa", grpc_port=0, rest_port=0) as qa:
        for flags in ([], ["--rest"]):
            server = tags.rest_url.split("//")[-1] if flags else tags.grpc_address
            rows = _query(capsys, "--server", server, "--model-name", "tagger", *flags,
                          *SENTENCES[:2])
            for i, row in enumerate(rows):
                n = row["num_words"]
                assert row["tokens"][:n] == SENTENCES[i].split()
                local = local_tags["labels"].numpy()[i, :n]
                assert row["labels"][:n] == [x.decode() for x in local]
            server = qa.rest_url.split("//")[-1] if flags else qa.grpc_address
            rows = _query(capsys, "--server", server, "--model-name", "qa", *flags,
                          "--context", CONTEXTS[1], *QUESTIONS[:2])
            assert [r["answer"] for r in rows] == [
                a.decode() for a in local_qa["answer"].numpy()]
            assert [r["start"] for r in rows] == local_qa["start"].numpy().tolist()


def _strict_json(body: bytes):
    """`json.loads` that rejects what RFC 8259 has no place for (`NaN`, `Infinity`, ...), as
    JavaScript's `JSON.parse` and Go's `encoding/json` do."""
    def reject(constant):
        raise ValueError(f"not JSON: {constant}")

    return json.loads(body, parse_constant=reject)


@pytest.mark.slow  # 30-42 s: kept out of the README's tier (under 15 min); CI runs it once a cycle
def test_unanswerable_questions_answer_finite_json_over_rest(tmp_path):
    """SQuAD v1.1 decoding asked about an empty context (no span possible) answers
    `has_answer: false` with a finite score, which a strict JSON parser reads from the REST
    API; a context with a span answers `has_answer: true`. (With `-inf`, the REST body held
    `-Infinity`: the strict parser failed the whole response.)"""
    import urllib.request

    task_dir = make_tiny_task_dir(tmp_path, {**QA_TASK, "version_2": False})
    exported = export_model(task_dir, str(tmp_path / "export"))
    body = json.dumps({"instances": [{"question": "who?", "context": ""},
                                     {"question": QUESTIONS[0], "context": CONTEXTS[0]}]})
    with model_server(os.path.dirname(exported.path), "qa", grpc_port=0, rest_port=0) as server:
        request = urllib.request.Request(f"{server.rest_url}/v1/models/qa:predict",
                                         data=body.encode(), method="POST")
        with urllib.request.urlopen(request, timeout=60) as response:
            empty, answered = _strict_json(response.read())["predictions"]
    assert empty == {"answer": "", "start": -1, "end": -1, "score": NO_SPAN_SCORE,
                     "has_answer": False}
    assert answered["has_answer"] is True and answered["answer"]
    assert CONTEXTS[0].encode()[answered["start"]:answered["end"]].decode() == answered["answer"]
    with pytest.raises(ValueError, match="Infinity"):
        _strict_json(b'{"score": -Infinity}')
