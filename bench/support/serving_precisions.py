"""The two int8 SavedModels `bench/serving_latency.py` measures against float32 and bfloat16,
and (`accuracy`) a classifier's held-out accuracy in each precision through TF Serving's
loader.
Both quantize the encoder's `Dense` layers alone (the embeddings, LayerNorms, attention
products and a task head stay float32, as in ONNX Runtime's `quantize_dynamic`), and both are
written by `write_version`, so they pass the op audit and load through TF Serving's loader:

* `keras`  Keras' own `quantize("int8")` (W8A8: int8 kernels per output channel, inputs
           quantized per token at run time); on the TensorFlow backend each product is a
           `BatchMatMulV3` of int8 by int8 into int32;
* `onednn` each product through TensorFlow's oneDNN int8 kernel `QuantizedMatMulWithBias`
           (in TF Serving's op set): inputs quantized at run time to quint8 over the whole
           tensor (asymmetric), kernels qint8 per output channel, the zero-point
           compensation and both scales applied in float32 afterwards. The kernel answers
           only where TensorFlow's oneDNN path is on (the x86 default;
           `TF_ENABLE_ONEDNN_OPTS=0` makes it fail with "Missing 0-th output"). A
           measurement harness, not the package's code: it builds TensorFlow ops in the
           layers' place.

    .venv/bin/python -m bench.support.serving_precisions keras|onednn MODEL_DIR BASE_DIR
    # -> BASE_DIR/1
"""

from __future__ import annotations

import os
import subprocess
import sys

KINDS = ("keras", "onednn")


def write_int8_export(kind: str, model_dir: str, base_dir: str) -> str:
    """The model directory `model_dir` exported as version 1 under `base_dir` with its
    encoder's `Dense` layers in int8 of `kind`, by a fresh process: the version dir."""
    if kind not in KINDS:
        raise ValueError(f"kind must be one of {KINDS}, got {kind!r}")
    subprocess.run([sys.executable, "-m", "bench.support.serving_precisions", kind, model_dir,
                    base_dir], check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                   cwd=os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
    return os.path.join(base_dir, "1")


def onednn_int8_call(layer):
    """A replacement for `layer.call` (a built float32 `keras.layers.Dense`) computing its
    product with `QuantizedMatMulWithBias`."""
    import numpy as np
    import tensorflow as tf

    w, b = layer.kernel.numpy(), layer.bias.numpy()
    amax = np.maximum(np.abs(w).max(axis=0), 1e-12)
    w8 = np.round(w / amax * 127).astype(np.int8)
    scale = (amax / 127).astype(np.float32)  # per output channel
    column_sums = w8.astype(np.float32).sum(axis=0) * scale  # of the dequantized kernel
    k, n = w.shape

    def call(inputs, training=None):
        x = tf.reshape(inputs, [-1, k])
        low = tf.minimum(tf.reduce_min(x), 0.0)
        step = tf.maximum(tf.maximum(tf.reduce_max(x), 0.0) - low, 1e-8) / 255.0
        x8 = tf.bitcast(tf.cast(tf.round((x - low) / step), tf.uint8), tf.quint8)
        one = tf.constant(1.0)  # the ranges below make the kernel's own scales 1: raw sums
        products = tf.raw_ops.QuantizedMatMulWithBias(
            a=x8, b=tf.bitcast(tf.constant(w8), tf.qint8), bias=tf.zeros([n], tf.qint32),
            min_a=0.0 * one, max_a=255.0 * one, min_b=-127.0 * one, max_b=127.0 * one,
            Toutput=tf.qint32, input_quant_mode="SCALED")[0]
        # x = step * x8 + low, so x @ w = step * scale * (x8 @ w8) + low * column sums.
        y = (tf.cast(tf.bitcast(products, tf.int32), tf.float32) * (step * scale)
             + (low * column_sums + b))
        y = tf.reshape(y, tf.concat([tf.shape(inputs)[:-1], [n]], axis=0))
        return layer.activation(y) if layer.activation is not None else y

    return call


def main(kind: str, model_dir: str, base_dir: str) -> None:
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    import keras

    from keras_bert.export.exporter import write_version
    from keras_bert.tasks.task_model import TextTaskModel

    model = TextTaskModel.load(model_dir)
    encoder = model.network.encoder
    if kind == "keras":
        encoder.quantize("int8", filters=lambda layer: isinstance(layer, keras.layers.Dense))
    else:
        for layer in encoder._flatten_layers(include_self=False, recursive=True):
            if isinstance(layer, keras.layers.Dense):
                layer.call = onednn_int8_call(layer)
    write_version(model, base_dir, version=1)


PRECISIONS = ("float32", "bfloat16", "int8", "int8_onednn")  # of `accuracy`'s exports


def accuracy(classifier_dir: str, held_out: int | None) -> list[list]:
    """Held-out Rotten Tomatoes accuracy of the classifier exported in each of `PRECISIONS`
    (`float32` and `bfloat16`: `keras-bert export --precision`; `int8`, `int8_onednn`: as
    `session_int8`, `session_int8_onednn`)
    and answering through the loader (`SessionBundle`, `serving_default`, text in, by 64),
    and how often each answers the float32 export's label."""
    import tempfile

    import numpy as np

    from bench.support.texts import held_out_reviews
    from keras_bert.export.session_bundle import SessionBundle
    from keras_bert.tasks.task_dir import export_model
    from keras_bert.tasks.task_model import TextTaskModel

    labels = set(TextTaskModel.load(classifier_dir).labels.names)
    rows = [(t, y) for t, y in held_out_reviews() if y in labels][:held_out or None]
    answers = {}
    with tempfile.TemporaryDirectory(prefix="serving-accuracy-") as root:
        for precision in PRECISIONS:
            base = os.path.join(root, precision)
            path = (write_int8_export("keras" if precision == "int8" else "onednn",
                                      classifier_dir, base) if "int8" in precision else
                    export_model(classifier_dir, base, precision=precision).path)
            with SessionBundle(path) as bundle:
                answers[precision] = [
                    label.decode() for i in range(0, len(rows), 64)
                    for label in bundle.run("serving_default", {"text": np.array(
                        [t for t, _ in rows[i:i + 64]], dtype=object)}, ["label"])["label"]]
    table = []
    for precision, got in answers.items():
        right = sum(a == y for a, (_, y) in zip(got, rows, strict=True)) / len(rows)
        same = sum(a == b for a, b in zip(got, answers["float32"], strict=True)) / len(rows)
        table.append([precision, len(rows), f"{100 * right:.2f}", f"{100 * same:.2f}"])
    return table


if __name__ == "__main__":
    main(*sys.argv[1:])
