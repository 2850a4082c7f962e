"""Tests of `keras_bert.export.op_audit`: op lists, SavedModel op listing, targets, errors."""

from __future__ import annotations

import pytest
import tensorflow as tf
import tensorflow_text as tf_text

from keras_bert.export.op_audit import (
    DEFAULT_TARGET,
    OP_LISTS,
    STRIPPED_OP_LIST,
    TARGETS,
    UnsupportedOpError,
    audit,
    check,
    load_op_list,
    ops_in_concrete_function,
    ops_in_saved_model,
)

# Every op `keras_bert.text.BertTokenizer` documents (its module docstring).
TOKENIZER_OPS = [
    "StaticRegexReplace", "StaticRegexFullMatch", "StringLower", "StringLength",
    "StringSplitV2", "UnicodeTranscode", "UnicodeDecode", "UnicodeDecodeWithOffsets",
    "UnicodeEncode", "UnsortedSegmentJoin", "LookupTableFindV2", "HashTableV2",
    "LookupTableImportV2", "LowerBound", "UpperBound", "DynamicStitch", "TensorScatterUpdate",
    "ScatterNd", "Cumsum", "Where", "SelectV2", "GatherV2",
    "NormalizeUTF8", "RegexSplitWithOffsets", "FastWordpieceTokenizeWithOffsets",
]
# In core TF 2.20 (and 2.21, which runs these tests), in neither 2.12 nor 2.13.
NEWER_CORE_OP = "FFTND"


class _Module(tf.Module):
    """A SavedModel root holding one `tf.function` as `serving_default`."""

    def __init__(self, fn):
        super().__init__()
        self.fn = fn


def _save(tmp_path, fn, name="model"):
    path = str(tmp_path / name)
    tf.saved_model.save(_Module(fn), path, signatures={"serving_default": fn})
    return path


@pytest.fixture(scope="module")
def module_tmp(tmp_path_factory):
    return tmp_path_factory.mktemp("op_audit")


@pytest.fixture(scope="module")
def core_model(module_tmp):
    @tf.function(input_signature=[tf.TensorSpec([None, 3], tf.float32),
                                  tf.TensorSpec([None], tf.string)])
    def core(x, text):
        y = tf.matmul(x, tf.ones([3, 2]))
        words = tf.strings.split(tf.strings.lower(text))
        return {"y": y, "words": words.flat_values}

    return _save(module_tmp, core, "core")


@pytest.fixture(scope="module")
def round_robin_model(module_tmp):
    trimmer = tf_text.RoundRobinTrimmer(max_seq_length=4)

    @tf.function(input_signature=[tf.TensorSpec([None, None], tf.int32),
                                  tf.TensorSpec([None, None], tf.int32)])
    def trim(a, b):
        trimmed = trimmer.trim([tf.RaggedTensor.from_tensor(a, padding=0),
                                tf.RaggedTensor.from_tensor(b, padding=0)])
        return {"a": trimmed[0].flat_values, "b": trimmed[1].flat_values}

    return _save(module_tmp, trim, "round_robin")


# ------------------------------------------------------------------ the lists
def test_op_lists_are_sane():
    cores = [load_op_list(name) for name in OP_LISTS if not name.startswith("tf-text")]
    for core in cores:
        assert len(core) > 1500
        assert {"MatMul", "StringSplitV2", "StaticRegexReplace", "PyFunc"} <= core
        assert not any(op.startswith("TFText>") for op in core)
    text_212, text_220 = load_op_list("tf-text-2.12.1"), load_op_list("tf-text-2.20.0")
    for text in (text_212, text_220):
        assert {"WordpieceTokenizeWithOffsets", "FastWordpieceTokenizeWithOffsets",
                "NormalizeUTF8", "RegexSplitWithOffsets"} <= text
        assert not text & load_op_list("tf-2.20-core")
    new_in_220 = {"TFText>RoundRobinTrim", "TFText>RoundRobinGenerateMasks",
                  "TFText>Utf8Binarize"}
    assert not new_in_220 & text_212
    assert text_220 - text_212 == new_in_220
    assert NEWER_CORE_OP in load_op_list("tf-2.20-core")
    assert NEWER_CORE_OP not in load_op_list("tf-2.13-core") | load_op_list("tf-2.12-core")


def test_targets():
    default = TARGETS[DEFAULT_TARGET]
    assert DEFAULT_TARGET == "serving-2.13+"
    assert "TFText>RoundRobinTrim" not in default.ops
    assert "TFText>RoundRobinTrim" in TARGETS["serving-2.20"].ops
    assert default.ops <= TARGETS["serving-2.20"].ops
    assert "SegmentMaxV2" in default.ops  # added by core 2.13: not refused
    assert "_MklAdd" not in default.ops  # removed before 2.20
    assert not {"PyFunc", "EagerPyFunc"} & default.ops


