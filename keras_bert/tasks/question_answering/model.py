"""`QuestionAnswerer`: extractive question answering (SQuAD v1.1 / v2.0) from raw text.

    qa = keras_bert.QuestionAnswerer.from_pretrained("models/minilm")
    qa.fit([(question, context), ...], [{"text": "Nantucket", "start": 17}, ...])
    qa.evaluate(pairs, answers)                  # exact_match, f1 (official SQuAD rules)
    qa.predict([("Where from?", "Ahab sailed from Nantucket.")])["answer"]

Files (`keras-bert finetune --task squad`): SQuAD JSON (`squad.read_squad`). Contexts of
any length are read in windows advancing by `doc_stride` (`question_windows.py`: one
training example per window, labelled with the answer's columns or `[CLS]`), as training,
`evaluate`, `predict` and the export read them; the network brings its own loss (start and
end cross-entropy). With `version_2=True` a question may have no answer (target None); the
model then answers "" where the null score wins. Metrics: the official exact match and F1
of the export's answers.
"""

from __future__ import annotations

import keras
import numpy as np
import tensorflow as tf

from keras_bert.tasks.batches import examples_dataset, featurise_in_chunks
from keras_bert.tasks.in_process import PREDICT_BATCH, run_in_batches, text_of
from keras_bert.tasks.question_answering.config import (
    AnswererExportOptions,
    QuestionAnswererConfig,
)
from keras_bert.tasks.question_answering.metrics import squad_em_f1
from keras_bert.tasks.question_answering.network import BertQuestionAnswerer
from keras_bert.tasks.question_answering.question_windows import question_windows
from keras_bert.tasks.question_answering.serving import QuestionAnswererServing
from keras_bert.tasks.question_answering.squad import read_questions, read_squad, squad_examples
from keras_bert.tasks.task_model import TextTaskModel
from keras_bert.training.distribution import distributed_builder

FEATURE_CHUNK = 256  # questions featurised per call


