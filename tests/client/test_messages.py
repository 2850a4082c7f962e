"""`keras_bert_client`'s protocol buffers against the real ones: what it encodes parses with
TensorFlow's and `tensorflow-serving-api`'s own classes into the values sent, and what those
classes serialize decodes to what `tf.make_ndarray` and TF Serving's JSON say."""

from __future__ import annotations

import numpy as np
import pytest
import tensorflow as tf
from google.protobuf import any_pb2
from keras_bert_client import serving_messages as messages
from keras_bert_client.tensors import DTYPE_NAMES, decode_tensor, encode_tensor
from keras_bert_client.wire import Fields, WireError, field, varint
from tensorflow.core.framework import tensor_pb2, tensor_shape_pb2, types_pb2
from tensorflow.core.protobuf import meta_graph_pb2

from keras_bert.proto_json import message_to_dict
from tests.support.reference import require

VALUES = [
    [1, 2, 3], [[1, -2], [3, 4]], [2**40, -1], [0.5, -1.25], [True, False, True],
    ["naïve café", "", "x"], [b"\xff\x00", b"a"], [[["a"]]], [], 7, "one",
    np.arange(6, dtype=np.int64).reshape(2, 3), np.array([-1, 255], np.int16),
    np.array([1.5, 2], np.float64), np.array([0.1, -3], np.float16), np.array([3], np.uint8),
    np.array([2**32 - 1], np.uint32), np.array([2**63], np.uint64), np.array([-5], np.int8),
    np.array([1 + 2j], np.complex64), np.array([True]), np.zeros((2, 0), np.float32),
    np.array(["ab", "c"]), np.array([b"x", "y"], object),
]


@pytest.mark.parametrize("value", VALUES, ids=range(len(VALUES)))
def test_encoded_tensors_are_what_tensorflow_makes(value):
    proto = tensor_pb2.TensorProto.FromString(encode_tensor(value))
    reference = tf.make_tensor_proto(value)
    assert proto.dtype == reference.dtype
    assert proto.tensor_shape == reference.tensor_shape
    got, want = tf.make_ndarray(proto), tf.make_ndarray(reference)
    assert got.dtype == want.dtype
    np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("value", VALUES, ids=range(len(VALUES)))
def test_decoded_tensors_are_what_tensorflow_reads(value):
    serialized = tf.make_tensor_proto(value).SerializeToString()
    got, want = decode_tensor(serialized), tf.make_ndarray(tf.make_tensor_proto(value))
    assert got.dtype == want.dtype and got.shape == want.shape
    np.testing.assert_array_equal(got, want)


def _typed(dtype, shape, **values) -> bytes:
    shape = tensor_shape_pb2.TensorShapeProto(
        dim=[tensor_shape_pb2.TensorShapeProto.Dim(size=s) for s in shape])
    return tensor_pb2.TensorProto(dtype=dtype, tensor_shape=shape, **values).SerializeToString()


# TF Serving answers with the typed value lists (not tensor_content) unless told otherwise;
# a list shorter than the shape repeats its last value.
TYPED = [
    _typed(types_pb2.DT_FLOAT, [2, 2], float_val=[1.5, -2, 3, 4]),
    _typed(types_pb2.DT_FLOAT, [3], float_val=[7]),
    _typed(types_pb2.DT_DOUBLE, [2], double_val=[1e300, -0.5]),
    _typed(types_pb2.DT_INT32, [3], int_val=[-1, 0, 2**31 - 1]),
    _typed(types_pb2.DT_INT8, [2], int_val=[-128, 127]),
    _typed(types_pb2.DT_INT64, [2], int64_val=[-2**63, 5]),
    _typed(types_pb2.DT_BOOL, [3], bool_val=[True, False]),
    _typed(types_pb2.DT_STRING, [2], string_val=[b"a", b"\xff"]),
    _typed(types_pb2.DT_HALF, [2], half_val=[15360, 48128]),  # 1.0, -1.0
    _typed(types_pb2.DT_UINT32, [1], uint32_val=[2**32 - 1]),
    _typed(types_pb2.DT_UINT64, [1], uint64_val=[2**64 - 1]),
    _typed(types_pb2.DT_COMPLEX64, [1], scomplex_val=[1, -2]),
    _typed(types_pb2.DT_INT32, [0], int_val=[]),
    _typed(types_pb2.DT_FLOAT, [], float_val=[2.5]),
]


