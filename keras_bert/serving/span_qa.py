"""Span question answering (SQuAD) export: `question` + `context` strings in, the answer out.

`serving_default` takes `question` and `context` (`[batch]` strings) and returns:

| output | dtype `[batch]` | meaning |
| --- | --- | --- |
| `answer` | string | the answer, cut from the ORIGINAL context (casing, accents, spacing kept); `""` for no answer |
| `start`, `end` | int64 | UTF-8 BYTE offsets of the answer in the context (`-1` for no answer) |
| `score` | float32 | `start_logit + end_logit` of the answer; the null score when "no answer" wins (SQuAD v2.0); `-inf` when no span is valid (v1.1) |

The packing and decoding are those of `keras_bert.tasks.squad` (the original `run_squad.py`)
for one window: `[CLS] question [SEP] context [SEP]`, the question cut to
`max_query_length` wordpieces, the context to what fits in the sequence length (longer
contexts are truncated here; `keras-bert predict` slides windows over them). Of the
`n_best` best start and end positions, pairs with both ends in the context, start <= end
and at most `max_answer_length` tokens are ranked by `start_logit + end_logit`. With SQuAD
v2.0 ("no answer" allowed) the answer is `""` when `start_logits[0] + end_logits[0]` (the
null score) exceeds the best span's score by more than `null_score_threshold`.

`serve_ids` (clients that pack `[CLS] question [SEP] context [SEP]` themselves) returns
`start_logits`, `end_logits`, `start_position`, `end_position` (token positions, -1 for no
answer) and `score`.
"""

from __future__ import annotations

import tensorflow as tf

from keras_bert.serving.module import ServingModule

NO_ANSWER = -1


