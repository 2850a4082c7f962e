"""Every export kind, loaded as TensorFlow Serving loads it, in the runtimes TF Serving links.

Each export is restored through the Session-based SavedModel loader (SaverDef restore, then
the `signature_def` tensors; `tests/export/run_session_bundle.py`) with TF Text present only
as its kernel libraries, in three runtimes: this environment (TF 2.21), TF 2.20.0 + TF Text
2.20.0 (TF Serving 2.20) and TF 2.12.1 + TF Text 2.12.1 (the TF Text of TF Serving
2.13-2.19), the last two in virtual environments holding nothing else
(`tests/export/runtimes`). Every output is compared with the in-process result on the same
strings (hard cases and real text): floats within 1e-5 (1e-3 for the `export --precision`
bfloat16 / float16 cases), strings, ids and labels identical. `classify_xla`, `tag_xla` and
`span_qa_xla` (`export --xla`) check that each runtime runs the XLA-compiled network, per-token
outputs cut back to the packed length; `classify_windows` and
`pair_windows`, that long texts read in windows (flattened into one batch, logits gathered
back per text) answer there as in process.

Before exports were written with `keras.export.ExportArchive`, every kind with weights
failed here with "Could not find variable ..." (tensorflow/serving#2250).
"""

from __future__ import annotations

import os
import sys

import numpy as np
import pytest
import tensorflow as tf

from keras_bert.checkpoints import load_model_dir
from keras_bert.export.hub_pair import export_hub_pair
from keras_bert.models.encoder import INPUT_NAMES
from keras_bert.tasks.task_dir import export_model
from keras_bert.tasks.task_model import TextTaskModel
from keras_bert.text.preprocessor import BertPreprocessor
from tests.export.helpers import (
    make_tiny_model_dir,
    make_tiny_task_dir,
    read_outputs,
    run_session_jobs,
)
from tests.export.run_session_bundle import save_arrays
from tests.export.runtimes import RUNTIMES, runtime_python
from tests.support.reference import minilm_dir

pytestmark = [pytest.mark.slow, pytest.mark.timeout(2400)]  # the first builds two venvs

CORPUS = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(__file__))),
                      "keras_bert", "data", "corpus", "moby_dick.txt")
HARD = ["", "   \t\n ", "call me ishmael. " * 313,  # 5,008 characters
        "Naïve café owners ate crème brûlée. ÀÉÎÕÜ", "北京是中国的首都。東京タワー",
        "the whale 🐳 and the cat 😀 sat", "zero\u200bwidth\u200d joiner\ufeff here",
        b"invalid \xff\xfe utf-8 \xc3 bytes".decode("utf-8", "surrogateescape")]


def _real_lines(count: int = 12) -> list[str]:
    with open(CORPUS, encoding="utf-8") as f:
        lines = [line.strip() for line in f if len(line.split()) > 3]
    return [line[:600] for line in lines[:count]]


def _as_bytes(texts) -> np.ndarray:
    return np.array([t.encode("utf-8", "surrogateescape") for t in texts], dtype=object)


TEXTS = _as_bytes(HARD + _real_lines())
# Long texts read in windows (stride 8, at most 4 a text; the 5,008-character text needs
# more), their logits averaged.
WINDOWS = {"mode": "windows", "doc_stride": 8, "max_windows": 4, "aggregate": "mean"}
TASKS = {  # export name -> (task block, labels, export options)
    "classify": ({"kind": "classify", "seq_length": 32}, ["neg", "pos", "plot"], {}),
    "pair_classify": ({"kind": "classify", "seq_length": 32, "pair": True},
                      ["entail", "neutral", "contradict"], {}),
    "regress": ({"kind": "regress", "seq_length": 32}, None, {}),
    "multilabel": ({"kind": "multilabel", "seq_length": 32, "thresholds": [0.49, 0.5, 0.51]},
                   ["insult", "threat", "toxic"], {}),
    "tag": ({"kind": "tag", "seq_length": 24, "num_classes": 3}, ["B-PER", "I-PER", "O"], {}),
    "span_qa": ({"kind": "squad", "seq_length": 48, "max_query_length": 12, "doc_stride": 16,
                 "version_2": True}, None, {}),
    "classify_windows": ({"kind": "classify", "seq_length": 32, "long_text": WINDOWS},
                         ["neg", "pos", "plot"], {}),
    "pair_windows": ({"kind": "classify", "seq_length": 32, "pair": True,
                      "long_text": WINDOWS}, ["entail", "neutral", "contradict"], {}),
    "embed": (None, None, {}),
    "embed_static": (None, None, {"seq_length": 16}),
    "classify_bfloat16": ({"kind": "classify", "seq_length": 32}, ["neg", "pos", "plot"],
                          {"precision": "bfloat16"}),
    "embed_float16": (None, None, {"precision": "float16"}),
    "classify_xla": ({"kind": "classify", "seq_length": 32}, ["neg", "pos", "plot"],
                     {"xla": True}),
    "tag_xla": ({"kind": "tag", "seq_length": 24, "num_classes": 3}, ["B-PER", "I-PER", "O"],
                {"xla": True}),
    "span_qa_xla": ({"kind": "squad", "seq_length": 48, "max_query_length": 12,
                     "doc_stride": 16, "version_2": True}, None, {"xla": True}),
}