@pytest.mark.parametrize("serialized", TYPED, ids=range(len(TYPED)))
def test_typed_value_lists_decode_as_tensorflow_reads_them(serialized):
    got = decode_tensor(serialized)
    want = tf.make_ndarray(tensor_pb2.TensorProto.FromString(serialized))
    assert got.dtype == want.dtype and got.shape == want.shape
    np.testing.assert_array_equal(got, want)


def test_a_string_tensor_without_values_holds_empty_bytes():
    serialized = _typed(types_pb2.DT_STRING, [2, 1], string_val=[])
    # tf.make_ndarray fills it with "" (str); every other string comes back as bytes.
    assert tf.make_ndarray(tensor_pb2.TensorProto.FromString(serialized)).tolist() == [
        [""], [""]]
    assert decode_tensor(serialized).tolist() == [[b""], [b""]]


def test_unpacked_repeated_values_decode_too():
    # proto3 packs repeated scalars, but a parser must accept them one field each.
    shape = field(2, field(2, varint(1 << 3) + varint(3)))
    floats = b"".join(varint(5 << 3 | 5) + np.float32(v).tobytes() for v in (1, 2, 3))
    ints = b"".join(varint(7 << 3) + varint(v) for v in (-1, 4, 9))
    np.testing.assert_array_equal(decode_tensor(varint(1 << 3) + varint(1) + shape + floats),
                                  np.array([1, 2, 3], np.float32))
    np.testing.assert_array_equal(decode_tensor(varint(1 << 3) + varint(3) + shape + ints),
                                  np.array([-1, 4, 9], np.int32))
    reference = tensor_pb2.TensorProto.FromString(varint(1 << 3) + varint(3) + shape + ints)
    np.testing.assert_array_equal(tf.make_ndarray(reference), [-1, 4, 9])


@pytest.mark.parametrize("data, message", [
    (b"\x0a\x05ab", "runs past the message"), (b"\x08\xff", "truncated"),
    (b"\x0b", "unsupported wire type"), (_typed(types_pb2.DT_FLOAT, [1], float_val=[1, 2]),
                                         "holds 2 values"),
    (_typed(types_pb2.DT_RESOURCE, [1]), "DT_RESOURCE"),
])
def test_malformed_bytes_raise_a_wire_error(data, message):
    with pytest.raises(WireError, match=message):
        decode_tensor(data)


def _serving_api(name: str):
    """`tensorflow_serving.apis.<name>`, imported by each test that compares with
    tensorflow-serving-api's classes (the `serving` extra): without it those tests skip
    (fail under CI) and the tensor tests still run."""
    return require(f"tensorflow_serving.apis.{name}")


def test_predict_request_parses_into_the_request_sent():
    predict_pb2 = _serving_api("predict_pb2")
    inputs = {"text": ["Call me Ishmael.", "naïve"], "ids": np.array([[1, 2]], np.int32)}
    request = predict_pb2.PredictRequest.FromString(messages.predict_request(
        "bert", "classify", inputs, version=3, output_filter=["label", "logits"]))
    assert (request.model_spec.name, request.model_spec.signature_name,
            request.model_spec.version.value) == ("bert", "classify", 3)
    assert list(request.output_filter) == ["label", "logits"]
    assert list(tf.make_ndarray(request.inputs["text"])) == [
        b"Call me Ishmael.", "naïve".encode()]
    np.testing.assert_array_equal(tf.make_ndarray(request.inputs["ids"]), [[1, 2]])
    no_version = predict_pb2.PredictRequest.FromString(
        messages.predict_request("bert", "serving_default", {"text": ["a"]}))
    assert not no_version.model_spec.HasField("version")


