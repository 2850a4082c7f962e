"""What the training code asks of the Keras backend, in one place.

The networks, heads, optimizers, losses and metrics are `keras.ops` code and run on any
Keras backend. A few training questions have a backend's own answer: the distribution scope
variables are created in, how many replicas share a batch, which process writes
checkpoints, which devices this process computes on, and whether `fit` compiles its step
with XLA. Each is answered here, importing TensorFlow or JAX only when that backend is the
one Keras runs, so that `keras_bert.models` and the training loop on token ids import with
`keras` and `jax` alone (an accelerator image without TensorFlow).

TensorFlow is the package's default backend and its only export path; JAX trains
(`KERAS_BACKEND=jax`); the torch backend runs the networks and `fit` on ids, untested
beyond that (docs/backends.md).
"""

from __future__ import annotations

import contextlib
import dataclasses

from keras_bert.backend import is_tensorflow, name

# Which backend runs is `keras_bert.backend`'s answer (`name`, `is_tensorflow`, used here
# and offered to the training code from here); TensorFlow and JAX are imported inside the
# functions, only where they are the backend.


def require_tensorflow(what: str) -> None:
    """A `RuntimeError` naming `what` when Keras runs another backend than TensorFlow."""
    if not is_tensorflow():
        raise RuntimeError(
            f"{what} needs Keras' TensorFlow backend (this process runs {name()!r}): save "
            "the model, then load it in a process with KERAS_BACKEND=tensorflow (the "
            "default) and do it there")


def distribution_scope(model):
    """The scope `model`'s variables (and its optimizer's) are created and trained in: its
    `tf.distribute` strategy's on TensorFlow; on JAX its `keras.distribution`'s
    (`model_distribution`), none without one."""
    if is_tensorflow():
        return model.distribute_strategy.scope()
    distribution = model_distribution(model)
    return distribution.scope() if distribution is not None else contextlib.nullcontext()


def model_distribution(model):
    """The `keras.distribution.Distribution` `model` trains under on JAX: the one it was
    built with (`distribution=`, `keras_bert.training.distribution`), else Keras' global
    one (a user's `keras.distribution.set_distribution`), else None; None on other
    backends, whose distribution is `tf.distribute`'s."""
    if name() != "jax":
        return None
    import keras

    return getattr(model, "distribution", None) or keras.distribution.distribution()


def batch_splits(model) -> int:
    """How many ways each global batch of `model`'s `fit` is split across devices (JAX's
    data-parallel axis; 1 elsewhere: TensorFlow's strategies split a batch themselves and
    take a short one)."""
    from keras_bert.training.distribution import data_parallel_size

    return data_parallel_size(model_distribution(model))


def check_batch_size(model, batch_size: int) -> None:
    """A `ValueError` naming both numbers when `batch_size` does not split evenly across
    `model`'s data-parallel devices (`batch_splits`), raised before any work."""
    from keras_bert.training.distribution import check_batch_size as check

    check(model_distribution(model), batch_size)


def replicas_in_sync() -> int:
    """How many replicas share each batch (TensorFlow's strategy in scope; 1 elsewhere:
    under a JAX `keras.distribution` the loss is one program's over the global batch, and
    XLA's SPMD partitioning averages the gradients)."""
    if is_tensorflow():
        import tensorflow as tf

        return tf.distribute.get_strategy().num_replicas_in_sync
    return 1


def global_mean(total, count):
    """A replica's share of the mean over the whole global batch of a loss that sums to
    `total` over this replica's `count` elements (rows, labelled tokens), as Keras' `fit`
    takes a replica's loss under a `tf.distribute` strategy of several replicas.

    Keras averages each replica's loss over its own elements and sums the replicas'
    gradients: the global mean only when every replica holds as many elements, which a
    partial batch or a count of labelled tokens breaks. Here the gradient is
    `d total / N` (N: every replica's elements; their sum over replicas is the global
    mean's) and the value is `global mean / replicas` (Keras' logs multiply it back and
    weigh the replicas by their rows). Call it with several replicas in sync only."""
    import tensorflow as tf

    context = tf.distribute.get_replica_context()
    total, count = tf.cast(total, tf.float32), tf.cast(count, tf.float32)
    replicas = tf.distribute.get_strategy().num_replicas_in_sync
    if context is None:  # cross-replica: Keras building the metrics, shapes only
        return tf.math.divide_no_nan(total, count) / replicas
    # One reduction each: a count from a shape lives on the host, a total on the device.
    all_total, all_count = (context.all_reduce(tf.distribute.ReduceOp.SUM, v)
                            for v in (total, count))
    share = tf.math.divide_no_nan(total, all_count)
    value = tf.math.divide_no_nan(all_total, all_count) / replicas
    return share + tf.stop_gradient(value - share)


def gather_replicas(value):
    """`value` (rows first) of every replica in sync, in replica order, and where this
    replica's rows start among them: in-batch negatives over the whole global batch. The
    gradient reaching each replica's rows is summed over the replicas that used them."""
    import tensorflow as tf

    context = tf.distribute.get_replica_context()
    if context is None:  # cross-replica: Keras building the metrics, shapes only
        return value, 0
    rows = tf.shape(value)[:1]
    gathered, counts = (context.all_gather(v, axis=0) for v in (value, rows))
    start = tf.reduce_sum(counts[:context.replica_id_in_sync_group])
    return gathered, start


