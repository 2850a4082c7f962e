"""`TagTask`: token classification (NER), one label per word, every word of a long text.

Data: CoNLL files (`keras_bert.tasks.conll.read_conll`), featurised by
`keras_bert.text.word_windows` (the function the export runs): each sentence's wordpieces
are covered by windows `[CLS] pieces [SEP]` advancing by `doc_stride`, one training example
per window, the word's label on its first wordpiece (`IGNORE_LABEL` elsewhere). A word's
prediction comes from the window where its first wordpiece has the most context.
Model: `BertTagger`. Evaluation: the export's tagging function run in process on the eval
sentences, scored with entity precision / recall / F1. Export: `TaggerServingModule`.
"""

from __future__ import annotations

import os

import keras
import numpy as np
import tensorflow as tf

from keras_bert.config import default_doc_stride
from keras_bert.models.tagger import BertTagger
from keras_bert.tasks import conll, metrics, readers
from keras_bert.tasks.tagger_config import TaggerConfig
from keras_bert.tasks.tagger_serving import TaggerServingModule
from keras_bert.tasks.task import (
    PREDICT_BATCH,
    Task,
    examples_dataset,
    featurise_in_chunks,
    run_in_batches,
    text_of,
)
from keras_bert.text.word_windows import IGNORE_LABEL, tokenize_words, word_windows

FEATURE_CHUNK = 1024  # sentences featurised per call
CONLL_EXTENSIONS = (".conll", ".txt")


class TagTask(Task):
    """Token classification; metrics: entity precision, recall and F1 (seqeval rules)."""

    name = "tag"
    labelled = True

    def build_model(self, encoder, spec: dict, labels=None):
        """A `BertTagger` with one output per tag."""
        if labels is None:
            raise ValueError("a tag model needs its labels")
        return BertTagger(encoder, len(labels), dropout=TaggerConfig.from_block(spec).dropout)

    def compile(self, model, optimizer) -> None:
        """Cross-entropy on first wordpieces only (`IGNORE_LABEL` elsewhere)."""
        model.compile(optimizer=optimizer,
                      loss=keras.losses.SparseCategoricalCrossentropy(
                          from_logits=True, ignore_class=IGNORE_LABEL),
                      jit_compile=False)

    def features(self, sentences, labels, preprocessor, spec: dict) -> dict[str, np.ndarray]:
        """The windows of tagged `sentences`: the three inputs and per-position `labels`,
        one row per window, sentences in order."""
        ids = preprocessor.special_token_ids

        def featurise(chunk):
            words = tf.ragged.constant([s.words for s in chunk], dtype=tf.string,
                                       row_splits_dtype=tf.int64)
            tags = tf.ragged.constant([_tag_ids(s, labels) for s in chunk], dtype=tf.int32,
                                      row_splits_dtype=tf.int64)
            out = word_windows(tokenize_words(preprocessor.tokenizer, words),
                               preprocessor.seq_length, int(spec["doc_stride"]), ids["cls"],
                               ids["sep"], ids["pad"], word_labels=tags,
                               max_length=preprocessor.max_length)
            return {name: out[name] for name in
                    ("input_word_ids", "input_mask", "input_type_ids", "labels")}

        return featurise_in_chunks(sentences, FEATURE_CHUNK, featurise)

    def dataset(self, features: dict, batch_size: int,
                shuffle_seed: int | None = None) -> tf.data.Dataset:
        """`(inputs, labels)` batches."""
        inputs = {k: v for k, v in features.items() if k != "labels"}
        return examples_dataset(inputs, features["labels"], batch_size, shuffle_seed)

    def read_rows(self, path: str, job, labels=None) -> list:
        """`TaggedSentence`s of the CoNLL file `path`; with `labels`, every tag in them."""
        sentences = conll.read_conll(path)
        if labels is not None:
            for sentence in sentences:
                _in_file(path, _tag_ids, sentence, labels)
        return sentences

    def label_vocab(self, rows: list, source: str):
        """The sorted tag set of the training sentences."""
        return conll.tag_vocab(rows)

    def score_sentences(self, module, sentences, batch_size: int = PREDICT_BATCH) -> dict:
        """Entity `precision`, `recall`, `f1` and `per_type` of the tags the export's
        function (`module`) gives the words of tagged `sentences`."""
        predicted = [r["tags"] for r in self.predict(module, [s.words for s in sentences],
                                                     batch_size)]
        result = metrics.entity_f1([s.tags for s in sentences], predicted)
        return {k: result[k] for k in ("precision", "recall", "f1", "per_type")}

    def serving_module(self, model, preprocessor, labels, spec: dict, **options):
        """Word-level `labels`, `scores`, byte offsets from `text`."""
        stride = spec.get("doc_stride") or default_doc_stride(preprocessor.max_length)
        return TaggerServingModule(model, preprocessor, list(labels.names), int(stride))

    def read_inputs(self, source: str, spec: dict, text_column=None, text_b_column=None):
        """Sentences as word lists: a CoNLL file (`.conll`, `.txt`; tags, if any, ignored),
        a CSV/TSV/JSONL text column, or stdin lines; words are split on whitespace."""
        if source == "-":
            sentences = [line.split() for _, line in readers.stdin_lines()]
        elif os.path.splitext(source)[1].lower() in CONLL_EXTENSIONS:
            sentences = conll.read_conll_words(source)
        else:
            sentences = [ex.text.split() for ex in readers.read_examples(
                source, text_column=text_column or "text", label_column=None)]
        return sentences or readers.no_rows("stdin" if source == "-" else source)

    def predict(self, module, inputs, batch_size: int = PREDICT_BATCH) -> list[dict]:
        """`{"tokens", "tags"}` per sentence: every word and its label."""
        out = run_in_batches(module.text_function(), {"text": [" ".join(w) for w in inputs]},
                             batch_size)
        results = []
        for i, words in enumerate(inputs):
            n = int(out["num_words"][i])
            results.append({"tokens": list(words),
                            "tags": [text_of(t) for t in out["labels"][i][:n]]})
        return results


def _tag_ids(sentence, labels) -> list[int]:
    unknown = [t for t in sentence.tags if t not in labels]
    if unknown:
        raise ValueError(f"sentence at line {sentence.line}: tag {unknown[0]!r} is not in the "
                         f"label set {labels.names}.")
    return labels.encode(sentence.tags)


def _in_file(path, function, *args):
    try:
        return function(*args)
    except ValueError as e:
        raise ValueError(f"{path}: {e}") from None
