"""The LiteRT exports whose graphs read more than one packed row per text (the tagger, span
QA, sentence pairs, texts read in windows), run in `ai-edge-litert`'s interpreter with TF
Text's TFLite kernels, against the same model's SavedModel run through TF Serving's loader
(`SessionBundle`), on held-out text: the corpus lines and the tokenizer's hard cases of
`test_litert.py`, an empty text, 100,000 characters, non-ASCII, texts at the window length
and a text read in thousands of windows.

Where the file's tokenizer (TF Text's FastBertTokenizer) gives the SavedModel's ids (every
corpus line), the answers are the SavedModel's: tags per word equal, answers' text and byte
offsets equal, scores within 1e-4. Where it does not (the tokenizer difference
`test_litert_tokenizer.py` measures, hard cases only), what does not depend on the
tokenizer is still equal (the words and their offsets) and the network and decoding are
checked on the file's own ids through both exports' `serve_ids`.
"""

import functools

import numpy as np
import pytest
import tensorflow as tf

from keras_bert.export.litert_runtime import LiteRTModel
from keras_bert.export.litert_text import LiteRTTokenizer
from keras_bert.export.session_bundle import SessionBundle
from keras_bert.tasks.task_dir import export_model
from keras_bert.text.tokenizer import BertTokenizer
from tests.export.helpers import make_tiny_task_dir
from tests.export.test_litert import held_out_texts
from tests.support.tokenizer_parity import uncased_vocab_path
from tests.text.test_tokenizer import HARD_CASES

pytest.importorskip("ai_edge_litert")
# Each module fixture writes a SavedModel and a LiteRT file (about 30 s on 2 cores).
pytestmark = pytest.mark.slow

TAGS = ["B-LOC", "B-PER", "I-PER", "O"]
TAG_SEQ = 16
QA_TASK = {"kind": "squad", "seq_length": 40, "max_query_length": 8, "doc_stride": 16,
           "version_2": True}
QUESTIONS = ["who sailed to sea?", "", "Ünïcödé — 中文?", "what " * 12 + "?"]
IDS = ("input_word_ids", "input_mask", "input_type_ids")
# The tagger's outputs that do not depend on the tokenizer.
WORDS = ("tokens", "start_offsets", "end_offsets", "num_words")


def _exports(root, task: dict, labels=None) -> tuple[str, str]:
    task_dir = make_tiny_task_dir(root, task, labels, vocab_file=uncased_vocab_path())
    saved = export_model(task_dir, str(root / "saved"), target=None)
    lite = export_model(task_dir, str(root / "lite"), format="litert", tokenizer="fast-bert")
    return saved.path, lite.path


@pytest.fixture(scope="module")
def tagger(tmp_path_factory):
    return _exports(tmp_path_factory.mktemp("tag"), {"kind": "tag", "seq_length": TAG_SEQ},
                    TAGS)


@pytest.fixture(scope="module")
def answerer(tmp_path_factory):
    return _exports(tmp_path_factory.mktemp("squad"), QA_TASK)


def _strings(texts: list[str]) -> np.ndarray:
    return np.array([t.encode("utf-8", "surrogatepass") for t in texts], dtype=object)


def _assert_equal(got: dict, want: dict, names=None, where="") -> None:
    assert sorted(got) == sorted(want), where
    for name in want if names is None else names:
        value = want[name]
        assert got[name].shape == value.shape, (where, name, got[name].shape, value.shape)
        if value.dtype.kind == "f":
            np.testing.assert_allclose(got[name], value, atol=1e-4, err_msg=f"{where} {name}")
        else:
            np.testing.assert_array_equal(got[name], value, err_msg=f"{where} {name}")