def test_predict_response_decodes_every_output():
    predict_pb2 = _serving_api("predict_pb2")
    response = predict_pb2.PredictResponse()
    response.model_spec.name = "bert"
    response.outputs["label"].CopyFrom(tf.make_tensor_proto([b"pos", b"neg"]))
    response.outputs["probabilities"].CopyFrom(tf.make_tensor_proto([[0.25, 0.75]]))
    outputs = messages.predict_response(response.SerializeToString())
    assert set(outputs) == {"label", "probabilities"}
    assert list(outputs["label"]) == [b"pos", b"neg"]
    np.testing.assert_array_equal(outputs["probabilities"], [[0.25, 0.75]])


def _tensor_info(**kwargs) -> meta_graph_pb2.TensorInfo:
    return meta_graph_pb2.TensorInfo(**kwargs)


def test_metadata_answer_is_tf_servings_json():
    get_model_metadata_pb2 = _serving_api("get_model_metadata_pb2")
    shape = tensor_shape_pb2.TensorShapeProto(dim=[
        tensor_shape_pb2.TensorShapeProto.Dim(size=-1),
        tensor_shape_pb2.TensorShapeProto.Dim(size=128, name="seq")])
    signatures = get_model_metadata_pb2.SignatureDefMap()
    classify = signatures.signature_def["serving_default"]
    classify.method_name = "tensorflow/serving/predict"
    classify.inputs["text"].CopyFrom(_tensor_info(name="serving_default_text:0",
                                                  dtype=types_pb2.DT_STRING,
                                                  tensor_shape=shape))
    classify.outputs["label"].CopyFrom(_tensor_info(
        name="out:0", dtype=types_pb2.DT_STRING,
        tensor_shape=tensor_shape_pb2.TensorShapeProto(unknown_rank=True)))
    classify.outputs["sparse"].CopyFrom(_tensor_info(
        dtype=types_pb2.DT_INT64, coo_sparse=meta_graph_pb2.TensorInfo.CooSparse(
            values_tensor_name="v:0", indices_tensor_name="i:0",
            dense_shape_tensor_name="s:0")))
    signatures.signature_def["empty"].method_name = ""
    response = get_model_metadata_pb2.GetModelMetadataResponse()
    response.model_spec.name = "bert"
    response.model_spec.version.value = 2
    packed = any_pb2.Any()
    packed.Pack(signatures)
    response.metadata["signature_def"].CopyFrom(packed)
    got = messages.metadata_response(response.SerializeToString())
    assert got == {"model_spec": message_to_dict(response.model_spec),
                   "metadata": {"signature_def": message_to_dict(signatures)}}
    request = get_model_metadata_pb2.GetModelMetadataRequest.FromString(
        messages.metadata_request("bert", 2))
    assert (request.model_spec.name, request.model_spec.version.value,
            list(request.metadata_field)) == ("bert", 2, ["signature_def"])


def test_status_answer_is_tf_servings_json():
    get_model_status_pb2 = _serving_api("get_model_status_pb2")
    response = get_model_status_pb2.GetModelStatusResponse()
    ok = response.model_version_status.add(version=3, state=30)
    ok.status.error_code = 0
    failed = response.model_version_status.add(version=4, state=50)
    failed.status.error_code = 3
    failed.status.error_message = "bad graph"
    assert messages.status_response(response.SerializeToString()) == message_to_dict(response)
    request = get_model_status_pb2.GetModelStatusRequest.FromString(
        messages.status_request("qa"))
    assert request.model_spec.name == "qa" and not request.model_spec.HasField("version")


def test_enum_names_are_tensorflows():
    get_model_status_pb2 = _serving_api("get_model_status_pb2")
    for number, name in DTYPE_NAMES.items():
        assert types_pb2.DataType.Name(number) == name
    state = get_model_status_pb2.ModelVersionStatus.State
    assert messages.STATES == {number: state.Name(number) for number in state.values()}
    code = get_model_status_pb2.ModelVersionStatus.DESCRIPTOR.fields_by_name[
        "status"].message_type.fields_by_name["error_code"].enum_type
    assert messages.ERROR_CODES == {v.number: v.name for v in code.values
                                    if not v.name.startswith("DO_NOT_USE")}


def test_fields_take_the_last_value_of_a_singular_field():
    assert Fields(field(1, b"a") + field(1, b"b")).text(1) == "b"
