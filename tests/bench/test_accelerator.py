"""`bench/accelerator.py` and what travels with it (`bench/support/accelerator_data.py`): a lent GPU
gives one call, so a failing part must not lose the others; the fine-tuned weights come back
in files small enough for that machine to send; a model fitted under Keras' JAX backend
answers the same in its TensorFlow export, loaded as TF Serving loads it; and the profile's
reader (`bench/support/accelerator_xplane.py`, no protobuf there) puts each traced operation in its
category."""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys

import numpy as np
import pytest

from tests.support.reference import require

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def test_weights_travel_in_files_under_the_limit_and_come_back_equal(tmp_path, monkeypatch):
    from bench.support import accelerator_data

    monkeypatch.setattr(accelerator_data, "CHUNK_BYTES", 1000)
    rng = np.random.default_rng(0)
    # 1,600 bytes: over the limit alone, so cut into row blocks; then two small ones.
    weights = [rng.normal(size=(100, 8)).astype("float16"),
               rng.normal(size=(8,)).astype("float16"), np.array(0.5, "float16")]
    files = accelerator_data.write_weights(str(tmp_path), weights)
    assert len(files) >= 2
    for name in files:
        with np.load(tmp_path / name) as data:
            assert sum(data[k].nbytes for k in data.files) <= 1000, name
    shapes = [list(w.shape) for w in weights]
    back = accelerator_data.read_weights(str(tmp_path), files, shapes)
    for sent, received in zip(weights, back, strict=True):
        assert received.dtype == np.float32 and np.array_equal(received, sent)
    # A file lost on the way: an error naming the weight, never a short weight.
    with pytest.raises(ValueError, match=r"weight 0 \(\[100, 8\]\) is of shape"):
        accelerator_data.read_weights(str(tmp_path), files[1:], shapes)


def test_a_failing_part_is_recorded_and_the_run_goes_on(tmp_path):
    from bench.accelerator import _part, _write

    path = tmp_path / "result.json"
    args = argparse.Namespace(strict=False, json=str(path))
    result = {"pretraining": [_part(args, lambda: 1 / 0), _part(args, lambda: {"batch": 8})]}
    _write(args, result)
    rows = json.loads(path.read_text())["pretraining"]
    assert rows == [{"error": "ZeroDivisionError: division by zero"}, {"batch": 8}]
    with pytest.raises(ZeroDivisionError):  # --strict, as the quick mode runs
        _part(argparse.Namespace(strict=True, json=None), lambda: 1 / 0)


def test_the_report_has_a_table_per_part_that_ran_and_no_blank_lines():
    from bench.accelerator import report

    step = {"model": "base", "batch": 8, "sequences_per_s": 123.4, "model_tflops": 1.5,
            "mfu": 0.25, "ms_per_step": 64.8}
    tune = {"train": 40, "held_out": 20, "epochs": 1, "precision": "float32", "fit_s": 3.0,
            "examples_per_s": 13.3, "accuracy": 0.75, "majority": 0.5}
    both = report({"pretraining": [step], "finetuning": tune}, "float32").splitlines()
    assert both[2].split("|")[6].strip() == "123.4" and both[3] == ""
    assert "0.7500" in both[-1]
    for result in ({"pretraining": [], "finetuning": tune},  # --skip-pretraining
                   {"pretraining": [step]},                   # --skip-finetuning
                   {"pretraining": [], "finetuning": {"error": "OOM"}}):
        lines = report(result, "float32").splitlines()
        assert lines[0] and lines[-1], lines  # neither starts nor ends with a blank line
    failed = report({"pretraining": [], "finetuning": {"error": "OOM"}}, "float32")
    assert failed == "fine-tuning failed: OOM"


def test_the_report_shows_seq_dropout_precision_float8_loss_and_the_profile():
    from bench.accelerator import report
    from bench.support.accelerator_profile import CATEGORIES

    shares = dict.fromkeys(CATEGORIES, 0.0) | {"matrix products": 0.75, "attention": 0.25}
    profile = {"shares": shares, "ms_per_step": {c: 4 * v for c, v in shares.items()},
               "device_ms_per_step": 4.0, "busy_share": 0.5, "optimizer_separated": True}
    bf16 = {"model": "base", "seq": 512, "attention_dropout": 0.1, "batch": 256,
            "precision": "mixed_bfloat16", "sequences_per_s": 10.0, "last_loss": 7.5,
            "profile": profile}
    float8 = {**bf16, "precision": "float8/mixed_bfloat16", "last_loss": 7.25,
              "bf16_last_loss": 7.5}
    del float8["profile"]
    failed = {"model": "large", "seq": 512, "attention_dropout": 0.0, "error": "refused"}
    lines = report({"pretraining": [bf16, float8, failed]}, "float32").splitlines()
    assert [c.strip() for c in lines[2].split("|")[1:6]] == [
        "base", "512", "0.1", "256", "mixed_bfloat16"]
    assert lines[3].split("|")[-2].strip() == "7.2500 (bf16 7.5000)"
    assert lines[4].split("|")[6].strip() == "refused"
    assert "| matrix products | 75.0% (3.00 ms) |" in lines
    assert "| device busy over its span | 50% |" in lines