def compare(saved: str, lite: str, requests: list[dict], same_words=(),
            counts=None) -> list[int]:
    """Checks each request (input name -> strings) as the module docstring says; returns
    the requests whose ids the two tokenizers made differently. `counts`: a function of a
    request giving the word pieces each tokenizer finds in it, `(file's, SavedModel's)`,
    for the outputs that count the pieces past a truncation (`num_tokens`, `truncated`)."""
    differ = []
    with LiteRTModel(lite) as model, SessionBundle(saved) as bundle:
        for i, request in enumerate(requests):
            inputs = {k: _strings(v) for k, v in request.items()}
            got, want = model.run("serving_default", **inputs), bundle.run(
                "serving_default", inputs)
            ids = model.run("preprocess", **inputs)
            theirs = bundle.run("preprocess", inputs)
            if counts is not None and len(set(found := counts(request))) > 1:
                assert [got["num_tokens"][0], want["num_tokens"][0]] == list(found)
                got, want = ({k: v for k, v in d.items() if k not in ("num_tokens",
                                                                       "truncated")}
                             for d in (got, want))
            if sorted(ids) == sorted(theirs) and all(
                    ids[k].shape == theirs[k].shape and np.array_equal(ids[k], theirs[k])
                    for k in theirs):
                _assert_equal(got, want, where=f"request {i}")
                continue
            differ.append(i)
            _assert_equal(got, want, names=same_words, where=f"request {i}")
            rows = {k: ids[k] for k in IDS}
            _assert_equal(model.run("serve_ids", **rows), bundle.run("serve_ids", rows),
                          where=f"request {i}, serve_ids")
    return differ


def _limit_texts(room: int) -> list[str]:
    """Texts of `room - 1`, `room` and `room + 1` word pieces: one window, full, two."""
    return ["the " * n for n in (room - 1, room, room + 1)]


def _only_hard_cases(differ: list[int], texts: list[str]) -> None:
    """The tokenizers part on hard cases only (a few), never on a corpus line."""
    assert {texts[i] for i in differ} <= set(HARD_CASES), [texts[i][:40] for i in differ]
    assert len(differ) <= 15


# ------------------------------------------------------------------------------ tagger
def test_tagger_tags_every_word_as_the_saved_model(tagger):
    saved, lite = tagger
    texts = held_out_texts() + _limit_texts(TAG_SEQ - 2) + ["a\x1cb\x85c\u3000d"]
    differ = compare(saved, lite, [{"text": [t]} for t in texts], same_words=WORDS)
    _only_hard_cases(differ, texts)
    with LiteRTModel(lite) as model:  # the long texts were read in windows, every word
        answer = model.predict("word " * 20_000)[0]
    assert answer["num_words"] == 20_000 and "" not in answer["labels"]


def test_tagger_batch_answers_each_text_as_alone(tagger):
    saved, lite = tagger
    texts = held_out_texts()[:40] + _limit_texts(TAG_SEQ - 2)
    with LiteRTModel(lite) as model, SessionBundle(saved) as bundle:
        got = model(texts)
        want = bundle.run("serving_default", {"text": _strings(texts)})
        alone = [model(text) for text in texts]
    _assert_equal(got, want)  # corpus lines: tokenized alike
    for row, one in enumerate(alone):
        n = got["num_words"][row]
        for name in ("labels", "label_ids"):
            np.testing.assert_array_equal(got[name][row, :n], one[name][0, :n], name)


# ------------------------------------------------------------------------------ span QA
def test_span_answers_as_the_saved_model(answerer):
    saved, lite = answerer
    room = QA_TASK["seq_length"] - 3 - len("who sailed to sea ?".split())
    contexts = held_out_texts() + _limit_texts(room)
    requests = [{"question": [QUESTIONS[i % len(QUESTIONS)]], "context": [c]}
                for i, c in enumerate(contexts)]
    requests[-3:] = [{"question": [QUESTIONS[0]], "context": [c]} for c in contexts[-3:]]
    differ = compare(saved, lite, requests)
    _only_hard_cases(differ, contexts)
    # Answers are spans of the context itself, and a long context is read whole.
    with LiteRTModel(lite) as model:
        context = "the sea " * 5_000 + "Ahab sailed to Paris."
        answer = model.predict("who sailed?", context)[0]
    raw = context.encode()
    assert answer["answer"] == raw[answer["start"]:answer["end"]].decode()