def _text_inputs(kind_task: dict | None) -> dict:
    kind = (kind_task or {}).get("kind")
    if kind == "squad":
        return {"question": TEXTS[::-1].copy(), "context": TEXTS}
    if kind_task and kind_task.get("pair"):
        return {"text": TEXTS, "text_b": TEXTS[::-1].copy()}
    return {"text": TEXTS}


def _numpy(outputs: dict) -> dict:
    return {name: np.asarray(value) for name, value in outputs.items()}


# Built only for the older runtimes: in this one, tests/export/test_export_precision.py
# (real MiniLM, float32 / bfloat16 / float16) and tests/export/test_export_xla.py load the
# same export options in TF Serving's Session loader every run (building them here too: ~30 s
# of CI's time per run, 2026-11-27).
VARIANTS = ("classify_bfloat16", "embed_float16", "classify_xla", "tag_xla", "span_qa_xla")


class Exports:
    """Each export and the in-process answers, built on first use: `[(export dir, signature,
    inputs, in-process outputs)]` per name."""

    def __init__(self, root):
        self.root = root
        self.vocab = os.path.join(minilm_dir(), "vocab.txt")  # real WordPiece on real text
        self.cases: dict[str, list] = {}

    def __getitem__(self, name: str) -> list:
        if name not in self.cases:
            self.cases[name] = self._hub() if name == "hub" else self._export(name)
        return self.cases[name]

    def _export(self, name: str) -> list:
        task, labels, options = TASKS[name]
        root = self.root / name
        if task is None:
            model_dir = make_tiny_model_dir(root, vocab_file=self.vocab)
        else:
            model_dir = make_tiny_task_dir(root, task, labels, vocab_file=self.vocab)
        exported = export_model(model_dir, str(root / "export"), **options)
        module = exported.module  # the functions the export holds, traced in this process
        text_inputs = _text_inputs(task)
        # The export's own `preprocess` signature, which every kind has: besides the model
        # inputs it says where each row (window) comes from, which `serve_ids` does not take.
        packed = module.traced("preprocess")(**{k: tf.constant(v)
                                                for k, v in text_inputs.items()})
        ids_inputs = {k: packed[k].numpy() for k in INPUT_NAMES}
        return [
            (exported.path, "serving_default", text_inputs,
             _numpy(module.text_function()(**{k: tf.constant(v)
                                              for k, v in text_inputs.items()}))),
            (exported.path, "serve_ids", ids_inputs,
             _numpy(module.ids_function()(**{k: tf.constant(v)
                                            for k, v in ids_inputs.items()}))),
        ]

    def _hub(self) -> list:
        base = load_model_dir(make_tiny_model_dir(self.root / "hub_base", vocab_file=self.vocab))
        encoder, tokenizer = base.load_encoder(), base.tokenizer()
        paths = export_hub_pair(encoder, BertPreprocessor(tokenizer), str(self.root / "hub"),
                                default_seq_length=32)
        packed = {k: v.numpy() for k, v in
                  tf.saved_model.load(paths["preprocess"])(tf.constant(TEXTS)).items()}
        from keras_bert.text.packer import BertPacker

        ids = tokenizer.special_token_ids
        want_packed = BertPacker(32, ids["cls"], ids["sep"], ids["pad"])(
            [tokenizer.tokenize(tf.constant(TEXTS))])
        out = encoder({k: tf.constant(v) for k, v in packed.items()}, training=False)
        pooled = out["pooled_output"].numpy()
        return [
            (paths["preprocess"], "serving_default", {"text": TEXTS},
             {k: v.numpy() for k, v in want_packed.items()}),
            (paths["encoder"], "serving_default", packed,
             {"pooled_output": pooled, "default": pooled,
              "sequence_output": out["sequence_output"].numpy()}),
        ]


@pytest.fixture(scope="module")
def exports(tmp_path_factory) -> Exports:
    return Exports(tmp_path_factory.mktemp("matrix"))


