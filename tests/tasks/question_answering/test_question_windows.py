"""`question_windows` (TensorFlow, used by fine-tuning, the export and predict) against the
readable Python reference of the original run_squad.py rules (`tests/tasks/reference_squad`):
the same windows, inputs, max-context columns and answer labels, on long, accented, CJK,
empty and unanswerable examples, at several lengths and strides."""

from __future__ import annotations

import dataclasses
import os

import numpy as np
import pytest
import tensorflow as tf

from keras_bert.tasks.question_answering.question_windows import question_windows
from keras_bert.tasks.question_answering.squad import SquadAnswer, SquadExample
from keras_bert.text import BertPreprocessor, BertTokenizer
from tests.support.reference import minilm_dir
from tests.tasks.question_answering.reference_squad import squad_features
from tests.tasks.question_answering.test_squad import FRENCH, LONG


@pytest.fixture(scope="module")
def tokenizer():
    return BertTokenizer(os.path.join(minilm_dir(), "vocab.txt"))


def _example(qas_id, question, context, answer=None, impossible=False):
    answers = ()
    if answer is not None:
        answers = (SquadAnswer(answer, context.index(answer)),)
    return SquadExample(qas_id, question, context, answers, impossible)


EXAMPLES = [
    _example("long", "What colour is whale number 17?", LONG, "whale number 17 is white"),
    _example("late", "Which whale is black?", LONG, "whale number 39 is black"),
    _example("fr", "Où est Zoë ? 北京", FRENCH, "Zoë à Pékin 北京"),
    _example("short", "Who?", "Call me Ishmael.", "Ishmael"),
    _example("none", "Where?", LONG[:300], impossible=True),
    _example("empty", "Anything at all in an empty context?", ""),
    _example("unlabelled", "What is the capital?", FRENCH[:200]),
]


def _answer_bytes(examples):
    """int64 `[pairs]` UTF-8 byte offsets of each answer's start and end (`-1`: none)."""
    starts, ends = [], []
    for ex in examples:
        if ex.answers and not ex.is_impossible:
            start = len(ex.context[:ex.answers[0].start_char].encode())
            starts.append(start)
            ends.append(start + len(ex.answers[0].text.encode()))
        else:
            starts.append(-1)
            ends.append(-1)
    return tf.constant(starts, tf.int64), tf.constant(ends, tf.int64)


def _windows(tokenizer, examples, seq_length, max_query_length, doc_stride):
    return question_windows(
        BertPreprocessor(tokenizer, seq_length), tf.constant([ex.question for ex in examples]),
        tf.constant([ex.context for ex in examples]), max_query_length, doc_stride,
        *_answer_bytes(examples))


@pytest.mark.parametrize("seq_length,max_query_length,doc_stride",
                         [(64, 16, 20), (48, 8, 128), (32, 6, 7), (384, 64, 128)])
def test_same_windows_as_the_reference(tokenizer, seq_length, max_query_length, doc_stride):
    expected = squad_features(EXAMPLES, tokenizer, seq_length=seq_length,
                              max_query_length=max_query_length, doc_stride=doc_stride)
    got = _windows(tokenizer, EXAMPLES, seq_length, max_query_length, doc_stride)
    assert got["windows"].example.numpy().tolist() == [f.example_index for f in expected]
    assert len(expected) > len(EXAMPLES) or seq_length == 384
    for name in ("input_word_ids", "input_mask", "input_type_ids"):
        np.testing.assert_array_equal(got["inputs"][name].numpy(),
                                      np.stack([getattr(f, name) for f in expected]), name)
    np.testing.assert_array_equal(got["max_context"].numpy(),
                                  np.stack([f.token_is_max_context for f in expected]))
    assert got["start_positions"].numpy().tolist() == [f.start_position for f in expected]
    assert got["end_positions"].numpy().tolist() == [f.end_position for f in expected]
    labelled = [f.example_index for f in expected if f.start_position]
    assert {EXAMPLES[i].qas_id for i in labelled} == {"long", "late", "fr", "short"}


def test_an_answer_on_no_token_is_reported(tokenizer):
    # "   " between two words: bytes that no wordpiece covers.
    ex = SquadExample("gap", "Where?", "Call   me", (SquadAnswer(" ", 5),))
    got = _windows(tokenizer, [ex], 32, 8, 16)
    assert got["answer_tokens"].numpy().tolist() == [[-1, -1]]
    assert got["start_positions"].numpy().tolist() == [0]


def test_runs_traced(tokenizer):
    """Traced (as the export and the data pipeline run it) it answers exactly as eagerly:
    every output, the windows and the answer labels included."""
    pre = BertPreprocessor(tokenizer, None, max_length=48)

    def windows(q, c, start, end):
        result = dict(question_windows(pre, q, c, 8, 16, start, end))
        w = result.pop("windows")  # a dataclass: as a dict, so tf.function can return it
        result.update({f"windows.{f.name}": getattr(w, f.name) for f in dataclasses.fields(w)})
        return result

    traced = tf.function(windows, input_signature=[tf.TensorSpec([None], tf.string)] * 2
                         + [tf.TensorSpec([None], tf.int64)] * 2)
    examples = [EXAMPLES[i] for i in (3, 1, 2, 5)]  # short, long, accented + CJK, empty
    args = (tf.constant([ex.question for ex in examples]),
            tf.constant([ex.context for ex in examples]), *_answer_bytes(examples))
    out, eager = traced(*args), windows(*args)
    assert out["inputs"]["input_word_ids"].shape[1] == 48
    assert out["inputs"]["input_word_ids"].shape[0] > len(examples)
    assert sorted(out) == sorted(eager) and "start_positions" in out
    tf.nest.assert_same_structure(out, eager, expand_composites=True)
    for name in sorted(out):  # a ragged output flattens to its values and row splits
        got = tf.nest.flatten(out[name], expand_composites=True)
        want = tf.nest.flatten(eager[name], expand_composites=True)
        for k, (a, b) in enumerate(zip(got, want, strict=True)):
            assert a.dtype == b.dtype, (name, k)
            np.testing.assert_array_equal(a.numpy(), b.numpy(), err_msg=f"{name} [{k}]")
