"""Span-QA exports over long contexts, read in `doc_stride` windows: the in-graph decoding
(SQuAD v2.0's null answer and v1.1's, a static sequence length, a maximum answer length)
checked in a fresh TensorFlow-only process and in process against a Python reference of the
original `run_squad.py` (windowed features, the Keras model, `decode_predictions`) on the same
texts. Short contexts, taggers and serving: `test_task_exports.py`."""

import numpy as np
import pytest
import tensorflow as tf

from keras_bert.tasks.question_answering import squad
from keras_bert.tasks.question_answering.serving import QuestionAnswererServing
from keras_bert.tasks.question_answering.span_decoding import NO_SPAN_SCORE
from keras_bert.tasks.task_dir import export_model
from keras_bert.tasks.task_model import TextTaskModel
from tests.export.helpers import WORDS, make_tiny_task_dir, run_fresh
from tests.tasks.question_answering import reference_squad

LONG_TASK = {"kind": "squad", "seq_length": 32, "max_query_length": 8, "doc_stride": 8,
             "version_2": True}


def _long_context(rng, num_words: int) -> str:
    """Words of the tiny vocab, some capitalised, some followed by a full stop."""
    words = [str(w) for w in rng.choice([w for w in WORDS if w.isalpha()], num_words)]
    return " ".join((w.capitalize() if rng.random() < 0.2 else w)
                    + ("." if rng.random() < 0.1 else "") for w in words)


def _long_pairs():
    rng = np.random.default_rng(7)
    contexts = [_long_context(rng, n) for n in (90, 120, 150, 110, 130)]
    contexts[2] = "Naïve café — " + contexts[2]  # multi-byte characters before the answers
    questions = ["who sailed to sea?", "what is the capital?", "where does bert read?",
                 "who sat on the mat?", "what is strong?", "who sailed?", "who?"]
    # Long contexts (several windows each), a short one (one window) and an empty one.
    return questions, contexts + ["Ahab sailed to sea.", ""]


def _python_long_answers(loaded, threshold: float, allow_no_answer: bool = True,
                         max_answer_length: int = 30):
    """The Python reference of the original run_squad.py (windowed features, the Keras model,
    `decode_predictions`) with a null-score threshold, and the features."""
    questions, contexts = _long_pairs()
    examples = [squad.SquadExample(str(i), q, c)
                for i, (q, c) in enumerate(zip(questions, contexts, strict=True))]
    features = reference_squad.squad_features(examples, loaded.preprocessor.tokenizer,
                                    seq_length=LONG_TASK["seq_length"],
                                    max_query_length=LONG_TASK["max_query_length"],
                                    doc_stride=LONG_TASK["doc_stride"])
    logits = loaded.network.predict(reference_squad.squad_dataset(features), verbose=0)
    results = reference_squad.decode_predictions(examples, features, logits["start_logits"],
                                       logits["end_logits"], allow_no_answer=allow_no_answer,
                                       null_score_threshold=threshold,
                                       max_answer_length=max_answer_length)
    return [results[ex.qas_id] for ex in examples], features


def _assert_same_answers(got, expected, contexts):
    """Exported outputs (bytes answers, byte offsets) == the Python decoder's (characters)."""
    assert [a.decode("utf-8") for a in np.asarray(got["answer"])] == [r["text"] for r in expected]
    for i, r in enumerate(expected):
        if r["text"]:
            assert got["start"][i] == len(contexts[i][:r["start_char"]].encode("utf-8"))
            assert got["end"][i] == len(contexts[i][:r["end_char"]].encode("utf-8"))
        else:
            assert got["start"][i] == got["end"][i] == -1
        assert bool(got["has_answer"][i]) == bool(r["text"])
        if np.isfinite(r["score"]):
            np.testing.assert_allclose(got["score"][i], r["score"], atol=1e-5)
        else:  # no span possible (v1.1): a finite score, never -inf
            assert got["score"][i] == NO_SPAN_SCORE


@pytest.fixture(scope="module")
def long_qa_dir(tmp_path_factory):
    """`(task directory, loaded model, null-score threshold)`."""
    root = tmp_path_factory.mktemp("long_qa")
    task_dir = make_tiny_task_dir(root, LONG_TASK)
    loaded = TextTaskModel.load(task_dir)
    # A threshold between the two largest margins (null score - best span score) of the
    # long contexts: "no answer" wins for exactly one of them.
    results, _ = _python_long_answers(loaded, 0.0)
    margins = sorted(r["null_score"] - max(c["score"] for c in r["nbest"] if c["text"])
                     for r in results[:5])
    threshold = float((margins[-2] + margins[-1]) / 2)
    return task_dir, loaded, threshold


