"""Runs an exported SavedModel in a process that imports only TensorFlow and TF Text.

    python tests/serving/load_in_fresh_process.py EXPORT_DIR SIGNATURE INPUTS.npz OUT.npz

This is how TensorFlow Serving sees an export: no keras_bert (and no Keras model code) is
imported; the script fails if keras_bert gets imported anyway.
"""

import sys

import numpy as np
import tensorflow as tf
import tensorflow_text  # noqa: F401  (registers the TF Text ops, as the model server does)

export_dir, signature, inputs_path, out_path = sys.argv[1:5]
loaded = tf.saved_model.load(export_dir)
function = loaded.signatures[signature]
with np.load(inputs_path, allow_pickle=True) as data:
    inputs = {name: tf.constant(data[name]) for name in data.files}
outputs = function(**inputs)
np.savez(out_path, **{name: value.numpy() for name, value in outputs.items()})
assert not any(name.startswith("keras_bert") for name in sys.modules), "keras_bert imported"
print("signatures:", sorted(loaded.signatures))
