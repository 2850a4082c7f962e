"""`TokenClassifier`: token classification (NER) from raw text, one label per word.

    tagger = keras_bert.TokenClassifier.from_pretrained("models/minilm",
                                                        labels=["B-PER", "I-PER", "O"])
    tagger.fit([["Ahab", "Smith", "sailed"], ...], [["B-PER", "I-PER", "O"], ...])
    tagger.evaluate(sentences, tags)        # entity precision / recall / F1, per type
    tagger.predict(["Ahab sailed to Rome"])["labels"]   # per word, padded with ""

Sentences are word lists or strings (split on whitespace, as the export splits its
`text`). Every word of a sentence longer than the sequence length is read, in windows
advancing by `doc_stride` (`keras_bert.text.word_windows`), as `keras-bert finetune --task
tag` and the export read them.
"""

from __future__ import annotations

import keras

from keras_bert.config import DEFAULT_SEQ_LENGTH
from keras_bert.task_models.text_inputs import label_names, tag_lists, word_lists
from keras_bert.task_models.text_task_model import TextTaskModel
from keras_bert.tasks.conll import TaggedSentence
from keras_bert.tasks.registry import task_kind
from keras_bert.tasks.tagger_config import TaggerConfig


@keras.saving.register_keras_serializable(package="keras_bert")
class TokenClassifier(TextTaskModel):
    """Token classification from raw text; targets are per-word tag names (or ids).

    `predict` gives, per text, `tokens` (its words), `labels` (tag names), `label_ids`,
    `scores`, byte offsets `start_offsets` / `end_offsets` and `num_words` (rows padded to
    the longest text); `evaluate` gives entity `precision`, `recall`, `f1`, `per_type`.
    """

    kind = "tag"
    config_class = TaggerConfig

    @classmethod
    def from_pretrained(cls, source: str, labels=None, *, doc_stride: int | None = None,
                        dropout: float | None = None, seq_length: int = DEFAULT_SEQ_LENGTH,
                        rules: str | None = None, precision: str | None = None,
                        seed: int | None = None, new_head: bool = False):
        """A tagger on the encoder of `source` with a new head (sources:
        `pretrained_source`; a fine-tuned tagger's model directory loads whole). `labels`:
        the tag names; `doc_stride`: how far windows over long sentences advance (default
        half of `seq_length`, at most 128); `seed`: the new head's initial weights (as
        `keras-bert finetune --seed`); `new_head`: a new head even on a fine-tuned tagger
        (its encoder only)."""
        loaded, model_dir = cls.pretrained_source(source, rules, precision, new_head)
        if loaded is not None:
            return loaded
        if labels is None:
            raise ValueError("a TokenClassifier needs labels=: the tag names")
        vocab = label_names(labels)
        encoder, preprocessor = cls.encoder_and_preprocessor(model_dir, seq_length, precision,
                                                             seed)
        config = TaggerConfig(doc_stride=doc_stride, dropout=dropout)
        network = task_kind(cls.kind).build_model(
            encoder, config.block(cls.kind, seq_length, len(vocab)), vocab)
        return cls(network, preprocessor, vocab, config)

    @classmethod
    def for_job(cls, job, train: list):
        """`keras-bert finetune --task tag`'s tagger: the tag set of `train`, the job's
        stride and dropout."""
        labels = task_kind(cls.kind).label_vocab(train, job.train)
        return cls.from_pretrained(job.model, labels.names, doc_stride=job.doc_stride,
                                   dropout=job.dropout, seq_length=job.seq_length,
                                   rules=job.rules, precision=job.precision, seed=job.seed,
                                   new_head=True)

    def rows(self, x, y) -> list[TaggedSentence]:
        """Tagged sentences of `x` (sentences) and `y` (one tag list per sentence)."""
        sentences = word_lists(x)
        tags = tag_lists(y, sentences, self.labels)
        return [TaggedSentence(words, row, i)
                for i, (words, row) in enumerate(zip(sentences, tags, strict=True))]

    def stream(self, rows, batch_size, seed=None, drop_remainder=False):
        """The windows of the sentences (`keras-bert finetune --task tag`'s features)."""
        if drop_remainder:
            raise ValueError("a TokenClassifier does not fit under a TPUStrategy yet: its "
                             "batches of windows are not cut to one shape")
        kind = self.task_kind
        features = kind.features(rows, self.labels, self.preprocessor, self.task_block())
        return kind.dataset(features, batch_size, seed), len(features["labels"])

    def score(self, rows, batch_size, train=None) -> dict:
        """Entity precision, recall and F1 of the export's tags (as `metrics.json`)."""
        return self.task_kind.score_sentences(self.serving_module(), rows, batch_size)

    def requests(self, x) -> dict[str, list[str]]:
        """`text`: each sentence's words joined by spaces."""
        return {"text": [" ".join(words) for words in word_lists(x)]}