def _interned(seen: dict, table, key: str) -> int:
    """The id of `key` in a plane's metadata `table` (a new entry named `key` the first
    time)."""
    if key not in seen:
        seen[key] = len(seen) + 1
        table[seen[key]].name = key
    return seen[key]


def _space(planes):
    """A serialized XSpace: `planes` is [(name, lines, metadata)], lines [(line name,
    [(event name, offset ps, duration ps, {stat: value})])], metadata {event name: {stat:
    bytes}}; a str stat value is sent as a reference to stat metadata, as the GPU tracer
    sends `hlo_op`, an int as int64."""
    xplane_pb2 = require("tensorflow.tsl.profiler.protobuf.xplane_pb2")
    space = xplane_pb2.XSpace()
    for name, lines, metadata in planes:
        plane = space.planes.add(name=name)
        stats_seen, events_seen = {}, {}

        def stat_id(key, seen=stats_seen, plane=plane):
            return _interned(seen, plane.stat_metadata, key)

        def event_id(key, seen=events_seen, plane=plane):
            return _interned(seen, plane.event_metadata, key)

        for key, stats in metadata.items():
            for stat, value in stats.items():
                plane.event_metadata[event_id(key)].stats.add(
                    metadata_id=stat_id(stat), bytes_value=value)
        for line_name, line_events in lines:
            line = plane.lines.add(name=line_name, timestamp_ns=1000)
            for key, offset, duration, stats in line_events:
                event = line.events.add(metadata_id=event_id(key), offset_ps=offset,
                                        duration_ps=duration)
                for stat, value in stats.items():
                    if isinstance(value, str):
                        event.stats.add(metadata_id=stat_id(stat), ref_value=stat_id(value))
                    else:
                        event.stats.add(metadata_id=stat_id(stat), int64_value=value)
    return space.SerializeToString()


def _hlo(module, instructions):
    """A serialized HloProto: `instructions` [(computation id, name, opcode, op_name,
    custom-call target, called computation ids)]."""
    hlo_pb2 = require("tensorflow.compiler.xla.service.hlo_pb2")
    proto = hlo_pb2.HloProto()
    proto.hlo_module.name = module
    computations = {}
    for computation, name, opcode, op_name, target, calls in instructions:
        if computation not in computations:
            computations[computation] = proto.hlo_module.computations.add(
                id=computation, name=f"computation.{computation}")
        instruction = computations[computation].instructions.add(
            name=name, opcode=opcode, custom_call_target=target)
        instruction.metadata.op_name = op_name
        instruction.called_computation_ids.extend(calls)
    return proto.SerializeToString()


LAYER = "jit(train_step)/jvp(bert_encoder)/transformer_layer_0"
# name: (opcode, op_name, custom-call target, called computations, category)
OPS = {
    "fusion.1": ("fusion", f"{LAYER}/intermediate/dot_general", "", (2,), "matrix products"),
    "fusion.2": ("fusion", f"{LAYER}/attention/cond/branch_1_fun/exp", "", (3,), "attention"),
    "custom-call.3": ("custom-call", f"{LAYER}/attention/cond/branch_1_fun/dot_product_attention",
                      "__cudnn$fmhaSoftmax", (), "attention"),
    "fusion.4": ("fusion", "jit(train_step)/adam_w/add", "", (3,), "optimizer"),
    "fusion.5": ("fusion", f"{LAYER}/output/layer_norm/rsqrt", "", (3,),
                 "element-wise fusions"),
    # A projection of the attention layer is a matrix product, not attention.
    "fusion.6": ("fusion", f"{LAYER}/attention/query/dot_general", "", (2,), "matrix products"),
    "custom-call.7": ("custom-call", f"{LAYER}/output/dot_general", "__cublas$lt$matmul", (),
                      "matrix products"),
    "all-reduce.8": ("all-reduce", "jit(train_step)/psum", "", (), "other"),
}


