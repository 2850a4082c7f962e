"""`TokenClassifier`: token classification (NER) from raw text, one label per word.

    tagger = keras_bert.TokenClassifier.from_pretrained("models/minilm",
                                                        labels=["B-PER", "I-PER", "O"])
    tagger.fit([["Ahab", "Smith", "sailed"], ...], [["B-PER", "I-PER", "O"], ...])
    tagger.evaluate(sentences, tags)        # entity precision / recall / F1, per type
    tagger.predict(["Ahab sailed to Rome"])["labels"]   # per word, padded with ""

Sentences are word lists or strings (split on whitespace, as the export splits its
`text`). Files (`keras-bert finetune --task tag`): CoNLL (`conll.read_conll`). Every word
of a sentence longer than the sequence length is read, in windows advancing by
`doc_stride` (`word_windows.py`: each window `[CLS] pieces [SEP]`, one training example
per window, the word's label on its first wordpiece and `IGNORE_LABEL` elsewhere), as
training, `evaluate`, `predict` and the export read them; a word's prediction comes from
the window where its first wordpiece has the most context. Metrics: entity precision,
recall and F1 (seqeval's rules) of the export's tags.
"""

from __future__ import annotations

import os

import keras
import numpy as np
import tensorflow as tf

from keras_bert.config import DEFAULT_SEQ_LENGTH, default_doc_stride
from keras_bert.tasks.batches import examples_dataset, featurise_in_chunks
from keras_bert.tasks.in_process import PREDICT_BATCH, run_in_batches, text_of
from keras_bert.tasks.inputs import as_list, as_text, class_ids, label_names
from keras_bert.tasks.labels import LabelVocab
from keras_bert.tasks.readers import no_rows, read_rows, stdin_lines
from keras_bert.tasks.task_model import TextTaskModel
from keras_bert.tasks.token_classification import conll
from keras_bert.tasks.token_classification.config import TokenClassifierConfig
from keras_bert.tasks.token_classification.metrics import entity_f1
from keras_bert.tasks.token_classification.network import BertTokenClassifier
from keras_bert.tasks.token_classification.serving import TokenClassifierServing
from keras_bert.tasks.token_classification.word_windows import (
    IGNORE_LABEL,
    tokenize_words,
    word_windows,
)
from keras_bert.training import backends
from keras_bert.training.distribution import distributed_builder

FEATURE_CHUNK = 1024  # sentences featurised per call
CONLL_EXTENSIONS = (".conll", ".txt")


