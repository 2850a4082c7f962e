"""Question answering in other checkpoint layouts (this folder's hook, named by its registry
line: `registry.Kind.checkpoints`): Hugging Face's `BertForQuestionAnswering` is a
`QuestionAnswerer` with the defaults of transformers' question-answering pipeline (windows
of at most 384 tokens advancing 128, questions cut at 64, always an answer), and a
`QuestionAnswerer` goes back as one (Hugging Face's has no dropout before its head)."""

from __future__ import annotations

from keras_bert.checkpoints.hf_architectures import HFHead, HuggingFaceCheckpoint
from keras_bert.checkpoints.mapping import Rule
from keras_bert.tasks.question_answering.config import QuestionAnswererConfig
from keras_bert.tasks.question_answering.model import QuestionAnswerer
from keras_bert.tasks.task_conversion import HeldModel, HFTaskHead, hf_task_model

# transformers' question-answering pipeline: max_seq_len, doc_stride, max_question_len.
SEQ_LENGTH, DOC_STRIDE, QUERY_LENGTH = 384, 128, 64
# Hugging Face's class: its start and end logits are `qa_outputs`, on a `bert` without pooler.
HF_HEAD = HFHead("BertForQuestionAnswering",
                 (Rule("head/kernel", "qa_outputs.weight", transpose=True),
                  Rule("head/bias", "qa_outputs.bias")), pooler=False)


def read_head(checkpoint) -> HeldModel | None:
    """The question answerer the opened `checkpoint` holds, or None."""
    if not (isinstance(checkpoint, HuggingFaceCheckpoint)
            and checkpoint.architecture == HF_HEAD.architecture):
        return None

    def build(dtype=None):
        config = QuestionAnswererConfig(max_query_length=QUERY_LENGTH, doc_stride=DOC_STRIDE)
        length = min(checkpoint.serving_length(), SEQ_LENGTH)
        return hf_task_model(checkpoint, HF_HEAD, QuestionAnswerer, config, None, length,
                             dtype)

    return HeldModel(QuestionAnswerer, build)


def hf_head(model, source: str) -> HFTaskHead:
    """`BertForQuestionAnswering` (its start and end logits: HF's `qa_outputs`)."""
    return HFTaskHead(HF_HEAD)
