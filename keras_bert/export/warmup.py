"""TF Serving warmup requests: `assets.extra/tf_serving_warmup_requests`.

A TFRecord file of `tensorflow.serving.PredictionLog` protos that the model server replays
when it loads a version, so the first real request does not pay for graph initialisation.
The records are encoded here from the protos' field numbers (TF Serving's
`prediction_log.proto`, `predict.proto`, `model.proto`), so that exporting needs no
`tensorflow-serving-api` (an optional extra: it requires one TensorFlow minor version);
`tests/export/test_export.py` parses them with that package's own classes.
"""

from __future__ import annotations

import os

import tensorflow as tf

WARMUP_FILE = os.path.join("assets.extra", "tf_serving_warmup_requests")

# Field numbers: PredictionLog.predict_log, PredictLog.request, PredictRequest.model_spec /
# .inputs (a map: entries of key = 1, value = 2), ModelSpec.name / .signature_name.
_PREDICTION_LOG_PREDICT_LOG = 6
_PREDICT_LOG_REQUEST = 1
_REQUEST_MODEL_SPEC, _REQUEST_INPUTS = 1, 2
_MAP_KEY, _MAP_VALUE = 1, 2
_MODEL_SPEC_NAME, _MODEL_SPEC_SIGNATURE = 1, 3


def _varint(value: int) -> bytes:
    out = bytearray()
    while True:
        byte, value = value & 0x7F, value >> 7
        out.append(byte | (0x80 if value else 0))
        if not value:
            return bytes(out)


def _field(number: int, payload: bytes) -> bytes:
    """A length-delimited field (wire type 2): a string, bytes or a message."""
    return _varint(number << 3 | 2) + _varint(len(payload)) + payload


def predict_log(model_name: str, signature: str, inputs: dict) -> bytes:
    """One serialized `PredictionLog` holding a `PredictRequest` for `signature` of
    `model_name` with `inputs` (name -> array-like, as `tf.make_tensor_proto` takes)."""
    spec = (_field(_MODEL_SPEC_NAME, model_name.encode("utf-8"))
            + _field(_MODEL_SPEC_SIGNATURE, signature.encode("utf-8")))
    request = _field(_REQUEST_MODEL_SPEC, spec)
    for name, value in inputs.items():
        entry = (_field(_MAP_KEY, name.encode("utf-8"))
                 + _field(_MAP_VALUE, tf.make_tensor_proto(value).SerializeToString()))
        request += _field(_REQUEST_INPUTS, entry)
    return _field(_PREDICTION_LOG_PREDICT_LOG, _field(_PREDICT_LOG_REQUEST, request))


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
