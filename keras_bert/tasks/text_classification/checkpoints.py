"""The text-classification kinds in other checkpoint layouts (this folder's hook, named by
its registry lines: `registry.Kind.checkpoints`).

* Hugging Face `BertForSequenceClassification`: read as `TextClassifier`, `TextRegressor` or
  `MultiLabelClassifier`, by `problem_type`;
* Model Garden's fine-tuned `BertClassifier`: read as `TextClassifier`.

`problem_type`: `regression` (or none, with one label), `multi_label_classification`
(thresholds 0.5), `single_label_classification` (or none, with several labels). Hugging
Face's pooler + dropout (`classifier_dropout`) + `classifier` is `BertClassifier(pooling=
"pooled")`; its labels are `id2label` in id order (its `LABEL_0`... kept when that is all
there is); the training length recorded (the default serving truncation) is
`hf_architectures.serving_length`. Model Garden's classifier names no labels (`LABEL_0`...);
its length is the position table's, at most 512. `--pair` (`pair=True`): the classifier
reads text pairs. Back to Hugging Face (`hf_head`), a classifier on the pooler's output is
`BertForSequenceClassification` with its `problem_type`.
"""

from __future__ import annotations

from keras_bert.checkpoints.hf_architectures import (
    HFHead,
    HuggingFaceCheckpoint,
    classifier_dropout,
    hf_label_names,
)
from keras_bert.checkpoints.mapping import Rule, assign_checked
from keras_bert.checkpoints.opened import ModelGardenCheckpoint
from keras_bert.tasks.labels import LabelVocab
from keras_bert.tasks.task_conversion import (
    HeldModel,
    HFTaskHead,
    hf_labels,
    hf_task_model,
    task_head_variables,
)
from keras_bert.tasks.text_classification.model import TextClassifier, TextRegressor
from keras_bert.tasks.text_classification.multilabel import MultiLabelClassifier

# Hugging Face's class: its head is `classifier`, on the pooler's output.
HF_HEAD = HFHead("BertForSequenceClassification",
                 (Rule("head/kernel", "classifier.weight", transpose=True),
                  Rule("head/bias", "classifier.bias")), pooler=True)
# Hugging Face's `problem_type` -> the class of its kind.
PROBLEM_TYPES = {"single_label_classification": TextClassifier,
                 "regression": TextRegressor,
                 "multi_label_classification": MultiLabelClassifier}
# Our head's names -> Model Garden's `BertClassifier` head (its default: a dense layer on the
# encoder's pooled output, after dropout).
MODEL_GARDEN_HEAD = {"head/kernel": "sentence_prediction/logits/kernel",
                     "head/bias": "sentence_prediction/logits/bias"}
MAX_SEQ_LENGTH = 512


def read_head(checkpoint) -> HeldModel | None:
    """The classifier (or regressor) the opened `checkpoint` holds, or None."""
    if (isinstance(checkpoint, HuggingFaceCheckpoint)
            and checkpoint.architecture == HF_HEAD.architecture):
        return _hugging_face(checkpoint)
    if isinstance(checkpoint, ModelGardenCheckpoint):
        return _model_garden(checkpoint)
    return None


def _hugging_face(checkpoint: HuggingFaceCheckpoint) -> HeldModel:
    config = checkpoint.config
    names = hf_label_names(config)
    problem = config.get("problem_type") or (
        "regression" if len(names) == 1 else "single_label_classification")
    if problem not in PROBLEM_TYPES:
        raise ValueError(f"{checkpoint.path}/config.json: unknown problem_type {problem!r}")
    model_class = PROBLEM_TYPES[problem]
    if not model_class.labelled and len(names) != 1:
        raise ValueError(f"{checkpoint.path}: a regression head with {len(names)} outputs; "
                         "keras_bert regresses one score")
    labels = hf_labels(checkpoint) if model_class.labelled else None
    dropout = classifier_dropout(config)

    def build(dtype=None, pair: bool = False):
        settings = model_class.config_class(pair=bool(pair), pooling="pooled", dropout=dropout)
        return hf_task_model(checkpoint, HF_HEAD, model_class, settings, labels,
                             checkpoint.serving_length(), dtype)

    return HeldModel(model_class, build, options=("pair",))


def _model_garden(checkpoint: ModelGardenCheckpoint) -> HeldModel | None:
    named, source = checkpoint.named, f"checkpoint {checkpoint.path}"
    if MODEL_GARDEN_HEAD["head/kernel"] not in named:
        return None
    other = sorted(n for n in named if n.startswith("sentence_prediction/")
                   and n not in MODEL_GARDEN_HEAD.values())
    if other:
        raise ValueError(f"{source}: the classifier head holds {other[0]} (a head with an "
                         f"inner dense layer, BertClassifier(use_encoder_pooler=False)); "
                         f"keras_bert's classifiers read the pooler's output: pass "
                         f"--encoder-only to convert the encoder alone")
    head = {ours: named[theirs] for ours, theirs in MODEL_GARDEN_HEAD.items()}
    labels = LabelVocab([f"LABEL_{i}" for i in range(head["head/bias"].shape[0])])

    def build(dtype=None, pair: bool = False):
        from keras_bert.text.preprocessor import BertPreprocessor

        encoder = checkpoint.load_encoder(dtype)
        settings = TextClassifier.config_class(pair=bool(pair), pooling="pooled")
        network = TextClassifier._build_network(encoder, settings, labels)
        assign_checked(task_head_variables(network), head, source=source)
        length = min(MAX_SEQ_LENGTH, encoder.config.max_position_embeddings)
        preprocessor = BertPreprocessor(checkpoint.tokenizer(), seq_length=length)
        return (TextClassifier(network, preprocessor, labels, settings),
                checkpoint.provenance)

    return HeldModel(TextClassifier, build, options=("pair",))


def hf_head(model, source: str) -> HFTaskHead:
    """`BertForSequenceClassification` with the model's `problem_type`; a model on another
    pooling than the pooler's output has no equivalent there (a `ValueError`)."""
    if model.network.pooling != "pooled":
        raise ValueError(f"{source}: a {type(model).__name__} on {model.network.pooling} "
                         f"pooling has no {HF_HEAD.architecture} equivalent (it classifies "
                         "the pooler's output); pass --encoder-only to write the encoder alone")
    (problem,) = [name for name, cls in PROBLEM_TYPES.items() if cls is type(model)]
    return HFTaskHead(HF_HEAD, problem, model.config.dropout)
