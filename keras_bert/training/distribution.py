"""Choosing a Keras distribution on JAX: data parallel over the devices, or BERT's weights
sharded Megatron-style over a (batch x model) mesh.

`keras.distribution` is JAX's engine here, as `tf.distribute` is TensorFlow's
(`keras_bert.training.strategy`); nothing of ours all-reduces, places or launches:

- `get_distribution("data_parallel")`: Keras' `DataParallel` over every device
  `keras.distribution.list_devices()` reports (all processes' once
  `keras.distribution.initialize` has joined them: the plug-in point for many hosts). Each
  batch is split along its first axis; the variables are replicated; the gradients are
  averaged by the SPMD program XLA compiles.
- `get_distribution("model_parallel:N")`: `BertModelParallel` on a mesh of
  (devices / N) x N, axes `batch` and `model`, with `bert_layout_map`.
- `"auto"`: data parallel when more than one device is visible, else none; `"none"`: none.
- None: whatever Keras has (a user's own `keras.distribution.set_distribution(...)`), so a
  Keras user's way in and ours run the same program.

A model is built under its distribution (Keras lays each variable out as it creates it,
which is also what lets a model too large for one device load at all): the builders take
`distribution=` (`distributed_builder`) and `fit` runs in its scope
(`keras_bert.training.backends.distribution_scope`).

Imports Keras only (and JAX through it): the model code may import this module.
"""

from __future__ import annotations

import contextlib
import functools
import inspect
import re

import keras

BATCH_AXIS = "batch"
MODEL_AXIS = "model"
CHOICES = ("auto", "none", "data_parallel", "model_parallel:N")

# BERT's weights sharded over the `model` axis as Megatron-LM shards them (Shoeybi et al.
# 2019): the attention's query/key/value and the FFN's first kernel by columns (each device
# computes some heads / some intermediate units), the attention output and the FFN's second
# kernel by rows (their partial sums meet in one all-reduce per block). The word embeddings
# are sharded along the hidden axis rather than the vocabulary: BERT's vocabularies (30522,
# 28996, 119547 rows) do not divide by 4 or 8, its hidden sizes do. Keras matches each
# pattern against a variable's whole path (`re.fullmatch`); the optimizer's slots follow their
# variable's layout. Paths: `keras_bert.layers` (`transformer_layer_<i>/attention/query/...`).
_BLOCK = r"(?:.*/)?transformer_layer_\d+/"
BERT_LAYOUT = {
    r"(?:.*/)?embeddings/word_embeddings/embeddings": (None, MODEL_AXIS),
    _BLOCK + r"attention/(?:query|key|value)/kernel": (None, MODEL_AXIS),
    _BLOCK + r"attention/(?:query|key|value)/bias": (MODEL_AXIS,),
    _BLOCK + r"attention/output/kernel": (MODEL_AXIS, None),
    _BLOCK + r"intermediate/kernel": (None, MODEL_AXIS),
    _BLOCK + r"intermediate/bias": (MODEL_AXIS,),
    _BLOCK + r"output/kernel": (MODEL_AXIS, None),
}


def bert_layout_map(device_mesh) -> keras.distribution.LayoutMap:
    """`BERT_LAYOUT` on `device_mesh` (its axes include `model`): the `LayoutMap` a user may
    hand to Keras' own `ModelParallel`."""
    layout_map = keras.distribution.LayoutMap(device_mesh)
    for pattern, axes in BERT_LAYOUT.items():
        layout_map[pattern] = axes
    return layout_map


class BertModelParallel(keras.distribution.ModelParallel):
    """Keras' `ModelParallel` with `bert_layout_map`, whose layouts are checked as each
    variable is created: a weight whose sharded axis does not divide by the mesh axis is a
    `ValueError` naming it, before any of its values is placed (JAX's own error names
    neither the weight nor the axis)."""

    def __init__(self, device_mesh):
        super().__init__(layout_map=bert_layout_map(device_mesh), batch_dim_name=BATCH_AXIS)

    def get_variable_layout(self, variable):
        layout = super().get_variable_layout(variable)
        check_layout(variable.path, tuple(variable.shape), layout.axes,
                     dict(zip(self.device_mesh.axis_names, self.device_mesh.shape,
                              strict=True)))
        return layout


def check_layout(path: str, shape: tuple, axes, mesh: dict) -> None:
    """A `ValueError` when an axis of the weight `path` does not divide by the mesh axis
    (`mesh`: name -> size) it is sharded over."""
    for size, axis in zip(shape, axes, strict=False):
        if axis is not None and size % mesh[axis]:
            raise ValueError(f"the layout does not divide the weight {path} of shape "
                             f"{tuple(shape)}: {size} is not a multiple of the {axis!r} "
                             f"axis size {mesh[axis]}")


