"""Checkpoints that carry a fine-tuned head: `convert` keeps a Hugging Face `BertFor*` task
model as the task model of its kind, and `write_checkpoint` writes a task model back as one.

| Hugging Face                        | keras_bert                                         |
| ----------------------------------- | -------------------------------------------------- |
| `BertForSequenceClassification`     | `TextClassifier`, `TextRegressor` or `MultiLabelClassifier`, by `problem_type` |
| `BertForTokenClassification`        | `TokenClassifier`                                  |
| `BertForQuestionAnswering`          | `QuestionAnswerer`                                 |

Sequence classification by `problem_type`: `regression` (or none, with one label),
`multi_label_classification` (thresholds 0.5), `single_label_classification` (or none, with
several labels); HF's pooler + dropout + `classifier` is `BertClassifier(pooling="pooled")`.
Labels: `id2label` in id order (HF's `LABEL_0`... kept when that is all there is). The
training length recorded (the default serving truncation; `export --seq-length` /
`--max-length` override it) is the least of the tokenizer's `model_max_length`,
`max_position_embeddings` and 512; question answering at most 384, with `doc_stride` 128,
`max_query_length` 64 and always an answer: the defaults of transformers' question-answering
pipeline. The registry (`registry.KINDS`) says which kind each architecture is; each model
is built by its own class and saved by its `save`. Everything else goes to
`keras_bert.checkpoints.conversion`.
"""

from __future__ import annotations

import os

from keras_bert.checkpoints import conversion, hf_architectures
from keras_bert.checkpoints.formats import (
    HuggingFaceFormat,
    KerasBertFormat,
    ModelGardenFormat,
    detect_format,
)
from keras_bert.checkpoints.hub_ids import local_checkpoint
from keras_bert.checkpoints.model_dir import ModelDir, load_model_dir
from keras_bert.config import BertConfig, default_doc_stride
from keras_bert.tasks.labels import LabelVocab
from keras_bert.tasks.registry import hf_kind, kind_of_class, task_class
from keras_bert.tasks.task_dir import read_task_dir

QA_SEQ_LENGTH, QA_STRIDE, QA_QUERY_LENGTH = 384, 128, 64


def convert(src: str, dest: str, lower_case: bool | None = None, rules: str | None = None,
            encoder_only: bool = False, pair: bool = False) -> ModelDir:
    """`keras_bert.checkpoints.convert`, except that a Hugging Face task model keeps its
    head (unless `encoder_only`) as the task model of its kind (`pair`: its sequence
    classifier reads text pairs)."""
    src = local_checkpoint(src)
    fmt = detect_format(src)
    if isinstance(fmt, ModelGardenFormat) and not encoder_only:
        vocab_file, found = fmt.vocab(src)
        converted = convert_model_garden_classifier(
            src, dest, vocab_file, found if lower_case is None else lower_case,
            rules or fmt.rules(src), pair)
        if converted is not None:
            return converted
    if isinstance(fmt, HuggingFaceFormat) and not encoder_only:
        config = hf_architectures.read_hf_config(src)
        if hf_architectures.architecture(config) in hf_architectures.TASK_ARCHITECTURES:
            vocab_file, found = fmt.vocab(src)
            return convert_hf_task(src, dest, vocab_file,
                                   found if lower_case is None else lower_case,
                                   rules or fmt.rules(src), pair)
    return conversion.convert(src, dest, lower_case, rules, encoder_only, pair)


def convert_hf_task(src: str, dest: str, vocab_file: str, lower_case: bool, rules: str,
                    pair: bool = False) -> ModelDir:
    """The HF task model `src` as the model directory of its kind's model (see the module
    docstring)."""
    from keras_bert.models.encoder import BertEncoder
    from keras_bert.text.preprocessor import BertPreprocessor
    from keras_bert.text.tokenizer import BertTokenizer

    config = hf_architectures.read_hf_config(src)
    arch = hf_architectures.architecture(config)
    length = hf_architectures.serving_length(src, config)
    names = hf_architectures.hf_label_names(config)
    problem = None
    if arch == hf_architectures.SEQUENCE:
        problem = config.get("problem_type") or (
            "regression" if len(names) == 1 else "single_label_classification")
    kind = hf_kind(arch, problem)
    if kind is None:
        raise ValueError(f"{src}/config.json: unknown problem_type {problem!r}")
    if pair and arch != hf_architectures.SEQUENCE:
        raise ValueError(f"pairs (--pair) are read by sequence classifiers; {src} is a {arch}")
    model_class = kind.model_class()
    labels = _labels(src, names) if model_class.labelled else None
    if not model_class.labelled and arch == hf_architectures.SEQUENCE and len(names) != 1:
        raise ValueError(f"{src}: a regression head with {len(names)} outputs; keras_bert "
                         "regresses one score")
    dropout = config.get("classifier_dropout")
    dropout = float(config.get("hidden_dropout_prob", 0.1) if dropout is None else dropout)
    settings = {hf_architectures.SEQUENCE: dict(pair=bool(pair), pooling="pooled",
                                             dropout=dropout),
                hf_architectures.TOKEN: dict(doc_stride=default_doc_stride(length),
                                          dropout=dropout),
                hf_architectures.QA: dict(max_query_length=QA_QUERY_LENGTH,
                                       doc_stride=QA_STRIDE)}[arch]
    if arch == hf_architectures.QA:
        length = min(length, QA_SEQ_LENGTH)
    task_config = model_class.config_class(**settings)
    encoder = BertEncoder(BertConfig.from_hf_dict(config))
    network = model_class._build_network(encoder, task_config, labels)
    metadata = hf_architectures.load_hf_weights(src, encoder, task_head_variables(network))
    preprocessor = BertPreprocessor(BertTokenizer(vocab_file, lower_case=lower_case,
                                                  rules=rules), seq_length=length)
    model = model_class(network, preprocessor, labels, task_config)
    return load_model_dir(model.save(dest, metadata=metadata))


