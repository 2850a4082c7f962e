"""TF Serving warmup requests: `assets.extra/tf_serving_warmup_requests`.

A TFRecord file of `tensorflow.serving.PredictionLog` protos that the model server replays
when it loads a version, so the first real request does not pay for graph initialisation.
The records are encoded from the protos' field numbers (`prediction_log.proto` here, the
request by `keras_bert_client`, as its gRPC client sends it), so that exporting needs no
`tensorflow-serving-api` (an optional extra: it requires one TensorFlow minor version);
`tests/export/test_export.py` parses them with that package's own classes.
"""

from __future__ import annotations

import os

import tensorflow as tf
from keras_bert_client.serving_messages import predict_request
from keras_bert_client.wire import field

WARMUP_FILE = os.path.join("assets.extra", "tf_serving_warmup_requests")

# Field numbers: PredictionLog.predict_log = 6, PredictLog.request = 1.
_PREDICTION_LOG_PREDICT_LOG = 6
_PREDICT_LOG_REQUEST = 1


def predict_log(model_name: str, signature: str, inputs: dict) -> bytes:
    """One serialized `PredictionLog` holding a `PredictRequest` for `signature` of
    `model_name` with `inputs` (name -> array-like), encoded as the gRPC client encodes
    its requests."""
    request = predict_request(model_name, signature, inputs)
    return field(_PREDICTION_LOG_PREDICT_LOG, field(_PREDICT_LOG_REQUEST, request))


def write_warmup(export_dir: str, logs) -> str:
    """Writes the warmup file of `export_dir` from serialized `PredictionLog`s
    (`predict_log`); returns its path."""
    path = os.path.join(export_dir, WARMUP_FILE)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with tf.io.TFRecordWriter(path) as writer:
        for log in logs:
            writer.write(log)
    return path


def read_warmup(export_dir: str) -> list:
    """The `PredictionLog`s of an export's warmup file (parsed by `tensorflow-serving-api`)."""
    from keras_bert.serving_api import serving_apis

    prediction_log_pb2 = serving_apis("reading warmup requests", "prediction_log_pb2")[0]

    path = os.path.join(export_dir, WARMUP_FILE)
    return [prediction_log_pb2.PredictionLog.FromString(record.numpy())
            for record in tf.data.TFRecordDataset(path)]
