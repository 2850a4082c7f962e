"""The data side of fine-tuning: task readers, label vocabularies, alignment, decoding, metrics.

* `readers`: sentence (pair) classification / regression rows from CSV, TSV, JSONL.
* `labels`: `LabelVocab`, label names <-> ids, saved one per line.
* `conll`: CoNLL-2003 NER files and first-wordpiece label alignment.
* `squad`: SQuAD v1.1/v2.0 reading, windowed features, n-best answer decoding.
* `metrics`: accuracy, Pearson, Spearman, entity F1 (seqeval), SQuAD EM/F1.
"""

from keras_bert.tasks.conll import (
    IGNORE_LABEL,
    TaggedSentence,
    TaggingFeatures,
    align_sentences,
    encode_tagged,
    predictions_to_tags,
    read_conll,
    tag_vocab,
    tagging_dataset,
)
from keras_bert.tasks.labels import LABELS_FILENAME, LabelVocab
from keras_bert.tasks.metrics import (
    accuracy,
    entity_f1,
    get_entities,
    normalize_answer,
    pearson,
    spearman,
    squad_em_f1,
)
from keras_bert.tasks.readers import (
    TextExample,
    classification_dataset,
    encode_labels,
    read_examples,
    regression_dataset,
    regression_targets,
    text_dataset,
)
from keras_bert.tasks.squad import (
    SquadAnswer,
    SquadExample,
    SquadFeature,
    decode_predictions,
    parse_squad,
    predicted_texts,
    read_squad,
    squad_dataset,
    squad_features,
)

__all__ = [
    "IGNORE_LABEL", "LABELS_FILENAME", "LabelVocab", "SquadAnswer", "SquadExample",
    "SquadFeature", "TaggedSentence", "TaggingFeatures", "TextExample", "accuracy",
    "align_sentences", "classification_dataset", "decode_predictions", "encode_labels",
    "encode_tagged", "entity_f1", "get_entities", "normalize_answer", "parse_squad",
    "pearson", "predicted_texts", "predictions_to_tags", "read_conll", "read_examples",
    "read_squad", "regression_dataset", "regression_targets", "spearman", "squad_dataset",
    "squad_em_f1", "squad_features", "tag_vocab", "tagging_dataset", "text_dataset",
]
