"""TF Serving's request and response messages (`tensorflow_serving/apis/*.proto`) encoded
and decoded by field number; answers in the JSON form TF Serving's REST API gives."""

from __future__ import annotations

import base64

from keras_bert_client.tensors import DTYPE_NAMES, decode_tensor, encode_tensor, shape_of
from keras_bert_client.wire import Fields, WireError, field, map_entry, string_field, varint_field

PREDICT = "/tensorflow.serving.PredictionService/Predict"
GET_MODEL_METADATA = "/tensorflow.serving.PredictionService/GetModelMetadata"
GET_MODEL_STATUS = "/tensorflow.serving.ModelService/GetModelStatus"
SIGNATURE_DEF_MAP = "type.googleapis.com/tensorflow.serving.SignatureDefMap"

# ModelVersionStatus.State and tensorflow.error.Code, by number.
STATES = {0: "UNKNOWN", 10: "START", 20: "LOADING", 30: "AVAILABLE", 40: "UNLOADING", 50: "END"}
ERROR_CODES = {0: "OK", 1: "CANCELLED", 2: "UNKNOWN", 3: "INVALID_ARGUMENT",
               4: "DEADLINE_EXCEEDED", 5: "NOT_FOUND", 6: "ALREADY_EXISTS",
               7: "PERMISSION_DENIED", 8: "RESOURCE_EXHAUSTED", 9: "FAILED_PRECONDITION",
               10: "ABORTED", 11: "OUT_OF_RANGE", 12: "UNIMPLEMENTED", 13: "INTERNAL",
               14: "UNAVAILABLE", 15: "DATA_LOSS", 16: "UNAUTHENTICATED"}


def model_spec(name: str, version: int | None = None, signature: str = "") -> bytes:
    """A `ModelSpec`: name = 1, version = 2 (an Int64Value), signature_name = 3."""
    spec = string_field(1, name)
    if version is not None:
        spec += field(2, varint_field(1, int(version)))
    return spec + string_field(3, signature)


def predict_request(name: str, signature: str, inputs: dict, version: int | None = None,
                    output_filter=()) -> bytes:
    """A `PredictRequest`: model_spec = 1, inputs = 2 (name -> TensorProto), output_filter
    = 3; `inputs` maps names to array-likes."""
    request = field(1, model_spec(name, version, signature))
    for input_name, value in inputs.items():
        request += map_entry(2, input_name, encode_tensor(value))
    return request + b"".join(string_field(3, output) for output in output_filter)


def predict_response(data: bytes) -> dict:
    """A `PredictResponse`'s outputs (field 1) as `{name: numpy array}`."""
    return {name: decode_tensor(tensor) for name, tensor in Fields(data).map(1).items()}


def metadata_request(name: str, version: int | None = None) -> bytes:
    """A `GetModelMetadataRequest` for the signatures: model_spec = 1, metadata_field = 2."""
    return field(1, model_spec(name, version)) + string_field(2, "signature_def")


def status_request(name: str, version: int | None = None) -> bytes:
    """A `GetModelStatusRequest`: model_spec = 1."""
    return field(1, model_spec(name, version))


def _spec_json(spec: Fields) -> dict:
    out = {"name": spec.text(1), "signature_name": spec.text(3)}
    if 2 in spec:
        out["version"] = str(spec.message(2).one(1, 0))
    if 4 in spec:
        out["version_label"] = spec.text(4)
    return out


def _shape_json(shape: Fields) -> dict:
    dims = [{"size": str(size), "name": Fields(dim).text(2)}
            for size, dim in zip(shape_of(shape), shape.all(2), strict=True)]
    return {"dim": dims, "unknown_rank": bool(shape.one(3, 0))}


def _tensor_info_json(data: bytes) -> dict:
    info = Fields(data)
    out = {"dtype": DTYPE_NAMES.get(info.one(2, 0), info.one(2, 0))}
    if 1 in info:
        out["name"] = info.text(1)
    if 4 in info:
        coo = info.message(4)
        out["coo_sparse"] = {"values_tensor_name": coo.text(1),
                             "indices_tensor_name": coo.text(2),
                             "dense_shape_tensor_name": coo.text(3)}
    if 5 in info:
        raise WireError("a composite-tensor signature input or output: the TensorFlow-free "
                        "client does not decode its metadata (RestClient does)")
    if 3 in info:
        out["tensor_shape"] = _shape_json(info.message(3))
    return out


def _default_json(data: bytes) -> dict:
    """A signature's default input: dtype, shape and values (the fields set, not every
    empty one as TF Serving prints)."""
    tensor = Fields(data)
    array = decode_tensor(data)
    values = [base64.b64encode(v).decode("ascii") if isinstance(v, bytes) else v
              for v in array.reshape(-1).tolist()]
    return {"dtype": DTYPE_NAMES.get(tensor.one(1, 0), tensor.one(1, 0)),
            "tensor_shape": _shape_json(tensor.message(2) or Fields(b"")), "values": values}


def _signature_json(data: bytes) -> dict:
    signature = Fields(data)
    return {"inputs": {k: _tensor_info_json(v) for k, v in signature.map(1).items()},
            "outputs": {k: _tensor_info_json(v) for k, v in signature.map(2).items()},
            "method_name": signature.text(3),
            "defaults": {k: _default_json(v) for k, v in signature.map(4).items()}}


def metadata_response(data: bytes) -> dict:
    """A `GetModelMetadataResponse` (model_spec = 1, metadata = 2: name -> Any holding a
    SignatureDefMap) as TF Serving's REST metadata answer."""
    response = Fields(data)
    metadata = {}
    for key, value in response.map(2).items():
        packed = Fields(value)
        if packed.text(1) != SIGNATURE_DEF_MAP:
            raise WireError(f"metadata {key!r} holds {packed.text(1)}, not a SignatureDefMap")
        signatures = Fields(packed.one(2, b"")).map(1)
        metadata[key] = {"signature_def": {name: _signature_json(signature)
                                           for name, signature in signatures.items()}}
    return {"model_spec": _spec_json(response.message(1) or Fields(b"")),
            "metadata": metadata}


def status_response(data: bytes) -> dict:
    """A `GetModelStatusResponse` as TF Serving's REST status answer."""
    versions = []
    for entry in Fields(data).all(1):
        version = Fields(entry)
        row = {"version": str(version.one(1, 0)),
               "state": STATES.get(version.one(2, 0), version.one(2, 0))}
        if 3 in version:
            status = version.message(3)
            row["status"] = {"error_code": ERROR_CODES.get(status.one(1, 0), status.one(1, 0)),
                             "error_message": status.text(2)}
        versions.append(row)
    return {"model_version_status": versions}
