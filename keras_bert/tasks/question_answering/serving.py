"""Question answering (SQuAD) export: `question` + `context` strings in, the answer out.

`serving_default` takes `question` and `context` (`[batch]` strings) and returns these
`[batch]` outputs (dtype in parentheses):

* `answer` (string): the answer, cut from the ORIGINAL context (casing, accents, spacing
  kept); `""` for no answer;
* `start`, `end` (int64): UTF-8 BYTE offsets of the answer in the context (`-1` for no
  answer);
* `score` (float32): `start_logit + end_logit` of the answer; the null score when "no
  answer" wins (SQuAD v2.0); `0` when no span is possible (v1.1, e.g. an empty context):
  always finite, so that any JSON parser reads it;
* `has_answer` (bool): whether `answer` is a span of the context (false: "no answer" won,
  or no span was possible).

The windows are fine-tuning's (`question_windows.py`, the original
`run_squad.py`'s rules) and `keras-bert predict` runs this very function: the question is cut
to `max_query_length` wordpieces and the context is covered by windows `[CLS] question [SEP]
window [SEP]` whose starts advance by `doc_stride` tokens until one reaches the context's end.
Question and context are tokenized once; the windows of the whole batch go through the
model as one batch. In each window, of the `n_best` best start and end positions, pairs
with both ends in the context, a start whose max-context window is this one, start <= end
and at most `max_answer_length` tokens are ranked by `start_logit + end_logit`; each pair
keeps the best span of all its windows (the first window on ties). With SQuAD v2.0 ("no
answer" allowed) the null score is the smallest `start_logits[0] + end_logits[0]` over the
pair's windows, and the answer is `""` when it exceeds the best span's score by more than
`null_score_threshold`. A context of `n` tokens costs about `n / doc_stride` windows.

`serve_ids` (clients that pack `[CLS] question [SEP] context [SEP]` themselves, one
window per row) decodes each row on its own and returns `start_logits`, `end_logits`,
`start_position`, `end_position` (token positions, -1 for no answer), `score` and
`has_answer`.
"""

from __future__ import annotations

import numpy as np
import tensorflow as tf

from keras_bert.tasks.question_answering.question_windows import question_windows
from keras_bert.tasks.question_answering.span_decoding import (
    NO_ANSWER,
    best_spans,
    best_windows,
)
from keras_bert.tasks.serving import ServingModule