@keras.saving.register_keras_serializable(package="keras_bert")
class QuestionAnswerer(TextTaskModel):
    """Question answering from `(question, context)` pairs; targets are answers (see
    `squad.squad_examples`).

    `predict` gives `answer` (text), `start` / `end` (UTF-8 byte offsets in the context,
    -1 for no answer), `score` (finite) and `has_answer`; `evaluate` gives `exact_match` and
    `f1` (percent). Hooks (`TaskHooks`): every "must"; `_from_settings`, `_read_rows` and
    `_answers`.
    """

    kind = "squad"
    config_class = QuestionAnswererConfig
    export_options_class = AnswererExportOptions

    @classmethod
    @distributed_builder
    def from_pretrained(cls, source: str, *, max_query_length: int | None = None,
                        doc_stride: int | None = None, version_2: bool = False,
                        max_answer_length: int = 30, dropout: float | None = None,
                        seq_length: int = 384, rules: str | None = None,
                        precision: str | None = None, seed: int | None = None,
                        new_head: bool = False):
        """A question answerer on the encoder of `source` (a keras_bert model directory,
        any checkpoint `keras-bert convert` reads, local or by hub id, or `random-NAME`:
        random weights of a preset size; a fine-tuned one's
        model directory loads whole). `max_query_length`: question tokens kept (default
        half of `seq_length`, at most 64); `doc_stride`: how far context windows advance
        (default half of `seq_length`, at most 128); `version_2`: a question may have no
        answer; `max_answer_length`: the longest answer in wordpieces; `dropout`: a dropout
        rate before the span head in training (None: none, as BERT's); `precision`: as
        `TextClassifier.from_pretrained`; `seed`: the new head's initial weights (as
        `keras-bert finetune --seed`); `new_head`: a new head even on a fine-tuned
        question answerer (its encoder only)."""
        loaded, model_dir = cls._pretrained(source, rules, precision, new_head)
        if loaded is not None:
            return loaded
        config = QuestionAnswererConfig(max_query_length, doc_stride, version_2,
                                        max_answer_length, dropout).at_length(seq_length)
        encoder, preprocessor = cls._encoder_and_preprocessor(model_dir, seq_length,
                                                              precision, seed)
        return cls(cls._build_network(encoder, config, None), preprocessor, None, config)

    @classmethod
    def _build_network(cls, encoder, config, labels):
        """A `BertQuestionAnswerer` (start and end logits per token; the config's dropout
        before them)."""
        return BertQuestionAnswerer(encoder, dropout=config.dropout)

    def _default_loss(self):
        """None: the network brings its loss (start and end cross-entropy)."""
        return None, None

    def _rows(self, x, y) -> list:
        """`SquadExample`s of the pairs `x` with the answers `y`."""
        rows = squad_examples(x, y)
        if not self.config.version_2 and any(ex.is_impossible for ex in rows):
            index = next(i for i, ex in enumerate(rows) if ex.is_impossible)
            raise ValueError(f"y[{index}] is no answer, but this model answers every question "
                             "(build it with version_2=True for SQuAD v2.0 data)")
        return rows

    def _stream(self, rows, batch_size, seed=None, drop_remainder=False, batching=None):
        """`(inputs, {"start_positions", "end_positions"})` batches of the questions'
        windows, one row per window (the positions fall inside their window's tokens, so
        a batch cut to its rows' length keeps them: `Batching`)."""
        features = self._features(rows)
        targets = {k: features.pop(k) for k in ("start_positions", "end_positions")}
        return (examples_dataset(features, targets, batch_size, seed, drop_remainder,
                                 batching), len(features["input_word_ids"]))

    def _features(self, examples) -> dict[str, np.ndarray]:
        """The windows of `examples` at the preprocessor's length: the three inputs and
        `start_positions` / `end_positions`, one row per window, examples in order."""
        config = self.config.at_length(self.preprocessor.seq_length)

        def featurise(chunk):
            starts, ends = zip(*(_answer_bytes(ex) for ex in chunk), strict=True)
            out = question_windows(
                self.preprocessor, tf.constant([ex.question for ex in chunk]),
                tf.constant([ex.context for ex in chunk]), config.max_query_length,
                config.doc_stride, tf.constant(starts, tf.int64),
                tf.constant(ends, tf.int64))
            _check_answers(chunk, starts, out["answer_tokens"].numpy())
            return {**out["inputs"], "start_positions": out["start_positions"],
                    "end_positions": out["end_positions"]}

        return featurise_in_chunks(examples, FEATURE_CHUNK, featurise)

    def _score(self, rows, batch_size, train=None) -> dict:
        """The official exact match and F1 of the export's answers."""
        answers = self._answer_rows(rows, batch_size)
        return squad_em_f1({a["id"]: a["answer"] for a in answers}, rows)

    def _requests(self, x) -> dict[str, list[str]]:
        """`question` and `context` of the pairs `x`."""
        rows = squad_examples(x)
        return {"question": [ex.question for ex in rows],
                "context": [ex.context for ex in rows]}

    def _build_serving(self, preprocessor, options: AnswererExportOptions | None = None):
        """`answer`, `start`, `end`, `score`, `has_answer` from `question` and `context`
        (the options' `null_score_threshold`: SQuAD v2.0's "no answer" margin, default 0)."""
        options = options or AnswererExportOptions()
        config = self.config.at_length(self.preprocessor.seq_length)
        return QuestionAnswererServing(
            self.network, preprocessor, max_query_length=config.max_query_length,
            doc_stride=config.doc_stride, allow_no_answer=self.config.version_2,
            null_score_threshold=options.null_score_threshold,
            max_answer_length=self.config.max_answer_length)

    # ----- the job layer ------------------------------------------------------------------

    @classmethod
    def _from_settings(cls, settings, train: list, train_file: str):
        """`keras-bert finetune --task squad`'s model: SQuAD v2.0 decoding when `train` has
        unanswerable questions; the settings' query length, stride and dropout."""
        return cls.from_pretrained(
            settings.source, max_query_length=settings.max_query_length,
            doc_stride=settings.doc_stride, version_2=any(ex.is_impossible for ex in train),
            dropout=settings.dropout, seq_length=settings.seq_length, rules=settings.rules,
            precision=settings.precision, seed=settings.seed, new_head=True)

    @classmethod
    def _read_rows(cls, path, columns, labels=None) -> list:
        """`SquadExample`s of the SQuAD JSON file `path`."""
        return read_squad(path)

    def _answers(self, source, batch_size=PREDICT_BATCH, text_column=None,
                 text_b_column=None) -> list[dict]:
        """One answer per question of JSONL `{"question", "context"[, "id"]}` rows (a file
        or `-`) or a SQuAD JSON file."""
        return self._answer_rows(read_questions(source), batch_size)

    def _answer_rows(self, examples, batch_size: int) -> list[dict]:
        """`{"id", "answer", "start", "end", "score", "has_answer"}` per question
        (CHARACTER offsets in the context; `None` and `""` for no answer)."""
        out = run_in_batches(self._served().text_function(),
                             {"question": [ex.question for ex in examples],
                              "context": [ex.context for ex in examples]}, batch_size)
        results = []
        for i, ex in enumerate(examples):
            start, end = int(out["start"][i]), int(out["end"][i])
            raw = ex.context.encode("utf-8")
            found = bool(out["has_answer"][i])
            results.append({
                "id": ex.qas_id, "answer": text_of(out["answer"][i]),
                "start": len(raw[:start].decode("utf-8")) if found else None,
                "end": len(raw[:end].decode("utf-8")) if found else None,
                "score": float(out["score"][i]), "has_answer": found})
        return results


def _answer_bytes(example) -> tuple[int, int]:
    """UTF-8 byte span of the first gold answer (`(-1, -1)` without one)."""
    if not example.answers or example.is_impossible:
        return -1, -1
    answer = example.answers[0]
    start = len(example.context[:answer.start_char].encode("utf-8"))
    return start, start + len(answer.text.encode("utf-8"))


def _check_answers(examples, starts, answer_tokens) -> None:
    for ex, start, (first, _) in zip(examples, starts, answer_tokens, strict=True):
        if start >= 0 and first < 0:
            raise ValueError(f"question {ex.qas_id!r}: the answer {ex.answers[0].text!r} "
                             "covers no token of the context.")
