"""`QuestionAnswerer`: extractive question answering (SQuAD v1.1 / v2.0) from raw text.

    qa = keras_bert.QuestionAnswerer.from_pretrained("models/minilm")
    qa.fit([(question, context), ...], [{"text": "Nantucket", "start": 17}, ...])
    qa.evaluate(pairs, answers)                  # exact_match, f1 (official SQuAD rules)
    qa.predict([("Where from?", "Ahab sailed from Nantucket.")])["answer"]

Contexts of any length are read in windows advancing by `doc_stride`
(`keras_bert.text.question_windows`), as `keras-bert finetune --task squad` and the export
read them. With `version_2=True` a question may have no answer (target None); the model then
answers "" where the null score wins.
"""

from __future__ import annotations

import dataclasses

import keras

from keras_bert.task_models.text_inputs import squad_examples
from keras_bert.task_models.text_task_model import TextTaskModel
from keras_bert.tasks.registry import task_kind
from keras_bert.tasks.span_qa_config import SpanQAConfig


@keras.saving.register_keras_serializable(package="keras_bert")
class QuestionAnswerer(TextTaskModel):
    """Span QA from `(question, context)` pairs; targets are answers (see
    `text_inputs.squad_examples`).

    `predict` gives `answer` (text), `start` / `end` (UTF-8 byte offsets in the context,
    -1 for no answer), `score` (finite) and `has_answer`; `evaluate` gives `exact_match` and
    `f1` (percent).
    """

    kind = "squad"
    config_class = SpanQAConfig

    @classmethod
    def from_pretrained(cls, source: str, *, max_query_length: int | None = None,
                        doc_stride: int | None = None, version_2: bool = False,
                        seq_length: int = 384, rules: str | None = None,
                        precision: str | None = None, seed: int | None = None,
                        new_head: bool = False):
        """A question answerer on the encoder of `source` (sources: `pretrained_source`;
        a fine-tuned one's model directory loads whole). `max_query_length`: question
        tokens kept (default half of `seq_length`, at most 64); `doc_stride`: how far
        context windows advance (default half of `seq_length`, at most 128); `seed`: the
        new head's initial weights (as `keras-bert finetune --seed`); `new_head`: a new
        head even on a fine-tuned question answerer (its encoder only)."""
        loaded, model_dir = cls.pretrained_source(source, rules, precision, new_head)
        if loaded is not None:
            return loaded
        config = SpanQAConfig(max_query_length, doc_stride, version_2)
        block = config.block(cls.kind, seq_length)  # checks room for the question
        encoder, preprocessor = cls.encoder_and_preprocessor(model_dir, seq_length, precision,
                                                             seed)
        return cls(task_kind(cls.kind).build_model(encoder, block), preprocessor, None, config)

    @classmethod
    def for_job(cls, job, train: list):
        """`keras-bert finetune --task squad`'s model: SQuAD v2.0 decoding when `train` has
        unanswerable questions; the job's query length, stride and dropout."""
        model = cls.from_pretrained(
            job.model, max_query_length=job.max_query_length, doc_stride=job.doc_stride,
            version_2=any(ex.is_impossible for ex in train), seq_length=job.seq_length,
            rules=job.rules, precision=job.precision, seed=job.seed, new_head=True)
        model.config = dataclasses.replace(model.config, dropout=job.dropout)
        return model

    def rows(self, x, y) -> list:
        """`SquadExample`s of the pairs `x` with the answers `y`."""
        rows = squad_examples(x, y)
        if not self.config.version_2 and any(ex.is_impossible for ex in rows):
            index = next(i for i, ex in enumerate(rows) if ex.is_impossible)
            raise ValueError(f"y[{index}] is no answer, but this model answers every question "
                             "(build it with version_2=True for SQuAD v2.0 data)")
        return rows

    def stream(self, rows, batch_size, seed=None, drop_remainder=False):
        """The windows of the questions (`keras-bert finetune --task squad`'s features)."""
        if drop_remainder:
            raise ValueError("a QuestionAnswerer does not fit under a TPUStrategy yet: its "
                             "batches of windows are not cut to one shape")
        kind = self.task_kind
        features = kind.features(rows, self.preprocessor, self.task_block())
        return kind.dataset(features, batch_size, seed), len(features["input_word_ids"])

    def score(self, rows, batch_size, train=None) -> dict:
        """Exact match and F1 of the export's answers (as `metrics.json`)."""
        return self.task_kind.score_questions(self.serving_module(), rows, batch_size)

    def requests(self, x) -> dict[str, list[str]]:
        """`question` and `context` of the pairs `x`."""
        rows = squad_examples(x)
        return {"question": [ex.question for ex in rows],
                "context": [ex.context for ex in rows]}
