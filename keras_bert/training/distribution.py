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

Many hosts: `initialize_hosts` joins this process to the others (`keras.distribution.initialize`,
`jax.distributed` under it) before any device is touched; `list_devices()` then reports every
process's devices, and Keras' `distribute_dataset` gives each process its slice of every
global batch.

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
import math
import os
import re
import sys
import time

import keras

BATCH_AXIS = "batch"
MODEL_AXIS = "model"
CHOICES = ("auto", "none", "data_parallel", "model_parallel:N")
# What Keras' `initialize` reads when an argument is not given (JAX reads its own too, and
# detects Slurm, Open MPI and TPU pods).
HOST_VARIABLES = {"coordinator": "KERAS_DISTRIBUTION_JOB_ADDRESSES",
                  "num_processes": "KERAS_DISTRIBUTION_NUM_PROCESSES",
                  "process_id": "KERAS_DISTRIBUTION_PROCESS_ID"}
HOSTS_TIMEOUT = 300  # seconds: jax.distributed.initialize's own default

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
    _check_model_axis_within_process(model_size)
    mesh = keras.distribution.DeviceMesh((len(devices) // model_size, model_size),
                                         (BATCH_AXIS, MODEL_AXIS), devices)
    return BertModelParallel(mesh)


def _check_model_axis_within_process(model_size: int) -> None:
    """A `ValueError` when, under many processes, a model axis of `model_size` devices
    would span processes: the mesh groups each process's devices in order, so its model
    axis stays within one process only where the process's devices divide by it. Process
    0 writes the checkpoints and the model, and holds every shard of them only then (as
    Megatron keeps its tensor-parallel groups within a node, on its fastest links)."""
    import jax

    local = jax.local_device_count()
    if jax.process_count() > 1 and local % model_size:
        raise ValueError(f"model_parallel:{model_size} would split weights across processes:"
                         f" each of the {jax.process_count()} processes has {local} devices;"
                         f" choose a model axis that divides {local} (data parallel spans "
                         "the processes)")


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


def process_count() -> int:
    """How many processes train together: JAX's processes once `keras.distribution.initialize`
    has joined them (`initialize_hosts`); 1 elsewhere (TensorFlow's workers split their
    batches themselves)."""
    from keras_bert.backend import is_jax

    if not is_jax():
        return 1
    import jax

    return jax.process_count()


def evaluation_scope(fit_batches: bool):
    """Where `evaluate` runs: outside the distribution (`undistributed`), except on the
    batches `fit` hands it under many processes: there Keras has given this process its
    slice of each (whole) validation batch, which only the distribution joins into the
    global batch (undistributed, each process would score its slice alone and log that)."""
    if fit_batches and process_count() > 1:
        return contextlib.nullcontext()
    return undistributed()


def hosts_requested(coordinator=None, num_processes=None, process_id=None) -> bool:
    """Whether a multi-process run is asked for: by an argument or by one of Keras'
    `HOST_VARIABLES` (the jobs join only then; a Slurm or TPU pod run that leaves all of
    them to JAX's detection calls `initialize_hosts()` itself)."""
    given = (coordinator, num_processes, process_id)
    return any(v is not None for v in given) or any(v in os.environ
                                                    for v in HOST_VARIABLES.values())


def initialize_hosts(coordinator: str | None = None, num_processes: int | None = None,
                     process_id: int | None = None, timeout: float = HOSTS_TIMEOUT):
    """Joins this process to a multi-process JAX run with `keras.distribution.initialize`
    (`jax.distributed.initialize` under it), before anything touches a device; returns
    `(this process's index, the number of processes)`.

    `coordinator`: process 0's `HOST:PORT` (Keras' comma-separated job addresses also do:
    the first is the coordinator); `num_processes`; `process_id` in `0..num_processes-1`.
    Each not given is read from Keras' `HOST_VARIABLES`, then left to JAX's detection
    (Slurm, Open MPI, TPU pods). A coordinator that does not answer within `timeout`
    seconds ends in a `TimeoutError` naming it (a process other than 0 first waits for
    the coordinator's port to open; the wait for the others is JAX's
    `initialization_timeout`, at whose end JAX stops the process itself). Once
    joined, a second call changes nothing and returns the same.
    """
    coordinator, num_processes, process_id = _host_settings(coordinator, num_processes,
                                                            process_id)
    if float(timeout) <= 0:
        raise ValueError(f"timeout must be a positive number of seconds, got {timeout}")
    from keras_bert.backend import is_jax, name

    if not is_jax():
        raise ValueError(f"many hosts are Keras' JAX distribution (keras.distribution."
                         f"initialize); this process runs {name()!r}: set KERAS_BACKEND=jax "
                         "(on TensorFlow: keras-bert pretrain --strategy multi_worker)")
    import jax

    if jax.distributed.is_initialized():
        return jax.process_index(), jax.process_count()
    deadline = time.monotonic() + float(timeout)
    if coordinator is not None and process_id not in (None, 0):
        _wait_for_coordinator(coordinator, deadline, process_id)
    # JAX ends the process (no exception) when its own wait runs out: this line says what
    # it was waiting for.
    where = coordinator or "the coordinator JAX detects"
    print(f"joining {num_processes or 'the'} processes at {where} as process {process_id} "
          f"(up to {timeout} s)", file=sys.stderr, flush=True)
    with _initialization_timeout(max(1, math.ceil(deadline - time.monotonic()))):
        keras.distribution.initialize(coordinator, num_processes, process_id)
    return jax.process_index(), jax.process_count()


def _host_settings(coordinator, num_processes, process_id) -> tuple:
    """The arguments, each missing one from its `HOST_VARIABLES` entry, checked: a
    `ValueError` names a bad one."""
    values = {"coordinator": coordinator, "num_processes": num_processes,
              "process_id": process_id}
    for key, variable in HOST_VARIABLES.items():
        if values[key] is None and os.environ.get(variable):
            values[key] = os.environ[variable]
    for key in ("num_processes", "process_id"):
        if values[key] is not None:
            try:
                values[key] = int(values[key])
            except ValueError:
                raise ValueError(f"{key} must be a whole number, got {values[key]!r} "
                                 f"(argument or {HOST_VARIABLES[key]})") from None
    coordinator, num_processes, process_id = values.values()
    if num_processes is not None and num_processes < 1:
        raise ValueError(f"num_processes must be at least 1, got {num_processes}")
    if process_id is not None and (process_id < 0 or (num_processes is not None
                                                      and process_id >= num_processes)):
        upper = "" if num_processes is None else f" for {num_processes} processes"
        highest = "" if num_processes is None else str(num_processes - 1)
        raise ValueError(f"process_id must be in 0..{highest}{upper}, got {process_id}")
    if coordinator is not None:
        first = str(coordinator).split(",")[0].strip()
        host, _, port = first.rpartition(":")
        if not host or not port.isdigit():
            raise ValueError(f"coordinator must be HOST:PORT (process 0's address and a port "
                             f"free there), got {coordinator!r}")
    return coordinator, num_processes, process_id


def _wait_for_coordinator(coordinator: str, deadline: float, process_id: int) -> None:
    """Returns once the coordinator's port accepts a connection (process 0 may start after
    this one); a `TimeoutError` naming it at `deadline`. JAX's own wait for an absent
    coordinator ends the process with a C++ check failure, which Python cannot catch."""
    import socket

    host, _, port = coordinator.split(",")[0].strip().rpartition(":")
    while True:
        try:
            with socket.create_connection((host.strip("[]"), int(port)), timeout=2.0):
                return
        except OSError as error:
            if time.monotonic() >= deadline:
                raise TimeoutError(f"no coordinator answered at {coordinator} (process "
                                   f"{process_id} waited until its timeout): is process 0 "
                                   f"running there, and is the port reachable? ({error})"
                                   ) from None
        time.sleep(0.5)


@contextlib.contextmanager
def _initialization_timeout(seconds: int):
    """`jax.distributed.initialize` bound to wait `seconds` for the coordinator while
    Keras' `initialize` calls it: Keras 3 forwards no timeout, and JAX's own default
    (300 s) is the only bound on a coordinator that never answers."""
    import jax

    join = jax.distributed.initialize
    jax.distributed.initialize = functools.partial(join, initialization_timeout=seconds)
    try:
        yield
    finally:
        jax.distributed.initialize = join


def _require_jax(what: str) -> None:
    from keras_bert.backend import is_jax, name

    if not is_jax():
        raise ValueError(f"distribution {what!r} is Keras' JAX distribution API; this process "
                         f"runs {name()!r} (on TensorFlow, a tf.distribute strategy: "
                         "keras_bert.training.get_strategy)")


__all__ = ["BERT_LAYOUT", "BertModelParallel", "CHOICES", "HOST_VARIABLES", "HOSTS_TIMEOUT",
           "bert_layout_map", "built_in", "evaluation_scope",
           "check_batch_size", "check_layout", "data_parallel_size", "distributed_builder",
           "get_distribution", "hosts_requested", "initialize_hosts", "parse", "process_count",
           "undistributed"]
