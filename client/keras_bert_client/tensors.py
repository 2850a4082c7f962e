"""NumPy arrays to and from `tensorflow.TensorProto` bytes (TensorFlow's `tensor.proto`,
`types.proto`, `tensor_shape.proto`), as `tf.make_tensor_proto` / `tf.make_ndarray` do."""

from __future__ import annotations

import numpy as np

from keras_bert_client.wire import Fields, WireError, field, signed, varint, varint_field

# tensorflow.DataType: the values this client reads and writes, by number.
DTYPE_NAMES = {0: "DT_INVALID", 1: "DT_FLOAT", 2: "DT_DOUBLE", 3: "DT_INT32", 4: "DT_UINT8",
               5: "DT_INT16", 6: "DT_INT8", 7: "DT_STRING", 8: "DT_COMPLEX64", 9: "DT_INT64",
               10: "DT_BOOL", 11: "DT_QINT8", 12: "DT_QUINT8", 13: "DT_QINT32",
               14: "DT_BFLOAT16", 15: "DT_QINT16", 16: "DT_QUINT16", 17: "DT_UINT16",
               18: "DT_COMPLEX128", 19: "DT_HALF", 20: "DT_RESOURCE", 21: "DT_VARIANT",
               22: "DT_UINT32", 23: "DT_UINT64"}
DT_STRING = 7
_NUMPY = {1: np.float32, 2: np.float64, 3: np.int32, 4: np.uint8, 5: np.int16, 6: np.int8,
          8: np.complex64, 9: np.int64, 10: np.bool_, 17: np.uint16, 18: np.complex128,
          19: np.float16, 22: np.uint32, 23: np.uint64}
_DTYPES = {np.dtype(kind): number for number, kind in _NUMPY.items()}
# TensorProto's fields: dtype, tensor_shape, tensor_content, then the typed value lists.
_DTYPE, _SHAPE, _CONTENT = 1, 2, 4
_SHAPE_DIM, _DIM_SIZE = 2, 1
_FLOAT_VAL, _DOUBLE_VAL, _INT_VAL, _STRING_VAL, _SCOMPLEX_VAL = 5, 6, 7, 8, 9
_INT64_VAL, _BOOL_VAL, _DCOMPLEX_VAL, _HALF_VAL, _UINT32_VAL, _UINT64_VAL = 10, 11, 12, 13, 16, 17


def _as_array(value) -> np.ndarray:
    """`value` as an array of the type `tf.make_tensor_proto` would give it: arrays keep
    theirs; Python ints become int32 (int64 beyond its range), floats float32."""
    if isinstance(value, np.ndarray | np.generic):
        return np.asarray(value)
    array = np.asarray(value)
    if array.dtype.kind in "US":  # NumPy's fixed-width bytes would drop trailing NULs
        return np.array(value, dtype=object)
    if array.dtype.kind == "i":
        info = np.iinfo(np.int32)
        inside = array.size == 0 or (array.min() >= info.min and array.max() <= info.max)
        return array.astype(np.int32 if inside else np.int64)
    if array.dtype.kind == "f":
        return array.astype(np.float32)
    return array


def _utf8(item) -> bytes:
    if isinstance(item, bytes):
        return item
    if isinstance(item, str):
        return item.encode("utf-8")
    raise TypeError(f"a string tensor holds str or bytes, not {type(item).__name__}")


def encode_shape(shape) -> bytes:
    """A `TensorShapeProto` of known dimensions (-1 for an unknown one)."""
    return b"".join(field(_SHAPE_DIM, varint_field(_DIM_SIZE, int(size)))
                    for size in shape)


def encode_tensor(value) -> bytes:
    """A serialized `TensorProto` of `value` (array-like: numbers, bools, str or bytes)."""
    array = _as_array(value)
    if array.dtype.kind in "USO":
        dtype = DT_STRING
        key = varint(_STRING_VAL << 3 | 2)
        payload = b"".join([key + varint(len(item)) + item
                            for item in map(_utf8, array.reshape(-1))])
    elif array.dtype in _DTYPES:
        dtype = _DTYPES[array.dtype]
        content = array.astype(array.dtype.newbyteorder("<")).tobytes()
        payload = field(_CONTENT, content) if content else b""
    else:
        raise TypeError(f"no TensorFlow dtype for NumPy {array.dtype}")
    return varint_field(_DTYPE, dtype) + field(_SHAPE, encode_shape(array.shape)) + payload


def shape_of(shape: Fields | None) -> list[int]:
    """The dimensions of a parsed `TensorShapeProto` (-1 where unknown)."""
    if shape is None:
        return []
    return [signed(Fields(dim).one(_DIM_SIZE, 0)) for dim in shape.all(_SHAPE_DIM)]


def _values(proto: Fields, dtype: int):
    """The typed value list of `dtype` (a list, or an array for the fixed-size ones)."""
    if dtype == DT_STRING:
        return [bytes(v) for v in proto.all(_STRING_VAL)]
    if dtype in (1, 2, 8, 18):  # float, double, complex64 (float pairs), complex128
        number, code, kind = {1: (_FLOAT_VAL, "f", "<f4"), 2: (_DOUBLE_VAL, "d", "<f8"),
                              8: (_SCOMPLEX_VAL, "f", "<c8"),
                              18: (_DCOMPLEX_VAL, "d", "<c16")}[dtype]
        return np.frombuffer(proto.fixed(number, code), kind)
    if dtype == 19:  # half_val holds each float16's bits
        return np.array(proto.varints(_HALF_VAL), np.uint16).view(np.float16)
    if dtype == 10:
        return [bool(v) for v in proto.varints(_BOOL_VAL)]
    if dtype in (22, 23):
        return proto.varints(_UINT32_VAL if dtype == 22 else _UINT64_VAL)
    return [signed(v) for v in proto.varints(_INT64_VAL if dtype == 9 else _INT_VAL)]


def decode_tensor(data: bytes) -> np.ndarray:
    """The array a serialized `TensorProto` holds (strings as an object array of bytes)."""
    proto = Fields(data)
    dtype = proto.one(_DTYPE, 0)
    shape = shape_of(proto.message(_SHAPE))
    size = int(np.prod(shape, dtype=np.int64))
    if dtype != DT_STRING and dtype not in _NUMPY:
        raise WireError(f"tensor of {DTYPE_NAMES.get(dtype, dtype)}: not a type this client "
                        "reads")
    if dtype != DT_STRING and _CONTENT in proto:
        kind = np.dtype(_NUMPY[dtype]).newbyteorder("<")
        content = proto.one(_CONTENT)
        if len(content) != size * kind.itemsize:
            raise WireError(f"tensor of shape {shape}: {len(content)} bytes of content")
        return np.frombuffer(content, kind).astype(_NUMPY[dtype]).reshape(shape)
    values = _values(proto, dtype)
    kind = object if dtype == DT_STRING else _NUMPY[dtype]
    if len(values) > size:
        raise WireError(f"tensor of shape {shape} holds {len(values)} values")
    if len(values) == size:
        return np.array(values, kind).reshape(shape)
    if not len(values):
        return np.full(shape, b"" if dtype == DT_STRING else 0, kind)
    array = np.empty(size, kind)
    array[:len(values)] = values
    array[len(values):] = values[-1]  # a shorter list repeats its last value (TF's rule)
    return array.reshape(shape)


__all__ = ["DTYPE_NAMES", "decode_tensor", "encode_shape", "encode_tensor", "shape_of"]
