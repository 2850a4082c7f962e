"""Token classification in other checkpoint layouts (this folder's hook, named by its
registry line: `registry.Kind.checkpoints`): Hugging Face's `BertForTokenClassification` is
a `TokenClassifier` (its labels `id2label` in id order; the dropout before its classifier,
`classifier_dropout`; its training length `hf_architectures.serving_length`, windows over
longer sentences advancing half of it), and a `TokenClassifier` goes back as one."""

from __future__ import annotations

from keras_bert.checkpoints.hf_architectures import (
    HFHead,
    HuggingFaceCheckpoint,
    classifier_dropout,
)
from keras_bert.checkpoints.mapping import Rule
from keras_bert.config import default_doc_stride
from keras_bert.tasks.task_conversion import HeldModel, HFTaskHead, hf_labels, hf_task_model
from keras_bert.tasks.token_classification.config import TokenClassifierConfig
from keras_bert.tasks.token_classification.model import TokenClassifier

# Hugging Face's class: its head is `classifier`, on a `bert` without pooler.
HF_HEAD = HFHead("BertForTokenClassification",
                 (Rule("head/kernel", "classifier.weight", transpose=True),
                  Rule("head/bias", "classifier.bias")), pooler=False)


def read_head(checkpoint) -> HeldModel | None:
    """The token classifier the opened `checkpoint` holds, or None."""
    if not (isinstance(checkpoint, HuggingFaceCheckpoint)
            and checkpoint.architecture == HF_HEAD.architecture):
        return None
    labels = hf_labels(checkpoint)

    def build(dtype=None):
        length = checkpoint.serving_length()
        config = TokenClassifierConfig(doc_stride=default_doc_stride(length),
                                       dropout=classifier_dropout(checkpoint.config))
        return hf_task_model(checkpoint, HF_HEAD, TokenClassifier, config, labels, length,
                             dtype)

    return HeldModel(TokenClassifier, build)


def hf_head(model, source: str) -> HFTaskHead:
    """`BertForTokenClassification`, with the model's head dropout."""
    return HFTaskHead(HF_HEAD, dropout=model.config.dropout)
