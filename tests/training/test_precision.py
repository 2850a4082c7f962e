"""`--precision auto`: the dtype policy chosen from the hardware, by the documented rule."""

import pytest

from keras_bert.training.precision import (
    PRECISIONS,
    cpu_flags,
    hardware_precision,
    precision_line,
    resolve_precision,
)


@pytest.mark.parametrize("tpus, gpus, flags, want", [
    (8, [], set(), "mixed_bfloat16"),
    (0, [(8, 0)], set(), "mixed_bfloat16"),
    (0, [(9, 0), (8, 6)], set(), "mixed_bfloat16"),
    (0, [(7, 5)], {"amx_bf16"}, "mixed_float16"),  # the GPU decides, not the host CPU
    (0, [(8, 0), (7, 0)], set(), "mixed_float16"),  # the weakest GPU decides
    (0, [], {"avx512f", "amx_bf16", "amx_tile"}, "mixed_bfloat16"),
    (0, [], {"avx512f", "avx512_bf16"}, "float32"),  # bf16 instructions but no AMX
    (0, [], set(), "float32"),
])
def test_hardware_rule(tpus, gpus, flags, want):
    precision, reason = hardware_precision(tpus, gpus, flags)
    assert precision == want and reason


def test_cpu_flags_read_the_flags_line(tmp_path):
    cpuinfo = tmp_path / "cpuinfo"
    cpuinfo.write_text("processor\t: 0\nmodel name\t: X\nflags\t\t: fpu avx2 amx_bf16\n\n")
    assert cpu_flags(str(cpuinfo)) == {"fpu", "avx2", "amx_bf16"}
    assert cpu_flags(str(tmp_path / "missing")) == set()


def test_auto_resolves_on_this_machine_and_names_its_reason():
    resolved = resolve_precision("auto")
    assert resolved in PRECISIONS
    line = precision_line("auto", resolved)
    assert line.startswith(f"precision: {resolved} (auto: ") and line.endswith(")")
    assert resolve_precision("mixed_float16") == "mixed_float16"
    assert precision_line("float32", "float32") == "precision: float32"
    with pytest.raises(ValueError, match="auto"):
        resolve_precision("bfloat16")


def test_jobs_store_the_resolved_precision(tmp_path):
    from keras_bert.jobs.finetune import FinetuneJob
    from keras_bert.jobs.pretrain import PretrainJob

    job = FinetuneJob(task="classify", model="random-tiny", train="t.csv", out=str(tmp_path))
    assert job.precision == resolve_precision("auto")
    assert PretrainJob(out=str(tmp_path), strategy="tpu").precision == "mixed_bfloat16"
