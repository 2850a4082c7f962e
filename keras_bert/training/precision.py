"""The Keras dtype policies a training job may run under, and `auto`: the one for the hardware.

The precision a model computes in is part of the model: a model directory records it
(`keras_bert.json`'s `precision`), and loading, `predict` and `export` use the recorded one
unless told otherwise, so a model saved and loaded again answers as before on any host.
`auto` is resolved once, when a model is built for training, and the choice is printed.

`auto` (the default when a model is built for training) picks, in this order:

* a TPU (a TPU system initialised in this process): `mixed_bfloat16`;
* a GPU of compute capability 8.0 or more (Ampere and later): `mixed_bfloat16`; an older GPU:
  `mixed_float16` (Keras adds loss scaling);
* a CPU with AMX (`amx_bf16` in `/proc/cpuinfo`): `mixed_bfloat16`;
* any other CPU: `float32`. Without AMX, a `mixed_bfloat16` encoder forward ran at 0.68x of
  fp32 on an Intel Xeon with avx512_bf16 and 0.77x on an AMD EPYC Zen 3 (AVX2); on AMD's
  avx512_bf16 it was faster (a fit 1.68x on a Zen 4, 1.03-1.22x over three seeds on a Zen 5,
  where float32 already fits 1.6x faster than the PyTorch loop; bench/RESULTS.md): name it
  there, `auto` keeps fp32.
"""

from __future__ import annotations

import sys

from keras_bert.training.backends import cpu_flags  # noqa: F401 - tests patch it here

PRECISIONS = ("float32", "mixed_float16", "mixed_bfloat16")
AUTO = "auto"
PRECISION_CHOICES = (AUTO, *PRECISIONS)
PRECISION_HELP = ("Keras dtype policy; auto: mixed_bfloat16 on TPUs, GPUs of compute "
                  "capability 8.0+ and CPUs with AMX, mixed_float16 on older GPUs, float32 on "
                  "other CPUs")


def check_precision(name: str) -> str:
    """`name` if it is one of `PRECISIONS`, else a `ValueError` naming the choices."""
    if name not in PRECISIONS:
        raise ValueError(f"precision must be one of {PRECISION_CHOICES}, got {name!r}")
    return name


def hardware_precision(tpus: int, gpu_capabilities: list[tuple[int, int]],
                       flags: set[str]) -> tuple[str, str]:
    """`(precision, reason)` for the devices described (the rule in the module docstring)."""
    if tpus:
        return "mixed_bfloat16", f"{tpus} TPU core(s)"
    if gpu_capabilities:
        capability = min(gpu_capabilities)
        shown = f"GPU compute capability {capability[0]}.{capability[1]}"
        if capability >= (8, 0):
            return "mixed_bfloat16", shown
        return "mixed_float16", shown + " (< 8.0: no fast bfloat16)"
    if "amx_bf16" in flags:
        return "mixed_bfloat16", "CPU with AMX"
    return "float32", "CPU without AMX"


def detect_precision() -> tuple[str, str]:
    """`hardware_precision` of the devices this process computes on (through the running
    Keras backend: TensorFlow's device list, or JAX's)."""
    from keras_bert.training.backends import devices

    found = devices()
    return hardware_precision(found.tpus, list(found.gpus), cpu_flags())


def resolve_precision(name: str) -> str:
    """`name`, or for `auto` the precision for this machine's hardware."""
    if name == AUTO:
        return detect_precision()[0]
    return check_precision(name)


def training_precision(name: str | None) -> str:
    """The dtype policy a model built for training computes in: `name` (`None`: `auto`),
    with `auto` resolved here, once, and the choice printed to stderr (a model's precision
    changes its answers, so the hardware's choice is never silent)."""
    asked = AUTO if name is None else name
    resolved = resolve_precision(asked)
    if asked == AUTO:
        print(precision_line(asked, resolved), file=sys.stderr, flush=True)
    return resolved


def precision_line(asked: str, resolved: str, strategy: str | None = None) -> str:
    """What a job reports: `precision: <resolved>`, and for `auto` the hardware that chose it."""
    if asked != AUTO:
        return f"precision: {resolved}"
    reason = "TPU strategy" if strategy == "tpu" else detect_precision()[1]
    return f"precision: {resolved} (auto: {reason})"
