"""A quiet start: TensorFlow loaded with its start-up chatter held back.

Importing TensorFlow writes lines to the process's stderr from C++ before its logging is
set up (oneDNN notices, the CPU-instruction banner, "Could not find cuda drivers" and, on
a machine without a GPU, `E0000 ... failed call to cuInit`), which a command's user would
read as errors. `load_tensorflow` imports TensorFlow with file descriptor 2 pointed at a
temporary file, then drops the lines known to be harmless and writes the others through
(a real problem still prints). TensorFlow's later C++ logging is limited to errors
(`TF_CPP_MIN_LOG_LEVEL=2`, unless set). `keras-bert --debug` or `KERAS_BERT_TF_LOGS=1`
shows everything, as TensorFlow prints it.
"""

from __future__ import annotations

import os
import re
import sys
import tempfile

SHOW_ALL_VARIABLE = "KERAS_BERT_TF_LOGS"

# What TensorFlow 2.12-2.21 print on a healthy machine while they load.
HARMLESS = tuple(re.compile(pattern) for pattern in (
    r"All log messages before absl::InitializeLog\(\) is called are written to STDERR",
    r"oneDNN custom operations are on",
    r"Could not find cuda drivers on your machine",
    r"This TensorFlow binary is optimized to use available CPU instructions",
    r"^To enable the following instructions: .* rebuild TensorFlow",
    r"failed call to cuInit",
    r"TF-TRT Warning: Could not find TensorRT",
    r"Unable to register cu(DNN|FFT|BLAS) factory",
    r"computation placer already registered",
))
GPU_DEVICE = "/dev/nvidia0"


def show_all() -> bool:
    """Whether `KERAS_BERT_TF_LOGS` asks for TensorFlow's own output."""
    return os.environ.get(SHOW_ALL_VARIABLE, "").lower() in ("1", "true", "yes")


def load_tensorflow(quiet: bool = True) -> None:
    """Imports TensorFlow (and Keras); with `quiet`, its harmless start-up lines are
    dropped (see the module docstring). A no-op once TensorFlow is loaded."""
    if "tensorflow" in sys.modules:
        return
    if not quiet or show_all():
        import tensorflow  # noqa: F401
        return
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    sys.stderr.flush()
    saved = os.dup(2)
    with tempfile.TemporaryFile() as captured:
        os.dup2(captured.fileno(), 2)
        try:
            import keras  # noqa: F401
            import tensorflow

            tensorflow.config.list_physical_devices()  # CUDA starts (or fails) here
        finally:
            os.dup2(saved, 2)
            os.close(saved)
            captured.seek(0)
            text = captured.read().decode("utf-8", errors="replace")
    for line in kept_lines(text, gpu_present=os.path.exists(GPU_DEVICE)):
        print(line, file=sys.stderr)


def kept_lines(text: str, gpu_present: bool) -> list[str]:
    """The lines of TensorFlow's start-up output worth showing: those not known to be
    harmless; and, where a GPU device exists but CUDA failed to start, one line saying so."""
    lines = [line for line in text.splitlines() if line.strip()]
    kept = [line for line in lines if not any(p.search(line) for p in HARMLESS)]
    if gpu_present and any("failed call to cuInit" in line for line in lines):
        kept.append("keras-bert: this machine has a GPU but CUDA failed to start (cuInit); "
                    f"running on the CPU ({SHOW_ALL_VARIABLE}=1 shows TensorFlow's messages)")
    return kept


__all__ = ["SHOW_ALL_VARIABLE", "kept_lines", "load_tensorflow", "show_all"]