def _run_runtime(python: str, exports, workdir) -> dict:
    jobs, where = [], {}
    for name, cases in exports.items():
        for index, (path, signature, inputs, _) in enumerate(cases):
            stem = os.path.join(str(workdir), f"{name}-{index}")
            save_arrays(stem + "-in.npz", inputs)
            jobs.append({"export": path, "signature": signature, "inputs": stem + "-in.npz",
                         "outputs": stem + "-out.npz"})
            where[(name, index)] = stem + "-out.npz"
    printed = run_session_jobs(python, jobs, workdir)
    return {"printed": printed,
            "outputs": {key: read_outputs(path) for key, path in where.items()}}


# The older runtimes are environments (`slow(env=...)`): CI runs each in one landing with the
# other tests that build it (tests/export/test_runtime_check.py, tests/test_kaggle_wheelhouse.py;
# tests/support/schedule.py). The README's tier audits every export's ops against both
# runtimes' op lists (tests/export/test_op_audit.py).
RUNTIME_ENVS = {"tensorflow-2.12.1": "tf-2.12.1", "tensorflow-2.20.0": "tf-2.20.0"}
NAMES = {"this": [n for n in [*TASKS, "hub"] if n not in VARIANTS],
         **{runtime: [*TASKS, "hub"] for runtime in RUNTIMES}}
CASES = [pytest.param(runtime, name, id=f"{runtime}-{name}", marks=(
    [pytest.mark.slow(env=RUNTIME_ENVS[runtime])] if runtime in RUNTIME_ENVS else []))
    for runtime, names in NAMES.items() for name in names]


@pytest.fixture(scope="module")
def runtimes(exports, tmp_path_factory):
    """`runtime name -> outputs of every export job there`, each runtime run on first use
    (one process per runtime, all its exports). A runtime that fails fails each of its
    cases with its first error, without running again (a crashed runtime would otherwise
    rerun once per case: 16 minutes of CI)."""
    done, failed = {}, {}

    def outputs(name: str) -> dict:
        if name in failed:
            raise AssertionError(f"{name} failed on its first case: {failed[name]}")
        if name not in done:
            python = sys.executable if name == "this" else runtime_python(name)
            cases = {export: exports[export] for export in NAMES[name]}
            try:
                done[name] = _run_runtime(python, cases, tmp_path_factory.mktemp(name))
            except Exception as error:
                failed[name] = str(error)[-1500:]
                raise
        return done[name]
    return outputs


def _assert_same(got: dict, want: dict, what: str, atol: float = 1e-5) -> None:
    assert "error" not in got, f"{what}: {got.get('error')}"
    assert sorted(got) == sorted(want), what
    for key, expected in want.items():
        value = got[key]
        assert value.shape == expected.shape, f"{what} {key}: {value.shape} != {expected.shape}"
        if expected.dtype.kind == "f":
            np.testing.assert_allclose(value, expected, rtol=0, atol=atol,
                                       err_msg=f"{what} {key}")
        else:
            np.testing.assert_array_equal(value, expected, err_msg=f"{what} {key}")


@pytest.mark.parametrize(("runtime_name", "name"), CASES)
def test_export_answers_as_in_process(runtimes, exports, runtime_name, name):
    result = runtimes(runtime_name)
    if runtime_name != "this":
        version = RUNTIMES[runtime_name][0]
        assert f"tensorflow {version}:" in result["printed"]
    for index, (_, signature, _, want) in enumerate(exports[name]):
        got = result["outputs"][(name, index)]
        # bfloat16/float16 matmuls: other TF versions' kernels round differently.
        half = TASKS.get(name, (None, None, {}))[2].get("precision", "float32") != "float32"
        _assert_same(got, want, f"{runtime_name} {name} {signature}", 1e-3 if half else 1e-5)


@pytest.mark.parametrize("name", [  # the variants when an older runtime builds them
    pytest.param(n, marks=[pytest.mark.slow(env="tf-2.12.1")] if n in VARIANTS else [])
    for n in TASKS])
def test_each_variable_is_stored_once(exports, name):
    path = exports[name][0][0]
    model_dir = os.path.join(os.path.dirname(os.path.dirname(path)),
                             "model" if TASKS[name][0] is None else "task")
    weights = sum(int(np.prod(w.shape)) * 4  # all float32
                  for w in TextTaskModel.load(model_dir).serving_functions().model.weights)
    reader = tf.train.load_checkpoint(os.path.join(path, "variables", "variables"))
    shapes = reader.get_variable_to_shape_map()
    dtypes = reader.get_variable_to_dtype_map()
    stored = sum(int(np.prod(shape)) * dtypes[key].size for key, shape in shapes.items()
                 if key != "_CHECKPOINTABLE_OBJECT_GRAPH")
    assert stored == weights
