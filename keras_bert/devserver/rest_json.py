"""TF Serving's REST request and response bodies: JSON values <-> NumPy arrays.

`decode_predict` reads a predict body in the row (`{"instances": ...}`) or columnar
(`{"inputs": ...}`) format against a signature's inputs; `encode_predict` writes the
outputs as TF Serving does (`{"predictions": ...}` / `{"outputs": ...}`). Binary strings
travel as `{"b64": "..."}`. Every problem a client can cause is an INVALID_ARGUMENT
`ServingError` naming the input.
"""

from __future__ import annotations

import base64
import json

import numpy as np
import tensorflow as tf

from keras_bert.devserver.served_version import Signature, invalid

# JSON -> arrays ----------------------------------------------------------------------------

MAX_DIMS = 8  # of one input's nested lists
MAX_ELEMENTS = 1 << 22  # values in one input (4,194,304)

def _is_b64(value) -> bool:
    return isinstance(value, dict) and list(value) == ["b64"]


def json_kind(value) -> str:
    """The JSON type name of a decoded value (`number`, `string`, ...), for messages."""
    return {bool: "boolean", int: "number", float: "number", str: "string", dict: "object",
            list: "array", type(None): "null"}.get(type(value), type(value).__name__)


def json_to_array(value, dtype: tf.DType, name: str) -> np.ndarray:
    """A JSON value (nested lists of scalars) as an array of `dtype`; INVALID_ARGUMENT if the
    value is ragged or holds values of the wrong type."""
    shape, probe = [], value
    while isinstance(probe, list):
        shape.append(len(probe))
        if len(shape) > MAX_DIMS:
            raise invalid(f"input '{name}' nests lists more than {MAX_DIMS} deep")
        if not probe:
            break
        probe = probe[0]
    if int(np.prod(shape, dtype=np.int64)) > MAX_ELEMENTS:
        raise invalid(f"input '{name}' has shape {shape}: more than {MAX_ELEMENTS} values")
    flat = []

    def walk(item, depth):
        if depth == len(shape):
            if isinstance(item, list):
                raise invalid(f"input '{name}' is ragged: a list where a scalar was expected "
                              f"at depth {depth}")
            flat.append(item)
            return
        if not isinstance(item, list) or len(item) != shape[depth]:
            raise invalid(f"input '{name}' is ragged: every list at depth {depth} must have "
                          f"{shape[depth]} elements")
        for element in item:
            walk(element, depth + 1)

    walk(value, 0)
    return np.array([_scalar(x, dtype, name) for x in flat],
                    dtype=object if dtype == tf.string else dtype.as_numpy_dtype
                    ).reshape(shape)


def _scalar(value, dtype: tf.DType, name: str):
    if dtype == tf.string:
        if isinstance(value, str):
            return value.encode("utf-8")
        if _is_b64(value) and isinstance(value["b64"], str):
            try:
                return base64.b64decode(value["b64"], validate=True)
            except ValueError:
                raise invalid(f"input '{name}': invalid base64 in a b64 value") from None
    elif dtype == tf.bool:
        if isinstance(value, bool):
            return value
    elif dtype.is_integer:
        if isinstance(value, int) and not isinstance(value, bool):
            if not dtype.min <= value <= dtype.max:
                raise invalid(f"input '{name}': {value} is out of range for {dtype.name}")
            return value
    elif dtype.is_floating:
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            return value
    else:
        raise invalid(f"input '{name}': dtype {dtype.name} is not supported over REST")
    try:
        shown = json.dumps(value)
    except RecursionError:
        shown = "..."
    shown = shown if len(shown) <= 40 else shown[:37] + "..."
    raise invalid(f"input '{name}' expects {dtype.name} values, got {json_kind(value)} {shown}")