def test_tokenizer_ops_are_in_the_default_target():
    missing = [op for op in TOKENIZER_OPS if op not in TARGETS[DEFAULT_TARGET].ops]
    assert not missing


# ------------------------------------------------------------------ SavedModels
def test_core_graph_passes_default_target(core_model):
    ops = ops_in_saved_model(core_model)
    assert {"MatMul", "StringLower", "StringSplitV2", "StatefulPartitionedCall"} <= set(ops)
    assert any(where.startswith("__inference_core") for where in ops["MatMul"])
    assert ops["StatefulPartitionedCall"] == ["graph"]
    # Every op the saver recorded was found in some graph or function.
    assert not [op for op, where in ops.items() if where == [STRIPPED_OP_LIST]]
    report = check(core_model)
    assert report.ok and report.target.name == DEFAULT_TARGET
    assert "all" in report.message()


def test_round_robin_trim_fails_default_and_passes_serving_220(round_robin_model):
    report = audit(round_robin_model)
    assert not report.ok
    assert list(report.missing) == ["TFText>RoundRobinTrim"]
    with pytest.raises(UnsupportedOpError) as excinfo:
        check(round_robin_model, "serving-2.13+")
    message = str(excinfo.value)
    (function,) = report.missing["TFText>RoundRobinTrim"]
    assert "TFText>RoundRobinTrim" in message and function in message
    assert function.startswith("__inference_trim")
    assert "signature serving_default" in message
    assert "TF Text 2.20.0" in message and "serving-2.20" in message
    assert excinfo.value.report.missing == report.missing
    assert check(round_robin_model, "serving-2.20").ok


def test_newer_core_op_fails_default(tmp_path):
    @tf.function(input_signature=[tf.TensorSpec([None, None], tf.complex64)])
    def spectrum(x):
        return {"y": tf.signal.fftnd(x)}

    path = _save(tmp_path, spectrum)
    with pytest.raises(UnsupportedOpError, match=rf"{NEWER_CORE_OP}: used in __inference_spec"):
        check(path)
    assert "core TensorFlow 2.20" in audit(path).hints[NEWER_CORE_OP]
    assert check(path, "serving-2.20").ok


def test_bert_tokenizer_saved_model_passes_default(tmp_path):
    from keras_bert.text import BertTokenizer

    vocab = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "hello", "world", "##s", ",", "!"]
    tokenizer = BertTokenizer(vocab)
    fn = tf.function(lambda text: {"ids": tokenizer.tokenize(text).flat_values},
                     input_signature=[tf.TensorSpec([None], tf.string)])
    module = tf.Module()
    module.tokenizer, module.fn = tokenizer, fn
    path = str(tmp_path / "tokenizer")
    tf.saved_model.save(module, path, signatures={"serving_default": fn})
    report = check(path)
    assert {"FastWordpieceTokenizeWithOffsets", "NormalizeUTF8", "HashTableV2",
            "LookupTableImportV2"} <= set(report.ops)


# ------------------------------------------------------------------ functions
def test_ops_in_concrete_function_covers_nested_functions():
    @tf.function(input_signature=[tf.TensorSpec([], tf.bool), tf.TensorSpec([None], tf.string)])
    def branchy(flag, text):
        return tf.cond(flag, lambda: tf.strings.lower(text), lambda: tf.strings.upper(text))

    ops = ops_in_concrete_function(branchy)
    assert "StringLower" in ops and "StringUpper" in ops
    outer = ops["Placeholder"][0]
    assert outer not in ops["StringLower"]  # found inside the branch function
    assert audit(branchy).ok
    assert audit(branchy.get_concrete_function()).ok


def test_py_function_fails_every_target():
    @tf.function(input_signature=[tf.TensorSpec([None], tf.float32)])
    def python(x):
        return tf.py_function(lambda v: v * 2, [x], tf.float32)

    for target in TARGETS:
        report = audit(python, target)
        assert "EagerPyFunc" in report.missing
        assert "Python" in report.hints["EagerPyFunc"]


def test_explicit_op_list_files_and_unknown_target(core_model, tmp_path):
    listed = tmp_path / "ops.txt"
    listed.write_text("# my model server\nMatMul\n\nConst\n")
    report = audit(core_model, str(listed))
    assert "MatMul" not in report.missing and "StringSplitV2" in report.missing
    report = audit(core_model, [str(listed), "tf-2.20-core"])
    assert report.ok
    with pytest.raises(ValueError, match="Unknown target"):
        audit(core_model, "serving-1.0")
    with pytest.raises(FileNotFoundError):
        ops_in_saved_model(tmp_path)