def best_spans(start_logits, end_logits, context_begin, context_end, n_best: int = 20,
               max_answer_length: int = 30, allow_no_answer: bool = False,
               null_score_threshold: float = 0.0) -> dict:
    """The best answer span of each row, in graph (see the module docstring for the rules).

    Args:
      start_logits, end_logits: float32 `[batch, seq]`.
      context_begin, context_end: int `[batch]`: the context's token positions are
        `context_begin <= position < context_end`.

    Returns:
      `start_position`, `end_position` (int64 `[batch]`, -1 for no answer) and `score`
      (float32 `[batch]`).
    """
    k = tf.minimum(n_best, tf.shape(start_logits)[1])
    top_start = tf.math.top_k(start_logits, k)
    top_end = tf.math.top_k(end_logits, k)
    starts = tf.cast(top_start.indices, tf.int64)[:, :, None]
    ends = tf.cast(top_end.indices, tf.int64)[:, None, :]
    begin = tf.cast(context_begin, tf.int64)[:, None, None]
    end = tf.cast(context_end, tf.int64)[:, None, None]
    valid = ((starts >= begin) & (starts < end) & (ends >= begin) & (ends < end)
             & (ends >= starts) & (ends - starts + 1 <= max_answer_length))
    scores = top_start.values[:, :, None] + top_end.values[:, None, :]
    batch = tf.shape(scores)[0]
    flat_scores = tf.reshape(tf.where(valid, scores, -float("inf")), [batch, -1])
    best = tf.argmax(flat_scores, axis=-1, output_type=tf.int32)  # first of equals
    best_score = tf.reduce_max(flat_scores, axis=-1)
    answered = tf.reduce_any(tf.reshape(valid, [batch, -1]), axis=-1)
    if allow_no_answer:
        null_score = start_logits[:, 0] + end_logits[:, 0]
        answered &= ~(null_score - best_score > null_score_threshold)
        best_score = tf.where(answered, best_score, null_score)
    start = tf.gather(top_start.indices, best // k, batch_dims=1)
    end_position = tf.gather(top_end.indices, best % k, batch_dims=1)
    return {"start_position": tf.where(answered, tf.cast(start, tf.int64), NO_ANSWER),
            "end_position": tf.where(answered, tf.cast(end_position, tf.int64), NO_ANSWER),
            "score": best_score}


def _keep_first(rt: tf.RaggedTensor, lengths) -> tf.RaggedTensor:
    """The first `lengths[i]` values of each row of a 2-D ragged tensor."""
    positions = tf.ragged.range(rt.row_lengths())
    return tf.ragged.boolean_mask(rt, positions < tf.cast(lengths, tf.int64)[:, None])


def _dense(offsets: tf.RaggedTensor) -> tf.Tensor:
    """Offsets `[batch, (tokens)]` padded with -1 to at least one column."""
    return tf.pad(offsets.to_tensor(NO_ANSWER), [[0, 0], [0, 1]], constant_values=NO_ANSWER)


class SpanQAServingModule(ServingModule):
    """`ServingModule` for a `BertSpanQA`: answers from question + context strings.

    Args:
      model: the `BertSpanQA` (outputs `start_logits`, `end_logits`).
      tokenizer: its `BertTokenizer`.
      seq_length, max_length: as for `ServingModule` (`max_length`: the training length).
      max_query_length: question wordpieces kept (the training setting).
      allow_no_answer: SQuAD v2.0 decoding (the answer may be "").
      null_score_threshold, n_best, max_answer_length: decoding settings (see
        `keras_bert.tasks.squad.decode_predictions`).
    """

    def __init__(self, model, tokenizer, seq_length: int | None = None, max_length: int = 384,
                 max_query_length: int = 64, allow_no_answer: bool = False,
                 null_score_threshold: float = 0.0, n_best: int = 20,
                 max_answer_length: int = 30, name: str | None = None):
        length = seq_length or max_length
        if length < max_query_length + 4:
            raise ValueError(f"sequence length {length} must leave room for the question "
                             f"({max_query_length} wordpieces), 3 special tokens and context")
        self.decoding = dict(n_best=int(n_best), max_answer_length=int(max_answer_length),
                             allow_no_answer=bool(allow_no_answer),
                             null_score_threshold=float(null_score_threshold))
        super().__init__(model, tokenizer, self._ids_outputs, seq_length=seq_length,
                         max_length=max_length, pair=True, name=name)
        self.max_query_length = int(max_query_length)

    def _logits(self, inputs) -> tuple[tf.Tensor, tf.Tensor]:
        outputs = self.model(inputs, training=False)
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

    def answer(self, question, context) -> dict:
        """`serving_default`: the answer of each (question, context) pair."""
        with tf.device("/CPU:0"):
            query = self.tokenizer.tokenize(question)
            query = _keep_first(query, tf.minimum(query.row_lengths(), self.max_query_length))
            ids, starts, ends = self.tokenizer.tokenize_with_offsets(context)
            room = tf.maximum(self.packer.max_length - 3 - query.row_lengths(), 0)
            kept = tf.minimum(ids.row_lengths(), room)
            ids, starts, ends = (_keep_first(t, kept) for t in (ids, starts, ends))
            inputs = self.packer([query, ids])
        begin = query.row_lengths() + 2
        spans = best_spans(*self._logits(inputs), begin, begin + kept, **self.decoding)
        answered = spans["start_position"] >= 0
        with tf.device("/CPU:0"):
            first = tf.maximum(spans["start_position"] - begin, 0)
            last = tf.maximum(spans["end_position"] - begin, 0)
            start = tf.gather(_dense(starts), first[:, None], batch_dims=1)[:, 0]
            end = tf.gather(_dense(ends), last[:, None], batch_dims=1)[:, 0]
            start = tf.where(answered, start, NO_ANSWER)
            end = tf.where(answered, end, NO_ANSWER)
            text = tf.strings.substr(context, tf.maximum(start, 0),
                                     tf.maximum(end - start, 0), unit="BYTE")
        return {"answer": tf.where(answered, text, ""), "start": start, "end": end,
                "score": spans["score"]}

    def text_function(self):
        """`serving_default`: `question`, `context` -> `answer`, `start`, `end`, `score`."""
        return tf.function(self.answer, autograph=False, input_signature=[
            tf.TensorSpec([None], tf.string, name="question"),
            tf.TensorSpec([None], tf.string, name="context")]).get_concrete_function()