def convert_model_garden_classifier(src: str, dest: str, vocab_file: str, lower_case: bool,
                                    rules: str, pair: bool = False) -> ModelDir | None:
    """The fine-tuned Model Garden `BertClassifier` checkpoint in `src` as the model
    directory of a sequence classifier on the pooled output (labels `LABEL_0`...: the
    checkpoint names none; serving length: the position table's, at most 512); None when
    the checkpoint holds no classifier head."""
    from keras_bert.checkpoints import model_garden
    from keras_bert.checkpoints.mapping import assign_checked
    from keras_bert.text.preprocessor import BertPreprocessor
    from keras_bert.text.tokenizer import BertTokenizer

    prefix = model_garden.checkpoint_prefix(src)
    named = model_garden.read_named(prefix)
    head = model_garden.classifier_head(named, f"checkpoint {prefix}")
    if head is None:
        return None
    encoder = model_garden.load_named_encoder(named, f"checkpoint {prefix}",
                                              model_garden.config_activation(src))
    kind = hf_kind(hf_architectures.SEQUENCE, "single_label_classification")
    model_class = kind.model_class()
    labels = LabelVocab([f"LABEL_{i}" for i in range(head["head/bias"].shape[0])])
    task_config = model_class.config_class(pair=bool(pair), pooling="pooled")
    network = model_class._build_network(encoder, task_config, labels)
    assign_checked(task_head_variables(network), head, source=f"checkpoint {prefix}")
    length = min(512, encoder.config.max_position_embeddings)
    preprocessor = BertPreprocessor(BertTokenizer(vocab_file, lower_case=lower_case,
                                                  rules=rules), seq_length=length)
    model = model_class(network, preprocessor, labels, task_config)
    return load_model_dir(model.save(dest, metadata={
        "converted_from": os.path.abspath(src), "format": ModelGardenFormat.name}))


def write_checkpoint(src: str, dest: str, to: str, lower_case: bool | None = None,
                     encoder_only: bool = False) -> str:
    """`keras_bert.checkpoints.conversion.write_checkpoint`, except that a task model
    directory goes to Hugging Face (`to="huggingface"`) as the matching `BertFor*` model
    unless `encoder_only`."""
    src = local_checkpoint(src)
    source = detect_format(src)
    if (to.replace("-", "_") == HuggingFaceFormat.name and not encoder_only
            and isinstance(source, KerasBertFormat)
            and "task" in load_model_dir(src).metadata):  # a task model, not an encoder
        saved = read_task_dir(src)
        path = write_hf_task(task_class(saved.kind)._restore(saved), dest, lower_case, src)
        if path is not None:
            return path
    return conversion.write_checkpoint(src, dest, to, lower_case, encoder_only)


def write_hf_task(model, dest: str, lower_case: bool | None, src: str) -> str | None:
    """The task model `model` (loaded from `src`) as its `BertFor*` directory; None for a
    kind Hugging Face has no head for (an embedder: its encoder goes alone)."""
    kind = kind_of_class(type(model))
    if kind.hf_architecture is None:
        return None
    if getattr(model.network, "pooling", "pooled") != "pooled":
        raise ValueError(f"{src}: a {type(model).__name__} on {model.network.pooling} pooling "
                         f"has no {kind.hf_architecture} equivalent (it classifies the "
                         "pooler's output); pass --encoder-only to write the encoder alone")
    head = {k: v.numpy() for k, v in task_head_variables(model.network).items()}
    width = head["head/bias"].shape[0]  # HF's num_labels: 2 for the start/end of QA
    names = model.labels.names if model.labels is not None else [
        f"LABEL_{i}" for i in range(width)]
    tokenizer = model.preprocessor.tokenizer
    return hf_architectures.write_hf_task_dir(
        dest, model.network.encoder, kind.hf_architecture, head, names,
        os.path.join(src, "vocab.txt"),
        tokenizer.lower_case if lower_case is None else lower_case,
        problem=kind.hf_problem, dropout=getattr(model.config, "dropout", None))


def task_head_variables(network) -> dict:
    """The head's dense kernel and bias of a task network (`head/kernel`, `head/bias`)."""
    (layer,) = network.head_layers
    dense = getattr(layer, "dense", layer)
    return {"head/kernel": dense.kernel, "head/bias": dense.bias}


def _labels(src: str, names: list[str]) -> LabelVocab:
    try:
        return LabelVocab(names)
    except ValueError as e:
        raise ValueError(f"{src}/config.json id2label: {e}") from None