@keras.saving.register_keras_serializable(package="keras_bert")
class TokenClassifier(TextTaskModel):
    """Token classification from raw text; targets are per-word tag names (or ids).

    `predict` gives, per text, `tokens` (its words), `labels` (tag names), `label_ids`,
    `scores`, byte offsets `start_offsets` / `end_offsets` and `num_words` (rows padded to
    the longest text); `evaluate` gives entity `precision`, `recall`, `f1`, `per_type`.
    Hooks (`TaskHooks`): every "must"; `_from_settings`, `_read_rows` and `_answers`.
    """

    kind = "tag"
    labelled = True
    config_class = TokenClassifierConfig

    @classmethod
    @distributed_builder
    def from_pretrained(cls, source: str, labels=None, *, doc_stride: int | None = None,
                        dropout: float | None = None, seq_length: int = DEFAULT_SEQ_LENGTH,
                        rules: str | None = None, precision: str | None = None,
                        seed: int | None = None, new_head: bool = False):
        """A token classifier on the encoder of `source` with a new head (a keras_bert model
        directory, any checkpoint `keras-bert convert` reads, local or by hub id, or
        `random-NAME`: random weights of a preset size; a
        fine-tuned token classifier's model directory loads whole). `labels`: the tag
        names; `doc_stride`: how far windows over long sentences advance (default half of
        `seq_length`, at most 128); `precision`: as `TextClassifier.from_pretrained`;
        `seed`: the new head's initial weights (as `keras-bert finetune --seed`);
        `new_head`: a new head even on a fine-tuned token classifier (its encoder only)."""
        loaded, model_dir = cls._pretrained(source, rules, precision, new_head)
        if loaded is not None:
            return loaded
        if labels is None:
            raise ValueError("a TokenClassifier needs labels=: the tag names")
        vocab = label_names(labels)
        encoder, preprocessor = cls._encoder_and_preprocessor(model_dir, seq_length,
                                                              precision, seed)
        config = TokenClassifierConfig(
            doc_stride=doc_stride or default_doc_stride(seq_length), dropout=dropout)
        return cls(cls._build_network(encoder, config, vocab), preprocessor, vocab, config)

    @classmethod
    def _build_network(cls, encoder, config, labels):
        """A `BertTokenClassifier` with one output per tag."""
        return BertTokenClassifier(encoder, len(labels), dropout=config.dropout)

    def _default_loss(self):
        """Cross-entropy on first wordpieces only (`IGNORE_LABEL` elsewhere)."""
        return keras.losses.SparseCategoricalCrossentropy(
            from_logits=True, ignore_class=IGNORE_LABEL), None

    def compute_loss(self, x=None, y=None, y_pred=None, sample_weight=None, training=True):
        """Keras' loss; the default one under a `tf.distribute` strategy of several
        replicas averaged over the labelled tokens of the whole global batch (Keras
        averages over each replica's own, whose counts differ), as on one device."""
        loss = super().compute_loss(x, y, y_pred, sample_weight, training)
        replicas = backends.replicas_in_sync()
        if (replicas == 1 or y is None or sample_weight is not None
                or self._compile_arguments.get("loss") is not None):
            return loss
        labelled = keras.ops.sum(keras.ops.cast(keras.ops.not_equal(y, IGNORE_LABEL), "int32"))
        # Keras' value: this replica's mean over its labelled tokens, divided by replicas.
        return backends.global_mean(loss * float(replicas) * keras.ops.cast(
            labelled, loss.dtype), labelled)

    def _rows(self, x, y) -> list[conll.TaggedSentence]:
        """Tagged sentences of `x` (sentences) and `y` (one tag list per sentence)."""
        sentences = word_lists(x)
        tags = tag_lists(y, sentences, self.labels)
        return [conll.TaggedSentence(words, row, i)
                for i, (words, row) in enumerate(zip(sentences, tags, strict=True))]

    def _stream(self, rows, batch_size, seed=None, drop_remainder=False, batching=None):
        """`(inputs, labels)` batches of the sentences' windows, one row per window, the
        per-position labels cut with the inputs (`Batching`)."""
        features = self._features(rows)
        inputs = {k: v for k, v in features.items() if k != "labels"}
        return (examples_dataset(inputs, features["labels"], batch_size, seed,
                                 drop_remainder, batching, per_token_targets=True),
                len(features["labels"]))

    def _features(self, sentences) -> dict[str, np.ndarray]:
        """The windows of tagged `sentences`: the three inputs and per-position `labels`,
        one row per window, sentences in order."""
        ids = self.preprocessor.special_token_ids

        def featurise(chunk):
            words = tf.ragged.constant([s.words for s in chunk], dtype=tf.string,
                                       row_splits_dtype=tf.int64)
            tags = tf.ragged.constant([_tag_ids(s, self.labels) for s in chunk],
                                      dtype=tf.int32, row_splits_dtype=tf.int64)
            out = word_windows(tokenize_words(self.preprocessor.tokenizer, words),
                               self.preprocessor.seq_length, self._doc_stride(), ids["cls"],
                               ids["sep"], ids["pad"], word_labels=tags,
                               max_length=self.preprocessor.max_length)
            return {name: out[name] for name in
                    ("input_word_ids", "input_mask", "input_type_ids", "labels")}

        return featurise_in_chunks(sentences, FEATURE_CHUNK, featurise)

    def _doc_stride(self) -> int:
        """How far the windows advance (the config's, else half the training length)."""
        return self.config.stride_at(self.preprocessor.seq_length)

    def _score(self, rows, batch_size, train=None) -> dict:
        """Entity `precision`, `recall`, `f1` and `per_type` of the export's tags."""
        predicted = self._tags([s.words for s in rows], batch_size)
        result = entity_f1([s.tags for s in rows], predicted)
        return {k: result[k] for k in ("precision", "recall", "f1", "per_type")}

    def _tags(self, sentences: list[list[str]], batch_size: int) -> list[list[str]]:
        """Each sentence's tags, as the export gives them."""
        out = run_in_batches(self._served().text_function(),
                             {"text": [" ".join(w) for w in sentences]}, batch_size)
        return [[text_of(t) for t in out["labels"][i][:int(out["num_words"][i])]]
                for i in range(len(sentences))]

    def _requests(self, x) -> dict[str, list[str]]:
        """`text`: each sentence's words joined by spaces."""
        return {"text": [" ".join(words) for words in word_lists(x)]}

    def _build_serving(self, preprocessor, options=None):
        """Word-level `labels`, `scores`, byte offsets from `text` (no export options)."""
        return TokenClassifierServing(self.network, preprocessor, list(self.labels.names),
                                      self._doc_stride())

    # ----- the job layer ------------------------------------------------------------------

    @classmethod
    def _from_settings(cls, settings, train: list, train_file: str):
        """`keras-bert finetune --task tag`'s model: the tag set of `train`, the settings'
        stride and dropout."""
        return cls.from_pretrained(settings.source, conll.tag_vocab(train).names,
                                   doc_stride=settings.doc_stride, dropout=settings.dropout,
                                   seq_length=settings.seq_length, rules=settings.rules,
                                   precision=settings.precision, seed=settings.seed,
                                   new_head=True)

    @classmethod
    def _read_rows(cls, path, columns, labels=None) -> list:
        """`TaggedSentence`s of the CoNLL file `path`; with `labels`, every tag in them."""
        sentences = conll.read_conll(path)
        if labels is not None:
            for sentence in sentences:
                try:
                    _tag_ids(sentence, labels)
                except ValueError as e:
                    raise ValueError(f"{path}: {e}") from None
        return sentences

    def _answers(self, source, batch_size=PREDICT_BATCH, text_column=None,
                 text_b_column=None) -> list[dict]:
        """`{"tokens", "tags"}` per sentence of a CoNLL file (`.conll`, `.txt`; tags, if
        any, ignored), a CSV/TSV/JSONL text column, or stdin lines; words are split on
        whitespace."""
        if source == "-":
            sentences = [line.split() for _, line in stdin_lines()]
        elif os.path.splitext(source)[1].lower() in CONLL_EXTENSIONS:
            sentences = conll.read_conll_words(source)
        else:
            sentences = [ex.text.split() for ex in read_rows(
                source, text_column=text_column or "text", label_column=None)]
        if not sentences:
            no_rows("stdin" if source == "-" else source)
        return [{"tokens": list(words), "tags": tags}
                for words, tags in zip(sentences, self._tags(sentences, batch_size),
                                       strict=True)]