class QuestionAnswererServing(ServingModule):
    """`ServingModule` for a `BertQuestionAnswerer`: answers from question + context strings.

    Args:
      model: the `BertQuestionAnswerer` (outputs `start_logits`, `end_logits`).
      preprocessor: its `BertPreprocessor` at the serving length (as for `ServingModule`;
        its `max_length`: the training length).
      max_query_length: question wordpieces kept (the training setting).
      doc_stride: how far the windows over a long context advance (the training setting).
      allow_no_answer: SQuAD v2.0 decoding (the answer may be "").
      null_score_threshold, n_best, max_answer_length: decoding settings (the original
        `run_squad.py`'s, see the module docstring).
    """

    per_token_outputs = True

    def __init__(self, model, preprocessor, max_query_length: int = 64, doc_stride: int = 128,
                 allow_no_answer: bool = False, null_score_threshold: float = 0.0,
                 n_best: int = 20, max_answer_length: int = 30):
        length = preprocessor.max_length
        if length < max_query_length + 4:
            raise ValueError(f"sequence length {length} must leave room for the question "
                             f"({max_query_length} wordpieces), 3 special tokens and context")
        if doc_stride < 1:
            raise ValueError(f"doc_stride must be positive, got {doc_stride}")
        self.decoding = dict(n_best=int(n_best), max_answer_length=int(max_answer_length),
                             allow_no_answer=bool(allow_no_answer),
                             null_score_threshold=float(null_score_threshold))
        super().__init__(model, preprocessor, self._ids_outputs)
        self.max_query_length = int(max_query_length)
        self.doc_stride = int(doc_stride)

    def _logits(self, inputs) -> tuple[tf.Tensor, tf.Tensor]:
        outputs = self.network(inputs)
        return (tf.cast(outputs["start_logits"], tf.float32),
                tf.cast(outputs["end_logits"], tf.float32))

    def _ids_outputs(self, model_outputs, inputs) -> dict:
        """`serve_ids`: logits and the best span's token positions."""
        start_logits = tf.cast(model_outputs["start_logits"], tf.float32)
        end_logits = tf.cast(model_outputs["end_logits"], tf.float32)
        mask = tf.cast(inputs["input_mask"], tf.int64)
        segment_a = mask * (1 - tf.cast(inputs["input_type_ids"], tf.int64))
        # [CLS] question [SEP] context [SEP]: the context ends before the last [SEP].
        spans = best_spans(start_logits, end_logits, tf.reduce_sum(segment_a, axis=1),
                           tf.reduce_sum(mask, axis=1) - 1, **self.decoding)
        return {"start_logits": start_logits, "end_logits": end_logits, **spans}

    def windows(self, question, context) -> dict:
        """The packed windows of each (question, context) pair (see
        `question_windows.py`, the featurisation fine-tuning uses too)."""
        return question_windows(self.preprocessor, question, context, self.max_query_length,
                                self.doc_stride)

    def answer(self, question, context) -> dict:
        """`serving_default`: the answer of each (question, context) pair.

        Every window of every pair goes through the model as one batch; each window is
        decoded on its own, then each pair keeps its best window's span.
        """
        packed = self.windows(question, context)
        inputs, windows, begin = packed["inputs"], packed["windows"], packed["begin"]
        first, max_context = packed["first"], packed["max_context"]
        starts, ends = packed["starts"], packed["ends"]
        start_logits, end_logits = self._logits(inputs)
        decoding = dict(self.decoding, allow_no_answer=False)  # "no answer": per pair below
        spans = best_spans(start_logits, end_logits, begin, begin + windows.length,
                           start_mask=max_context, **decoding)
        with tf.device("/CPU:0"):
            pairs = tf.size(context, out_type=tf.int64)
            chosen = best_windows(spans, windows.example, pairs,
                                  start_logits, end_logits, self.decoding["allow_no_answer"],
                                  self.decoding["null_score_threshold"])
            best, answered, score = chosen["window"], chosen["answered"], chosen["score"]

            def byte_offset(offsets, position):
                """The byte offset of the token at the best window's packed `position`."""
                token = tf.gather(first + spans[position] - begin, best)
                found = tf.gather(tf.concat([offsets.values, [NO_ANSWER]], 0),
                                  tf.where(answered, token, tf.size(offsets.values,
                                                                    out_type=tf.int64)))
                return tf.cast(found, tf.int64)

            start = byte_offset(starts, "start_position")
            end = byte_offset(ends, "end_position")
            text = tf.strings.substr(context, tf.maximum(start, 0),
                                     tf.maximum(end - start, 0), unit="BYTE")
        return {"answer": tf.where(answered, text, ""), "start": start, "end": end,
                "score": score, "has_answer": answered}

    def litert_graph(self):
        """The LiteRT export's graph: windows and decoding from TFLite ops
        (`litert_answerer.py`)."""
        from keras_bert.tasks.question_answering.litert_answerer import AnswerGraph

        return AnswerGraph(self)

    def warmup_inputs(self, texts):
        """A warmup request: `texts` as contexts, each with the same short question."""
        texts = np.asarray(texts, dtype=object)
        return {"question": np.array(["Who reads?"] * len(texts), dtype=object),
                "context": texts}

    def text_endpoint(self):
        """`serving_default`: `question`, `context` -> `answer`, `start`, `end`, `score`,
        `has_answer`."""
        return self.answer, _TEXT_SPECS

    def preprocess_endpoint(self):
        """`preprocess`: `question`, `context` -> the windows' model inputs (one row per
        window) and `window_row`, the pair each window belongs to."""

        def preprocess(question, context):
            packed = self.windows(question, context)
            return {**packed["inputs"], "window_row": packed["windows"].example}
        return preprocess, _TEXT_SPECS


_TEXT_SPECS = [tf.TensorSpec([None], tf.string, name="question"),
               tf.TensorSpec([None], tf.string, name="context")]
