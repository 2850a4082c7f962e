"""The README tier's guard of every served field of the LiteRT tagger and span QA, which
`test_litert_spans.py` checks in depth, converted and run in LiteRT's interpreter, in the slow
tier (each of its fixtures writes a SavedModel and a LiteRT file: ~30 s on 2 cores; the
conversion of these two graphs alone took 80-100 s each on a 2-core Zen 4 under load 9).

Here the graph each kind hands LiteRT's converter (`ServingModule.litert_graph`: the
tokenizer of the file, the windows, the in-graph decoding) runs in TensorFlow, and the
reference is the same model's `serving_default` traced in this process
(`ServingModule.text_function`: the graph its SavedModel holds), on texts both tokenizers
read alike: plain words, multi-byte characters (byte offsets), an empty text and texts read
in several windows. Every output is compared: the tagger's words, byte offsets, labels,
label ids and scores; span QA's answer, byte offsets, `has_answer` and score. That a
converted file answers as its graph: `test_litert.py` in this tier (the classifier, and
texts read in windows).
"""

import keras
import numpy as np
import pytest
import tensorflow as tf

from keras_bert import BertConfig, BertEncoder
from keras_bert.tasks.task_model import TextTaskModel
from keras_bert.text.preprocessor import BertPreprocessor
from keras_bert.text.tokenizer import BertTokenizer
from tests.export.helpers import task_model
from tests.support.tokenizer_parity import uncased_vocab_path

pytest.importorskip("ai_edge_litert")

TAGS = ["B-LOC", "B-PER", "I-PER", "O"]
# Words, two multi-byte words, an empty text, and texts of 20 and 40 words: windows of 14.
TEXTS = ["ahab sailed to paris", "naïve café owners sat on the mat", "",
         "the cat sat on the mat in rome with the dog and ishmael who sailed to sea at once",
         "call me ishmael " * 13 + "."]
QA_TASK = {"kind": "squad", "seq_length": 24, "max_query_length": 8, "doc_stride": 8,
           "version_2": True}
QUESTIONS = ["who sailed to sea?", "what is the capital?", "who?", "where is the cat?"]
CONTEXTS = ["Ahab smith sailed to the sea at once.",
            "The capital of the union is Paris, not Rome. " * 3,
            "",
            "Naïve café — the cat sat on the mat in Rome, said Ahab to Smith at once."]


def _outputs(model: TextTaskModel, inputs: dict) -> tuple[dict, dict]:
    """`(the LiteRT graph's answers, the traced serving_default's)` for `inputs` (name ->
    strings)."""
    module = model.serving_functions()
    strings = {k: tf.constant([t.encode() for t in v]) for k, v in inputs.items()}
    got = module.litert_graph().functions()["serving_default"](**strings)
    want = module.text_function()(**strings)
    return ({k: v.numpy() for k, v in got.items()}, {k: v.numpy() for k, v in want.items()})


def _assert_same(got: dict, want: dict) -> None:
    assert sorted(got) == sorted(want)
    for name, value in want.items():
        assert got[name].shape == value.shape, (name, got[name].shape, value.shape)
        if value.dtype.kind == "f":
            np.testing.assert_allclose(got[name], value, atol=1e-4, err_msg=name)
        else:
            np.testing.assert_array_equal(got[name], value, err_msg=name)


@pytest.fixture(scope="module")
def base():
    """One random encoder (`make_tiny_model_dir`'s size) and the uncased preprocessor, in
    memory: the graphs under test are built from the task model, so neither test writes and
    reads back a model directory (half of a test's time on 2 busy cores); both heads share
    the encoder, as two fine-tunings of one model directory would."""
    keras.utils.set_random_seed(0)
    tokenizer = BertTokenizer(uncased_vocab_path(), lower_case=True)
    config = BertConfig(vocab_size=tokenizer.vocab_size, hidden_size=32, num_layers=2,
                        num_heads=4, intermediate_size=64, max_position_embeddings=64)
    return BertEncoder(config), BertPreprocessor(tokenizer, None, 64)


def _model(base, task: dict, labels=None) -> TextTaskModel:
    encoder, preprocessor = base
    return task_model(task, encoder, preprocessor, labels)


def test_litert_tagger_graph_serves_every_field_as_the_saved_models(base):
    got, want = _outputs(_model(base, {"kind": "tag", "seq_length": 16}, TAGS),
                         {"text": TEXTS})
    assert sorted(want) == ["end_offsets", "label_ids", "labels", "num_words", "scores",
                            "start_offsets", "tokens"]
    _assert_same(got, want)
    # The fields say what they should, not only the same thing: every word of every text
    # (the long ones read in windows), at its byte offsets, with a label.
    assert got["num_words"].tolist() == [len(t.split()) for t in TEXTS]
    for i, text in enumerate(TEXTS):
        words, raw, n = text.split(), text.encode(), len(text.split())
        assert [w.decode() for w in got["tokens"][i, :n]] == words
        assert [raw[s:e].decode() for s, e in zip(got["start_offsets"][i, :n],
                                                  got["end_offsets"][i, :n], strict=True)] == words
        assert {w.decode() for w in got["labels"][i, :n]} <= set(TAGS)


def test_litert_span_qa_graph_serves_every_field_as_the_saved_models(base):
    got, want = _outputs(_model(base, QA_TASK), {"question": QUESTIONS, "context": CONTEXTS})
    assert sorted(want) == ["answer", "end", "has_answer", "score", "start"]
    _assert_same(got, want)
    # Answers are spans of their contexts at the byte offsets given (or none at all).
    for i, context in enumerate(CONTEXTS):
        raw, start, end = context.encode(), got["start"][i], got["end"][i]
        if got["has_answer"][i]:
            assert got["answer"][i] == raw[start:end] and got["answer"][i]
        else:
            assert got["answer"][i] == b"" and start == end == -1