def static_batches(model) -> bool:
    """Whether `fit` must feed batches of one shape (the last, partial one dropped): under
    a `TPUStrategy`, which compiles one program per shape. Elsewhere a partial batch costs
    one more compilation (XLA, JAX) and keeps every example."""
    if not is_tensorflow():
        return False
    import tensorflow as tf

    return isinstance(model.distribute_strategy, tf.distribute.TPUStrategy)


def is_chief() -> bool:
    """Whether this process writes checkpoints (the chief worker under multi-worker
    training; process 0 of a multi-host JAX run; always in a single process)."""
    if is_tensorflow():
        import tensorflow as tf

        return bool(tf.distribute.get_strategy().extended.should_checkpoint)
    if name() == "jax":
        import jax

        return jax.process_index() == 0
    return True


@dataclasses.dataclass(frozen=True)
class Devices:
    """The accelerators this process computes on, as its backend reports them.

    `tpus`: TPU cores; `gpus`: the compute capability `(major, minor)` of each GPU
    (`(0, 0)` where the backend does not say); `cpu_flags`: the host CPU's feature flags
    (`/proc/cpuinfo`; AMX shows as `amx_bf16`)."""

    tpus: int
    gpus: tuple[tuple[int, int], ...]
    cpu_flags: frozenset[str]

    @property
    def kind(self) -> str:
        """The device class the defaults are chosen for: `tpu`, `gpu`, `cpu_amx` or `cpu`."""
        if self.tpus:
            return "tpu"
        if self.gpus:
            return "gpu"
        return "cpu_amx" if "amx_bf16" in self.cpu_flags else "cpu"


def cpu_flags(path: str = "/proc/cpuinfo") -> set[str]:
    """The CPU's feature flags (Linux), or an empty set where they cannot be read."""
    try:
        with open(path, encoding="utf-8", errors="replace") as f:
            for line in f:
                if line.startswith("flags"):
                    return set(line.split(":", 1)[1].split())
    except OSError:
        pass
    return set()


def devices() -> Devices:
    """The `Devices` of this process, read through the running backend's own API."""
    tpus, gpus = 0, []
    if is_tensorflow():
        import tensorflow as tf

        for gpu in tf.config.list_physical_devices("GPU"):
            capability = tf.config.experimental.get_device_details(gpu).get(
                "compute_capability")
            gpus.append(tuple(capability) if capability else (0, 0))
        tpus = len(tf.config.list_logical_devices("TPU"))
    elif name() == "jax":
        import jax

        for device in jax.devices():
            if device.platform == "tpu":
                tpus += 1
            elif device.platform == "gpu":
                gpus.append(_capability(getattr(device, "compute_capability", None)))
    elif name() == "torch":
        import torch

        if torch.cuda.is_available():
            gpus = [torch.cuda.get_device_capability(i)
                    for i in range(torch.cuda.device_count())]
    return Devices(tpus, tuple(gpus), frozenset(cpu_flags()))


# Whether `fit` compiles its training step with XLA (`jit_compile`) by default on
# TensorFlow, per device class (`Devices.kind`). CPUs: measured, bench/RESULTS.md ("XLA per
# device class"); GPUs and TPUs: Keras' own `jit_compile="auto"` choice (a TPU compiles
# every step with XLA anyway), not measured here.
XLA_BY_DEVICE = {"tpu": True, "gpu": True, "cpu_amx": False, "cpu": False}


def default_jit_compile(found: Devices | None = None) -> bool | str:
    """The `jit_compile` `fit` uses when none is given: on TensorFlow `XLA_BY_DEVICE` for
    this process's devices (`found`, read when None); on JAX True (its steps are always
    compiled); on other backends Keras' own `"auto"`."""
    if is_tensorflow():
        return XLA_BY_DEVICE[(found or devices()).kind]
    return True if name() == "jax" else "auto"


def compiles_per_shape(jit_compile=None) -> bool:
    """Whether a step compiled with `jit_compile` (None or `"auto"`: `default_jit_compile`)
    compiles one program per input shape: XLA's on TensorFlow, and every JAX step. A
    TensorFlow step without XLA runs any shape in one traced graph."""
    if jit_compile in (None, "auto"):
        jit_compile = default_jit_compile()
    return jit_compile is True


def _capability(text) -> tuple[int, int]:
    """`"9.0"` (JAX's compute capability) as `(9, 0)`; `(0, 0)` when unknown."""
    try:
        major, minor = str(text).split(".")[:2]
        return int(major), int(minor)
    except (TypeError, ValueError):
        return (0, 0)


__all__ = ["XLA_BY_DEVICE", "Devices", "batch_splits", "check_batch_size",
           "compiles_per_shape", "cpu_flags", "default_jit_compile", "devices",
           "distribution_scope", "gather_replicas", "global_mean", "is_chief",
           "model_distribution",
           "is_tensorflow", "name", "replicas_in_sync", "require_tensorflow",
           "static_batches"]