def _tag_ids(sentence, labels) -> list[int]:
    unknown = [t for t in sentence.tags if t not in labels]
    if unknown:
        raise ValueError(f"sentence at line {sentence.line}: tag {unknown[0]!r} is not in the "
                         f"label set {labels.names}.")
    return labels.encode(sentence.tags)


def word_lists(x, what: str = "x") -> list[list[str]]:
    """Sentences as word lists: each a list of words, or a string split on whitespace (as
    the export splits its `text`)."""
    sentences = []
    for i, row in enumerate(as_list(x, what)):
        if isinstance(row, (str, bytes)):
            sentences.append(as_text(row, what, i).split())
        elif isinstance(row, (list, tuple, np.ndarray)):
            words = [as_text(w, f"{what}[{i}]", j) for j, w in enumerate(list(row))]
            bad = next((w for w in words if not w or w != w.strip() or len(w.split()) != 1),
                       None)
            if bad is not None:
                raise ValueError(f"{what}[{i}] has the word {bad!r}: a word is non-empty and "
                                 "holds no whitespace")
            sentences.append(words)
        else:
            raise TypeError(f"{what}[{i}] is a {type(row).__name__}; a sentence is a string "
                            "or a list of words")
    return sentences


def tag_lists(y, sentences: list[list[str]], labels: LabelVocab,
              what: str = "y") -> list[list[str]]:
    """One tag name (or id) per word of each sentence, as names."""
    rows = as_list(y, what)
    if len(rows) != len(sentences):
        raise ValueError(f"{what} has {len(rows)} tag lists for {len(sentences)} sentences")
    out = []
    for i, (tags, words) in enumerate(zip(rows, sentences, strict=True)):
        if isinstance(tags, (str, bytes)) or not isinstance(tags, (list, tuple, np.ndarray)):
            raise TypeError(f"{what}[{i}] is {tags!r}: one list of tags per sentence")
        tags = list(tags)
        if len(tags) != len(words):
            raise ValueError(f"{what}[{i}] has {len(tags)} tags for the {len(words)} words "
                             f"{words}")
        out.append([labels.name(int(t)) for t in class_ids(tags, labels, len(tags),
                                                           f"{what}[{i}]")])
    return out


