"""The Keras dtype policies a training job may run under."""

PRECISIONS = ("float32", "mixed_float16", "mixed_bfloat16")


def check_precision(name: str) -> str:
    """`name` if it is one of `PRECISIONS`, else a `ValueError` naming the choices."""
    if name not in PRECISIONS:
        raise ValueError(f"precision must be one of {PRECISIONS}, got {name!r}")
    return name
