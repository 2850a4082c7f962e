"""TF Serving warmup requests: `assets.extra/tf_serving_warmup_requests`.

A TFRecord file of `PredictionLog` protos (built with `tensorflow-serving-api`) that the
model server replays when it loads a version, so the first real request does not pay for
graph initialisation.
"""

from __future__ import annotations

import os

import tensorflow as tf

WARMUP_FILE = os.path.join("assets.extra", "tf_serving_warmup_requests")


def predict_log(model_name: str, signature: str, inputs: dict):
    """One `PredictionLog` with a `PredictRequest` of `inputs` (name -> array-like)."""
    from tensorflow_serving.apis import predict_pb2, prediction_log_pb2

    request = predict_pb2.PredictRequest()
    request.model_spec.name = model_name
    request.model_spec.signature_name = signature
    for name, value in inputs.items():
        request.inputs[name].CopyFrom(tf.make_tensor_proto(value))
    return prediction_log_pb2.PredictionLog(
        predict_log=prediction_log_pb2.PredictLog(request=request))


def write_warmup(export_dir: str, logs) -> str:
    """Writes the warmup file of `export_dir` from `PredictionLog`s; returns its path."""
    path = os.path.join(export_dir, WARMUP_FILE)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with tf.io.TFRecordWriter(path) as writer:
        for log in logs:
            writer.write(log.SerializeToString())
    return path


def read_warmup(export_dir: str) -> list:
    """The `PredictionLog`s of an export's warmup file."""
    from tensorflow_serving.apis import prediction_log_pb2

    path = os.path.join(export_dir, WARMUP_FILE)
    return [prediction_log_pb2.PredictionLog.FromString(record.numpy())
            for record in tf.data.TFRecordDataset(path)]
