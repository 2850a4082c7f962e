"""Fine-tuning tasks: one class per task kind, and the data, metrics and serving functions
they use.

* `task`, `registry`: the `Task` base class and the kinds by name (`task_kind`):
  `classification` (classify, regress), `tagging` (tag), `question_answering` (squad),
  `embedding` (embed).
* `readers`: sentence (pair) classification / regression rows from CSV, TSV, JSONL.
* `labels`: `LabelVocab`, label names <-> ids, saved one per line.
* `conll`: CoNLL-2003 NER files; `squad`: SQuAD v1.1/v2.0 files.
* `metrics`: accuracy, Pearson, Spearman, entity F1 (seqeval), SQuAD EM/F1.
* `serving_module`, `serving_outputs`, `tagger_serving`, `span_qa_serving`: the functions
  behind each kind's export signatures (and `keras-bert predict`).

Importing this package loads no Keras model code; `keras_bert.tasks.registry` does.
"""

from keras_bert.tasks.conll import TaggedSentence, read_conll, read_conll_words, tag_vocab
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
from keras_bert.tasks.squad import SquadAnswer, SquadExample, parse_squad, read_squad
from keras_bert.text.word_windows import IGNORE_LABEL

__all__ = [
    "IGNORE_LABEL", "LABELS_FILENAME", "LabelVocab", "SquadAnswer", "SquadExample", "TaggedSentence",
    "TextExample", "accuracy", "classification_dataset", "encode_labels", "entity_f1",
    "get_entities", "normalize_answer", "parse_squad", "pearson", "read_conll",
    "read_conll_words", "read_examples", "read_squad", "regression_dataset",
    "regression_targets", "spearman", "squad_em_f1", "tag_vocab", "text_dataset",
]