def decode_predict(body: dict, signature: Signature,
                   max_rows: int | None = None) -> tuple[dict[str, np.ndarray], bool]:
    """`(inputs, row_format)` of a predict request body; more than `max_rows` instances are
    refused before they are converted."""
    specs = signature.inputs
    if "instances" in body and "inputs" in body:
        raise invalid("the request has both 'instances' and 'inputs'; send one of them")
    if "instances" in body:
        instances = body["instances"]
        if not isinstance(instances, list):
            raise invalid("'instances' must be a list")
        if not instances:
            raise invalid("'instances' is an empty batch (0 instances)")
        if max_rows is not None and len(instances) > max_rows:
            raise invalid(f"'instances' has {len(instances)} rows; the limit is {max_rows} "
                          "rows per request (serve --max-request-rows)")
        named = [isinstance(x, dict) and not _is_b64(x) for x in instances]
        if not any(named):
            if len(specs) != 1:
                raise invalid(f"bare instances need a signature with one input; "
                              f"'{signature.name}' takes: {', '.join(sorted(specs))}")
            (name, spec), = specs.items()
            return {name: json_to_array(instances, spec.dtype, name)}, True
        if not all(named):
            raise invalid("instances mix objects and bare values")
        keys = set(instances[0])
        for i, instance in enumerate(instances):
            if set(instance) != keys:
                raise invalid(f"instance {i} has inputs {sorted(instance)}; instance 0 has "
                              f"{sorted(keys)}")
        inputs = {}
        for key in keys:
            if key not in specs:
                raise invalid(f"unexpected input '{key}'; signature '{signature.name}' takes: "
                              f"{', '.join(sorted(specs))}")
            inputs[key] = json_to_array([x[key] for x in instances], specs[key].dtype, key)
        return inputs, True
    if "inputs" in body:
        columns = body["inputs"]
        if isinstance(columns, dict) and not _is_b64(columns):
            inputs = {}
            for key, value in columns.items():
                if key not in specs:
                    raise invalid(f"unexpected input '{key}'; signature '{signature.name}' "
                                  f"takes: {', '.join(sorted(specs))}")
                inputs[key] = json_to_array(value, specs[key].dtype, key)
            return inputs, False
        if len(specs) != 1:
            raise invalid(f"a bare 'inputs' value needs a signature with one input; "
                          f"'{signature.name}' takes: {', '.join(sorted(specs))}")
        (name, spec), = specs.items()
        return {name: json_to_array(columns, spec.dtype, name)}, False
    raise invalid("the request needs 'instances' (row format) or 'inputs' (columnar format)")


# Arrays -> JSON ----------------------------------------------------------------------------

def array_to_json(value: np.ndarray, name: str = ""):
    """An output array as JSON values (strings as UTF-8 text, else `{"b64": ...}`)."""
    if value.dtype.kind not in "OS":
        return value.tolist()
    force_b64 = name.endswith("_bytes")

    def convert(item):
        if isinstance(item, list):
            return [convert(x) for x in item]
        if isinstance(item, bytes):
            if not force_b64:
                try:
                    return item.decode("utf-8")
                except UnicodeDecodeError:
                    pass
            return {"b64": base64.b64encode(item).decode("ascii")}
        return item

    return convert(value.tolist())


def encode_predict(outputs: dict[str, np.ndarray], row_format: bool) -> dict:
    """The response body of a predict request."""
    columns = {name: array_to_json(value, name) for name, value in outputs.items()}
    if not row_format:
        return {"outputs": next(iter(columns.values())) if len(columns) == 1 else columns}
    sizes = {name: (value.shape[0] if value.ndim else None) for name, value in outputs.items()}
    if None in sizes.values() or len(set(sizes.values())) > 1:
        raise invalid(f"outputs do not share a batch size ({sizes}); use the columnar format "
                      f"('inputs')")
    if len(columns) == 1:
        return {"predictions": next(iter(columns.values()))}
    names = list(columns)
    return {"predictions": [dict(zip(names, row, strict=True))
                            for row in zip(*columns.values(), strict=True)]}


__all__ = ["array_to_json", "decode_predict", "encode_predict", "json_kind", "json_to_array"]