def test_span_answers_a_batch_as_alone(answerer):
    saved, lite = answerer
    contexts = held_out_texts()[:30]
    questions = [QUESTIONS[i % 3] for i in range(len(contexts))]
    with LiteRTModel(lite) as model, SessionBundle(saved) as bundle:
        got = model(questions, contexts)
        want = bundle.run("serving_default", {"question": _strings(questions),
                                              "context": _strings(contexts)})
        alone = [model(q, c) for q, c in zip(questions, contexts, strict=True)]
    for row, one in enumerate(alone):
        for name in ("answer", "start", "end", "has_answer"):
            assert got[name][row] == one[name][0], (row, name)
    same = [r for r in range(len(contexts)) if contexts[r] not in HARD_CASES]
    for name in ("answer", "start", "end", "has_answer"):
        np.testing.assert_array_equal(got[name][same], want[name][same], name)


# ------------------------------------------------------------------------ sentence pairs
@functools.cache
def _tokenizers() -> tuple:
    """The file's tokenizer and the SavedModel's (the test models' vocabulary, uncased)."""
    ours = BertTokenizer(uncased_vocab_path(), lower_case=True)
    return LiteRTTokenizer(ours), ours


def _piece_counts(request: dict) -> tuple[int, int]:
    """The word pieces of a pair's two texts, by the file's tokenizer and the SavedModel's."""
    texts = tf.constant(request["text"] + request["text_b"])
    return tuple(int(tf.reduce_sum(t.tokenize(texts).row_lengths())) for t in _tokenizers())



def test_sentence_pairs_answer_as_the_saved_model(tmp_path):
    saved, lite = _exports(tmp_path, {"kind": "classify", "seq_length": 32, "pair": True},
                           ["entails", "neutral"])
    texts = held_out_texts()
    lines = [t for t in texts if t not in HARD_CASES]
    requests = ([{"text": [a], "text_b": [b]} for a, b in zip(lines, lines[1:] + [""],
                                                              strict=True)]
                + [{"text": [h], "text_b": ["Call me Ishmael."]} for h in HARD_CASES])
    differ = compare(saved, lite, requests, counts=_piece_counts)
    assert set(differ) <= set(range(len(lines), len(requests))), differ
    assert len(differ) <= 15


# --------------------------------------------------------------- texts read in windows
@pytest.mark.parametrize("task,labels", [
    ({"kind": "classify", "seq_length": 16,
      "long_text": {"mode": "windows", "max_windows": 3}}, ["fresh", "rotten"]),
    ({"kind": "classify", "seq_length": 16, "pair": True,
      "long_text": {"mode": "windows", "aggregate": "max"}}, ["entails", "neutral"]),
    ({"kind": "regress", "seq_length": 16,
      "long_text": {"mode": "windows", "aggregate": "first", "doc_stride": 3}}, None),
    ({"kind": "embed", "seq_length": 16, "long_text": {"mode": "windows"}}, None)])
def test_windowed_reading_answers_as_the_saved_model(tmp_path, task, labels):
    """Sentence-level models reading long texts in windows (mean of at most 3 windows;
    pairs, max; the first window; the embedder's mean weighted by pieces): answers, what
    was read (`num_tokens`, `num_windows`, `truncated`) and the windows' ids equal."""
    saved, lite = _exports(tmp_path, task, labels)
    texts = held_out_texts()[::3] + _limit_texts(14)
    second = texts[::-1] if task.get("pair") else None
    requests = [{"text": [t], **({"text_b": [second[i]]} if second else {})}
                for i, t in enumerate(texts)]
    differ = compare(saved, lite, requests, counts=_piece_counts if second else None)
    plain = [i for i, t in enumerate(texts) if t not in HARD_CASES and not (
        second and second[i] in HARD_CASES)]
    assert not set(differ) & set(plain) and len(differ) <= 15, differ
    batch = {"text": texts, **({"text_b": second} if second else {})}
    with LiteRTModel(lite) as model, SessionBundle(saved) as bundle:
        got = model(**batch)
        want = bundle.run("serving_default", {k: _strings(v) for k, v in batch.items()})
    _assert_equal({k: v[plain] for k, v in got.items()},
                  {k: v[plain] for k, v in want.items()})