def get_distribution(choice=None):
    """The `keras.distribution.Distribution` `choice` names (see the module docstring; a
    `Distribution` is returned as it is), or None for none. Anything but None, `"none"`
    and `"auto"` needs Keras' JAX backend."""
    from keras_bert.backend import is_jax, name

    if choice is None:
        return keras.distribution.distribution()
    if hasattr(choice, "get_variable_layout"):  # Keras exports no `Distribution` base
        _require_jax(type(choice).__name__)
        return choice
    kind, model_size = parse(choice)
    if kind == "none" or (kind == "auto" and not is_jax()):
        return None
    if kind != "auto":
        _require_jax(choice)
    devices = keras.distribution.list_devices()
    if kind == "auto":
        return keras.distribution.DataParallel(devices=devices) if len(devices) > 1 else None
    if kind == "data_parallel":
        return keras.distribution.DataParallel(devices=devices)
    if len(devices) % model_size:
        raise ValueError(f"model_parallel:{model_size} needs a device count that divides by "
                         f"{model_size}; {len(devices)} devices are visible ({name()})")
    mesh = keras.distribution.DeviceMesh((len(devices) // model_size, model_size),
                                         (BATCH_AXIS, MODEL_AXIS), devices)
    return BertModelParallel(mesh)


def parse(choice: str) -> tuple[str, int]:
    """`(kind, model axis size)` of a choice string (`model_parallel:N`; 1 for the others);
    a `ValueError` for anything else. Imports nothing: the command line checks with it."""
    text = str(choice).strip().lower()
    if text in ("auto", "none", "data_parallel"):
        return text, 1
    found = re.fullmatch(r"model_parallel:(\d+)", text)
    if found is None or int(found.group(1)) < 1:
        raise ValueError(f"distribution must be one of {', '.join(CHOICES)} (N a positive "
                         f"number of devices), got {choice!r}")
    return "model_parallel", int(found.group(1))


def data_parallel_size(distribution) -> int:
    """How many ways `distribution` splits each batch (its mesh's batch axis; 1 for none)."""
    if distribution is None:
        return 1
    mesh = distribution.device_mesh
    return int(mesh.shape[list(mesh.axis_names).index(distribution.batch_dim_name)])


def check_batch_size(distribution, batch_size: int) -> None:
    """A `ValueError` naming both numbers when a global batch of `batch_size` does not
    split evenly across `distribution`'s data-parallel devices."""
    ways = data_parallel_size(distribution)
    if int(batch_size) % ways:
        raise ValueError(f"a global batch of {int(batch_size)} does not split across "
                         f"{ways} data-parallel devices: choose a batch size that is a "
                         f"multiple of {ways}")


def built_in(choice, build):
    """The model `build()` returns, built in the scope of the distribution `choice` names
    (`get_distribution`), so that Keras lays its variables out as it creates them; the
    model keeps that distribution (`distribution` attribute, None where `choice` is None:
    Keras' own then applies) for `fit`."""
    chosen = get_distribution(choice)
    with chosen.scope() if chosen is not None else contextlib.nullcontext():
        model = build()
    model.distribution = chosen if choice is not None else None
    return model


def distributed_builder(builder):
    """A classmethod body taking `distribution=` (a `get_distribution` choice; None: Keras'
    own, if any): the model is built in that distribution's scope, so Keras lays its
    variables out as it creates them, and keeps it (`distribution` attribute) for `fit`."""

    @functools.wraps(builder)
    def build(cls, *args, distribution=None, **kwargs):
        return built_in(distribution, lambda: builder(cls, *args, **kwargs))

    # The signature `help()` shows: the builder's, with `distribution` before any **kwargs.
    signature = inspect.signature(builder)
    extra = inspect.Parameter("distribution", inspect.Parameter.KEYWORD_ONLY, default=None)
    parameters = list(signature.parameters.values())
    at = len(parameters) - (parameters[-1].kind is inspect.Parameter.VAR_KEYWORD)
    build.__signature__ = signature.replace(parameters=[*parameters[:at], extra,
                                                        *parameters[at:]])
    return build


@contextlib.contextmanager
def undistributed():
    """No Keras distribution inside (the one outside restored after): evaluation and
    prediction feed their batches whole, a last partial batch included, which a
    data-parallel split refuses; the variables keep their layouts, and XLA computes with
    them where they lie."""
    before = keras.distribution.distribution()
    keras.distribution.set_distribution(None)
    try:
        yield
    finally:
        keras.distribution.set_distribution(before)


def _require_jax(what: str) -> None:
    from keras_bert.backend import is_jax, name

    if not is_jax():
        raise ValueError(f"distribution {what!r} is Keras' JAX distribution API; this process "
                         f"runs {name()!r} (on TensorFlow, a tf.distribute strategy: "
                         "keras_bert.training.get_strategy)")


__all__ = ["BERT_LAYOUT", "BertModelParallel", "CHOICES", "bert_layout_map", "built_in",
           "check_batch_size", "check_layout", "data_parallel_size", "distributed_builder",
           "get_distribution", "parse", "undistributed"]