@pytest.fixture(scope="module")
def long_qa(long_qa_dir):
    """`(loaded model, None, threshold)`: the README tier's tests trace the serving module
    in process and need no export."""
    _, loaded, threshold = long_qa_dir
    return loaded, None, threshold


@pytest.fixture(scope="module")
def long_qa_export(long_qa_dir, tmp_path_factory):
    """`(loaded model, its export, threshold)`, exported only for the slow test that reads
    it (an export of this model: ~5 s on 2 busy cores)."""
    task_dir, loaded, threshold = long_qa_dir
    exported = export_model(task_dir, str(tmp_path_factory.mktemp("long_qa") / "export"),
                            null_score_threshold=threshold)
    return loaded, exported, threshold


def test_span_qa_module_answers_within_max_answer_length(long_qa):
    # The in-graph decoding of every window of the long contexts with a limit of 3 tokens,
    # against the Python reference with the same limit; without it most answers are longer.
    loaded, _, threshold = long_qa
    module = QuestionAnswererServing(
        loaded.network, loaded.preprocessor.with_length(None, 32),
        max_query_length=LONG_TASK["max_query_length"], doc_stride=LONG_TASK["doc_stride"],
        allow_no_answer=False, max_answer_length=3)
    questions, contexts = _long_pairs()
    got = {k: v.numpy() for k, v in module.text_function()(
        question=tf.constant(questions), context=tf.constant(contexts)).items()}
    expected, _ = _python_long_answers(loaded, threshold, False, max_answer_length=3)
    _assert_same_answers(got, expected, contexts)
    unlimited, _ = _python_long_answers(loaded, threshold, False)
    assert all(len(r["text"].split()) <= 3 for r in expected)
    assert sum(len(r["text"].split()) > 3 for r in unlimited) >= 3, unlimited


@pytest.mark.slow  # 30-42 s: kept out of the README's tier (under 15 min); CI runs it once a cycle
def test_long_contexts_fresh_process_match_the_python_reference(long_qa_export, tmp_path):
    loaded, exported, threshold = long_qa_export
    questions, contexts = _long_pairs()
    got = run_fresh(exported.path, "serving_default",
                    {"question": np.array(questions, dtype=object),
                     "context": np.array(contexts, dtype=object)}, tmp_path)
    expected, features = _python_long_answers(loaded, threshold)
    _assert_same_answers(got, expected, contexts)
    windows = [sum(f.example_index == i for f in features) for i in range(len(contexts))]
    assert min(windows[:5]) >= 10 and windows[5:] == [1, 1]
    # Both outcomes among the long contexts, and answers only a late window holds.
    assert [r["text"] for r in expected[:5]].count("") == 1 and expected[6]["text"] == ""
    first_window_end = [max(f.token_end_char) for f in features if f.window_index == 0]
    late = [i for i, r in enumerate(expected)
            if r["text"] and r["start_char"] >= first_window_end[i]]
    assert len(late) >= 2, late


@pytest.mark.parametrize("allow_no_answer,seq_length", [(False, None), (True, 32)])
def test_long_contexts_in_graph_match_the_python_reference(long_qa, allow_no_answer, seq_length):
    # SQuAD v1.1 decoding (no null answer; NO_SPAN_SCORE when no span is valid), and a static
    # sequence length (TPU/XLA exports), traced as the export traces them.
    loaded, _, threshold = long_qa
    module = QuestionAnswererServing(
        loaded.network, loaded.preprocessor.with_length(seq_length, 32),
        max_query_length=LONG_TASK["max_query_length"], doc_stride=LONG_TASK["doc_stride"],
        allow_no_answer=allow_no_answer, null_score_threshold=threshold)
    questions, contexts = _long_pairs()
    got = {k: v.numpy() for k, v in module.text_function()(
        question=tf.constant(questions), context=tf.constant(contexts)).items()}
    expected, _ = _python_long_answers(loaded, threshold, allow_no_answer)
    _assert_same_answers(got, expected, contexts)
    assert all(r["text"] for r in expected[:-1]) != allow_no_answer


def test_span_qa_module_refuses_a_non_positive_stride(long_qa):
    loaded, _, _ = long_qa
    with pytest.raises(ValueError, match="doc_stride must be positive"):
        QuestionAnswererServing(loaded.network, loaded.preprocessor.with_length(None, 32),
                            max_query_length=8, doc_stride=0)