# ---------------------------------------------------------------------------- bad input
def test_wrong_input_is_one_error_and_the_interpreter_still_answers(answerer, tagger):
    model, tags = LiteRTModel(answerer[1]), LiteRTModel(tagger[1])
    first = model(["who sailed?"], ["Ahab sailed to Paris."])
    wrong = [(lambda: model(["who sailed?"]), TypeError, "takes 2 text input"),
             (lambda: model(["a", "b"], ["c"]), ValueError, "1 context, 2 question"),
             (lambda: model([1], ["c"]), TypeError, "a string or a list of strings, got int"),
             (lambda: model.run("serving_default", text=_strings(["x"])), ValueError,
              "serving_default takes context, question, got text"),
             (lambda: model(question="who?"), ValueError, "takes context, question"),
             (lambda: tags(None), TypeError, "a string or a list of strings, got NoneType"),
             (lambda: tags.run("serve_ids", input_word_ids=np.zeros([1, 4], np.int32)),
              ValueError, "serve_ids takes input_mask, input_type_ids, input_word_ids")]
    for call, error, match in wrong:
        with pytest.raises(error, match=match) as raised:
            call()
        assert "\n" not in str(raised.value), str(raised.value)
    with pytest.raises((ValueError, RuntimeError)):  # LiteRT's own check of the dtype
        model.run("serving_default", question=np.zeros([1], np.float32),
                  context=_strings(["x"]))
    again = model(["who sailed?"], ["Ahab sailed to Paris."])
    for name, value in first.items():
        np.testing.assert_array_equal(again[name], value, err_msg=name)
    assert tags("Ahab sailed")["num_words"].tolist() == [2]


# ------------------------------------------------------------------------------- int8
def int8_weights(path: str) -> int:
    """The int8 tensors holding data (weights) in a LiteRT file."""
    from ai_edge_litert import schema_py_generated as schema

    with open(path, "rb") as f:
        model = schema.Model.GetRootAs(f.read(), 0)
    graphs = (model.Subgraphs(i) for i in range(model.SubgraphsLength()))
    return sum(1 for g in graphs for t in (g.Tensors(i) for i in range(g.TensorsLength()))
               if t.Type() == schema.TensorType.INT8
               and model.Buffers(t.Buffer()).DataLength() > 0)


def _files(model, root) -> tuple[str, dict[str, LiteRTModel]]:
    """`model`'s SavedModel and its float32 and int8 LiteRT files, loaded."""
    saved = model.export(str(root / "saved"), target=None)
    lite = {q: model.export(str(root / q), format="litert", tokenizer="fast-bert",
                            quantize=q) for q in ("none", "int8")}
    assert int8_weights(lite["int8"] + "/model.tflite") > 0
    assert int8_weights(lite["none"] + "/model.tflite") == 0
    return saved, {q: LiteRTModel(path) for q, path in lite.items()}


