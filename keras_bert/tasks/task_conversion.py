"""Task models from and to other checkpoint layouts: `convert` keeps a fine-tuned head (a
Hugging Face `BertFor*` task model, Model Garden's classifier) as the task model of its kind,
and `write_checkpoint` writes a task model back as Hugging Face's `BertFor*` model.

Which kind a checkpoint's head is, and with which settings, is the kind's own business: each
kind's folder has a `checkpoints.py` (named by its registry line, `registry.Kind.checkpoints`)
whose `read_head(checkpoint)` finds the model it holds (a `HeldModel`) and whose
`hf_head(model, source)` says which `BertFor*` class the model is (an `HFTaskHead`). This
module asks them and does what every kind shares: the encoder and head of a Hugging Face
checkpoint assigned in one check (`hf_task_model`), the model directory written once, the
weights and labels written for transformers. Everything else goes to
`keras_bert.checkpoints.conversion`.
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Callable

from keras_bert.checkpoints import conversion, hf_architectures
from keras_bert.checkpoints.formats import (
    HuggingFaceFormat,
    KerasBertFormat,
    detect_format,
    open_checkpoint,
)
from keras_bert.checkpoints.hub_ids import local_checkpoint
from keras_bert.checkpoints.model_dir import ModelDir
from keras_bert.checkpoints.opened import Checkpoint
from keras_bert.tasks.labels import LabelVocab
from keras_bert.tasks.registry import checkpoint_hooks, kind_of_class, task_class
from keras_bert.tasks.task_dir import read_task_dir, write_task_dir


@dataclasses.dataclass(frozen=True)
class HeldModel:
    """The fine-tuned model of one kind that an opened checkpoint holds, as that kind's hook
    found it: its class, and `build(dtype=None, **options)` -> `(model, provenance)`, the
    model with the checkpoint's weights (its encoder built once, computing in `dtype`) and
    what its model directory records. `options`: the conversion options `build` takes
    (`keras-bert convert --pair` is `pair`, a sequence classifier's)."""

    model_class: type
    build: Callable[..., tuple]
    options: tuple[str, ...] = ()


@dataclasses.dataclass(frozen=True)
class HFTaskHead:
    """How a task model goes to Hugging Face: its `BertFor*` class (its kind's `HF_HEAD`),
    sequence classification's `problem_type`, and the dropout before the head
    (`classifier_dropout`)."""

    head: hf_architectures.HFHead
    problem: str | None = None
    dropout: float | None = None


def held_model(checkpoint: Checkpoint) -> HeldModel | None:
    """The fine-tuned model of a kind that the opened `checkpoint` holds (each kind's hook is
    asked, `registry.checkpoint_hooks`), or None."""
    for hooks in checkpoint_hooks():
        held = hooks.read_head(checkpoint)
        if held is not None:
            return held
    return None


def hf_task_architectures() -> tuple[str, ...]:
    """The Hugging Face classes the kinds keep as their task models (their `HF_HEAD`s)."""
    return tuple(hooks.HF_HEAD.architecture for hooks in checkpoint_hooks())


def convert(src: str, dest: str, lower_case: bool | None = None, rules: str | None = None,
            encoder_only: bool = False, **options) -> ModelDir:
    """`keras_bert.checkpoints.convert`, except that a fine-tuned head (unless
    `encoder_only`) is kept as the task model of its kind. `options`: the kind's conversion
    options (`pair=True`: a sequence classifier reads text pairs)."""
    checkpoint = open_checkpoint(src, lower_case, rules)
    held = None if encoder_only else held_model(checkpoint)
    given = sorted(name for name, value in options.items() if value)
    unknown = [name for name in given if held is None or name not in held.options]
    if unknown:
        what = ("no fine-tuned head" if held is None
                else f"a {held.model_class.__name__}, which takes no such option")
        raise ValueError(f"{', '.join(unknown)}: {checkpoint.path} holds {what}"
                         + (" (converted encoder-only)" if encoder_only else ""))
    if held is None:
        if not encoder_only:  # a head no kind keeps, refused naming those the kinds keep
            checkpoint.refuse_unkept_heads(hf_task_architectures())
        return conversion.write_model_dir(checkpoint, dest, encoder_only)
    model, provenance = held.build(**{name: options[name] for name in given})
    return write_task_dir(model.network, model.preprocessor, dest, model._task_block(),
                          model.labels, provenance)


def hf_task_model(checkpoint, hf_head, model_class: type, config, labels: LabelVocab | None,
                  seq_length: int, dtype=None) -> tuple:
    """The `model_class` model (its kind's `config`, `labels`) of the opened Hugging Face
    task checkpoint of the class `hf_head` (its kind's `HF_HEAD`): the encoder built once in
    `dtype`, it and the head assigned in one check, the preprocessor at `seq_length`.
    Returns `(model, provenance)`."""
    from keras_bert.text.preprocessor import BertPreprocessor

    encoder = checkpoint.new_encoder(dtype)
    network = model_class._build_network(encoder, config, labels)
    provenance = checkpoint.assign(encoder, task_head_variables(network), hf_head)
    preprocessor = BertPreprocessor(checkpoint.tokenizer(), seq_length=seq_length)
    return model_class(network, preprocessor, labels, config), provenance


def hf_labels(checkpoint) -> LabelVocab:
    """The labels of a Hugging Face task checkpoint (`id2label` in id order)."""
    try:
        return LabelVocab(hf_architectures.hf_label_names(checkpoint.config))
    except ValueError as e:
        raise ValueError(f"{checkpoint.path}/config.json id2label: {e}") from None


def write_checkpoint(src: str, dest: str, to: str, lower_case: bool | None = None,
                     encoder_only: bool = False, approximate_gelu: bool = False) -> str:
    """`keras_bert.checkpoints.conversion.write_checkpoint`, except that a task model
    directory goes to Hugging Face (`to="huggingface"`) as the matching `BertFor*` model
    unless `encoder_only`."""
    src = local_checkpoint(src)
    if (to.replace("-", "_") == HuggingFaceFormat.name and not encoder_only
            and isinstance(detect_format(src), KerasBertFormat)):
        saved = read_task_dir(src)
        if "task" in saved.model_dir.metadata:  # a task model, not an encoder
            path = write_hf_task(task_class(saved.kind)._restore(saved), dest, lower_case, src)
            if path is not None:
                return path
    return conversion.write_checkpoint(src, dest, to, lower_case, encoder_only,
                                       approximate_gelu=approximate_gelu)


def write_hf_task(model, dest: str, lower_case: bool | None, src: str) -> str | None:
    """The task model `model` (loaded from `src`) as its `BertFor*` directory; None for a
    kind Hugging Face has no head for (an embedder: its encoder goes alone)."""
    hooks = kind_of_class(type(model)).checkpoint_hooks()
    head = None if hooks is None else hooks.hf_head(model, src)
    if head is None:
        return None
    arrays = {k: v.numpy() for k, v in task_head_variables(model.network).items()}
    width = arrays["head/bias"].shape[0]  # HF's num_labels: 2 for the start/end of QA
    names = model.labels.names if model.labels is not None else [
        f"LABEL_{i}" for i in range(width)]
    tokenizer = model.preprocessor.tokenizer
    return hf_architectures.write_hf_task_dir(
        dest, model.network.encoder, head.head, arrays, names,
        os.path.join(src, "vocab.txt"),
        tokenizer.lower_case if lower_case is None else lower_case,
        problem=head.problem, dropout=head.dropout)


def task_head_variables(network) -> dict:
    """The head's dense kernel and bias of a task network (`head/kernel`, `head/bias`)."""
    (layer,) = network.head_layers
    dense = getattr(layer, "dense", layer)
    return {"head/kernel": dense.kernel, "head/bias": dense.bias}