def test_the_profile_puts_each_traced_operation_in_its_category(tmp_path):
    """A GPU trace as `jax.profiler.trace` writes it: kernels on a stream line, each naming
    its HLO instruction, the modules' HloProtos in `/host:metadata`; a derived line
    repeating the kernels is not counted twice. Then a host's trace with no HLO modules: a
    `while` counts through the operations nested in it, and the optimizer is not found."""
    from bench.support.accelerator_profile import CATEGORIES, summarise, summarise_folders

    hlo = _hlo("jit_train_step", [(1, n, op, scope, target, calls)
                                  for n, (op, scope, target, calls, _) in OPS.items()]
               + [(2, "dot.9", "dot", "", "", ()), (3, "exponential.10", "exponential", "",
                                                    "", ())])
    kernels = [(n, 10_000 * i, 1_000 * i, {"hlo_op": n, "hlo_module": "jit_train_step",
                                            "program_id": 7})
               for i, n in enumerate(OPS, start=1)]
    kernels.append(("MemcpyH2D", 500_000, 50_000, {}))
    kernels.append(("sm90_xmma_gemm_bf16bf16", 600_000, 100_000, {"hlo_op": "gemm.99",
                                                                  "hlo_module": "other"}))
    gpu = _space([("/host:metadata", [], {"jit_train_step(7)": {"Hlo Proto": hlo}}),
                  ("/device:GPU:0", [("Stream #13(Compute)", kernels),
                                     ("XLA Ops", kernels)], {}),
                  ("/host:CPU", [("python", [("fusion.1", 0, 10**9, {"hlo_op": "fusion.1"})])],
                   {})])
    (tmp_path / "base" / "plugins").mkdir(parents=True)
    (tmp_path / "base" / "plugins" / "h.xplane.pb").write_bytes(gpu)
    summary = summarise_folders(str(tmp_path))["base"]
    picoseconds = dict.fromkeys(CATEGORIES, 0)
    for i, (_, _, _, _, category) in enumerate(OPS.values(), start=1):
        picoseconds[category] += 1_000 * i
    picoseconds["copies / input"] += 50_000
    picoseconds["matrix products"] += 100_000
    total = sum(picoseconds.values())
    assert summary["optimizer_separated"] and summary["steps"] == 3
    for category, value in picoseconds.items():
        assert summary["shares"][category] == pytest.approx(value / total), category
        assert summary["ms_per_step"][category] == pytest.approx(value / 1e9 / 3), category
    assert summary["busy_share"] == pytest.approx(total / (700_000 - 10_000))  # first to last
    # A device plane whose lines are not named "Stream": its derived views left out still.
    renamed = _space([("/device:GPU:0", [("#13", kernels[-2:]), ("XLA Ops", kernels)], {})])
    (tmp_path / "renamed").mkdir()
    (tmp_path / "renamed" / "h.xplane.pb").write_bytes(renamed)
    summary = summarise(str(tmp_path / "renamed"), steps=1)
    assert summary["device_ms_per_step"] == pytest.approx(150_000 / 1e9)
    assert summary["shares"]["copies / input"] == pytest.approx(1 / 3)

    host = _space([("/host:CPU", [("tf_XLAEigen", [
        ("ThunkExecutor::Execute", 0, 90_000, {}),  # not an XLA operation: no hlo_op
        ("while.11", 0, 80_000, {"hlo_op": "while.11"}),
        ("loop_add_fusion", 10_000, 30_000, {"hlo_op": "loop_add_fusion"}),
        ("wrapped_dot.12", 40_000, 20_000, {"hlo_op": "wrapped_dot.12"})])], {})])
    (tmp_path / "host").mkdir()
    (tmp_path / "host" / "vm.xplane.pb").write_bytes(host)
    (tmp_path / "host" / "steps.json").write_text('{"steps": 1}')  # as `capture` writes it
    summary = summarise(str(tmp_path / "host"))
    assert not summary["optimizer_separated"]
    assert summary["ms_per_step"]["element-wise fusions"] == pytest.approx(30_000 / 1e9)
    assert summary["ms_per_step"]["matrix products"] == pytest.approx(20_000 / 1e9)
    assert summary["device_ms_per_step"] == pytest.approx(50_000 / 1e9)


def _bench(*arguments, backend="tensorflow") -> str:
    env = dict(os.environ, KERAS_BACKEND=backend)
    run = subprocess.run([sys.executable, "bench/accelerator.py", *arguments], cwd=REPO,
                         env=env, capture_output=True, text=True, timeout=600)
    assert run.returncode == 0, run.stderr[-3000:]
    return run.stdout


@pytest.mark.slow  # three processes, ~30 s; CI runs it once a cycle
@pytest.mark.needs_jax
def test_a_model_fitted_under_jax_answers_the_same_in_its_tensorflow_export(tmp_path):
    data, answers = str(tmp_path / "data"), str(tmp_path / "answers")
    _bench("prepare", data, "--quick")
    _bench("run", "--data", data, "--skip-pretraining", "--epochs", "1", "--strict",
           "--answers", answers, backend="jax")
    out = "\n" + _bench("verify", "--quick", "--data", data, "--answers", answers)
    result = json.loads(out[out.rindex("\n{") + 1:])  # the JSON it prints last
    assert result["held_out"] == 32 and result["single_window"] == 1.0
    # float32 on both sides, the same float16-rounded weights: only summation order differs.
    assert result["export_vs_float32_max_abs"] < 1e-5
    assert result["labels_equal_float32"] == 1.0