def test_int8_tagger_keeps_the_tags_and_f1(model_dir, tmp_path):
    """Trained as the tagger's own tests train it (their generated data), on 300 held-out
    sentences: int8 tags at least 99% those of the SavedModel, entity F1 within a point of
    float32's (whose tags are the SavedModel's)."""
    from keras_bert.tasks.token_classification.metrics import entity_f1
    from tests.tasks.token_classification import test_token_classifier as recipe

    tagger = recipe._fresh(model_dir)
    tagger.fit(*recipe._data(1, 96), epochs=12, batch_size=16, seed=7, verbose=0)
    words, gold = recipe._data(3, 300)
    texts = [" ".join(w) for w in words]
    saved, lite = _files(tagger, tmp_path)

    def tags(outputs):
        return [[t.decode() for t in row[:n]] for row, n in zip(outputs["labels"],
                                                                 outputs["num_words"],
                                                                 strict=True)]
    with SessionBundle(saved) as bundle:
        want = tags(bundle.run("serving_default", {"text": _strings(texts)}))
    got = {q: tags(model(texts)) for q, model in lite.items()}
    assert got["none"] == want
    equal = np.mean([a == b for r, s in zip(got["int8"], want, strict=True)
                     for a, b in zip(r, s, strict=True)])
    assert equal >= 0.99
    f1 = {q: 100 * entity_f1(gold, t)["f1"] for q, t in got.items()}
    assert abs(f1["int8"] - f1["none"]) <= 1.0, f1
    assert f1["none"] >= 80  # a trained tagger: the comparison means something


def test_int8_span_qa_keeps_the_answers_and_em_f1(model_dir, tmp_path):
    """Trained as span QA's own tests train it (their generated data), on 200 held-out
    pairs: int8 answers at least 99% those of the SavedModel, exact match and F1 within a
    point of float32's (whose answers are the SavedModel's)."""
    from keras_bert.tasks.question_answering.metrics import exact_match, token_f1
    from tests.tasks.question_answering import test_question_answerer as recipe

    qa = recipe._fresh(model_dir)
    pairs, answers, _ = recipe._data(tmp_path, "train", 1, 64)
    qa.fit(pairs, answers, epochs=recipe.EPOCHS, batch_size=16, seed=7, verbose=0)
    pairs, answers, _ = recipe._data(tmp_path, "held-out", 3, 200)
    questions, contexts = [list(column) for column in zip(*pairs, strict=True)]
    saved, lite = _files(qa, tmp_path)
    with SessionBundle(saved) as bundle:
        want = bundle.run("serving_default", {"question": _strings(questions),
                                              "context": _strings(contexts)})
    got = {q: model(questions, contexts) for q, model in lite.items()}
    for name in ("answer", "start", "end"):
        np.testing.assert_array_equal(got["none"][name], want[name], name)
    assert np.mean(got["int8"]["answer"] == want["answer"]) >= 0.99
    gold = [a["text"] for a in answers]
    for metric in (exact_match, token_f1):
        score = {q: 100 * np.mean([metric(a.decode(), g) for a, g in zip(
            out["answer"], gold, strict=True)]) for q, out in got.items()}
        assert abs(score["int8"] - score["none"]) <= 1.0, (metric.__name__, score)
        assert score["none"] >= 75, (metric.__name__, score)


# --------------------------------------------------------------------------------- docs
def test_the_pages_tagger_and_qa_blocks_run(tagger, answerer, tmp_path):
    """docs/litert.md's ```py blocks (the tagger and span QA; `tests/test_readme.py` runs
    the ```python blocks on a classifier) run as printed on a tagger at `TAGGER_DIR/1` and
    span QA at `QA_DIR/1`, and print what their comments say."""
    import os
    import re
    import shutil
    import subprocess
    import sys

    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    with open(os.path.join(root, "docs", "litert.md"), encoding="utf-8") as f:
        blocks = re.findall(r"^```py\n(.*?)^```", f.read(), flags=re.S | re.M)
    assert len(blocks) == 2
    for name, (_, lite) in (("TAGGER_DIR", tagger), ("QA_DIR", answerer)):
        shutil.copytree(lite, tmp_path / name / "1")
    for block in blocks:
        done = subprocess.run([sys.executable, "-c", block], cwd=tmp_path, capture_output=True,
                              text=True, timeout=300, env={**os.environ, "PYTHONPATH": root})
        assert done.returncode == 0, done.stderr[-3000:]
        for promised in re.findall(r"print\(.*\)\s+#\s*(.+)$", block, flags=re.M):
            assert promised.strip() in done.stdout, (promised, done.stdout)
