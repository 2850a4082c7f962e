"""The question answerer's LiteRT graph: `question` and `context` in, the answer out, as
the SavedModel's `serving_default` answers (`serving.py`: `answer`, `start`, `end`,
`score`, `has_answer`, the same dtypes and "no answer" values).

The steps are `serving.py`'s and `question_windows.py`'s, rebuilt from the ops a LiteRT
interpreter with TF Text's kernels runs (`keras_bert.export.litert_text`): the question cut
to `max_query_length` pieces; the context's pieces, with their byte offsets, covered by
windows `[CLS] question [SEP] window [SEP]` advancing by `doc_stride` (a context of any
length is read whole); every window of the batch through the network as one batch; each
window decoded (`best_spans`, starts only at its max-context tokens), each pair keeping its
best window's span; the answer cut from the original context by its byte offsets. The
tokenizer is the file's (`FastBertTokenizer`'s rules: docs/litert.md).
"""

from __future__ import annotations

import tensorflow as tf

from keras_bert.export.litert_graph import LiteRTGraph
from keras_bert.export.litert_text import ContextRanks, cut, pack, windows
from keras_bert.tasks.question_answering.span_decoding import (
    NO_ANSWER,
    best_spans,
    best_windows,
)


class AnswerGraph(LiteRTGraph):
    """`serving_default` and `preprocess` of a `QuestionAnswererServing` `module` for
    LiteRT; `serve_ids` is `LiteRTGraph`'s (one window per row, decoded on its own)."""

    text_inputs = ("question", "context")

    def __init__(self, module):
        super().__init__(module)
        self.max_query_length = int(module.max_query_length)
        self.doc_stride = int(module.doc_stride)
        self.decoding = dict(module.decoding)
        self.ranks = ContextRanks(self.max_length)

    def serving_default(self, question, context):
        """`[pairs]` strings -> `answer`, `start`, `end`, `score`, `has_answer`."""
        read = self._windows(question, context)
        outputs = self.network(read["inputs"])
        start_logits = tf.cast(outputs["start_logits"], tf.float32)
        end_logits = tf.cast(outputs["end_logits"], tf.float32)
        win, begin = read["windows"], read["begin"]
        spans = best_spans(start_logits, end_logits, begin, begin + win.length,
                           start_mask=read["max_context"],
                           **dict(self.decoding, allow_no_answer=False))
        chosen = best_windows(spans, win.example, tf.size(context), start_logits, end_logits,
                              self.decoding["allow_no_answer"],
                              self.decoding["null_score_threshold"])
        best, answered, score = chosen["window"], chosen["answered"], chosen["score"]

        def byte_offset(offsets, position):
            token = tf.gather(read["first"] + tf.cast(spans[position], tf.int32) - begin, best)
            known = tf.concat([offsets, [NO_ANSWER]], 0)
            return tf.gather(known, tf.where(answered, token, tf.size(offsets)))

        start = byte_offset(read["starts"], "start_position")
        end = byte_offset(read["ends"], "end_position")
        text = cut(context, tf.maximum(start, 0)[:, None], tf.maximum(end, 0)[:, None])
        return {"answer": text[:, 0], "start": tf.cast(start, tf.int64),
                "end": tf.cast(end, tf.int64), "score": score, "has_answer": answered}

    def preprocess(self, question, context):
        """`[pairs]` strings -> the windows' model inputs and `window_row`."""
        read = self._windows(question, context)
        return {**read["inputs"], "window_row": tf.cast(read["windows"].example, tf.int64)}

    def _windows(self, question, context) -> dict:
        """The packed windows of each pair, where each window's context starts (`begin`,
        a column; `first`, a piece of the flat context pieces), its max-context columns
        and the context pieces' byte offsets (`starts`, `ends`, flat)."""
        query = self.tokenizer.tokenize(question)
        query_splits = tf.cast(query.row_splits, tf.int32)
        query_length = tf.minimum(query_splits[1:] - query_splits[:-1], self.max_query_length)
        ids, splits, starts, ends = self.tokenizer.tokenize_with_offsets(context)
        num_pieces = splits[1:] - splits[:-1]
        room = self.max_length - 3 - query_length
        win = windows(num_pieces, room, self.doc_stride)
        asked = tf.gather(query_length, win.example)
        begin = asked + 2
        first = tf.gather(splits, win.example) + win.start
        inputs = pack([(query.values, tf.gather(query_splits, win.example), asked),
                       (ids, first, win.length)], self.cls_id, self.sep_id, self.pad_id)
        # Whether each column is a context piece whose max-context window is this one.
        column = tf.range(tf.shape(inputs["input_word_ids"])[1])[None, :] - begin[:, None]
        step = tf.minimum(room, self.doc_stride)
        best = self.ranks.best_window(
            win.start[:, None] + column, tf.gather(step, win.example)[:, None],
            tf.gather(num_pieces, win.example)[:, None], tf.gather(room, win.example)[:, None],
            tf.gather(win.count, win.example)[:, None])
        max_context = ((column >= 0) & (column < win.length[:, None])
                       & tf.equal(best, win.index[:, None]))
        return {"inputs": inputs, "windows": win, "begin": begin, "first": first,
                "max_context": max_context, "starts": starts, "ends": ends}
