"""`bench/litert_latency.py --task tag,squad --quick` runs (tiny random models, a smoke
check, not a timing; the figures come from its full runs): the tagger's and span QA's
tables, each contender timed back to back and call by call, with how often each answers
as `tokenizers` + ONNX Runtime float32 with Hugging Face's post-processing does."""

from __future__ import annotations

import os
import re
import subprocess
import sys

import pytest

from tests.support.reference import require

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
ROW = r"\| {name} \| [\d.]+ \| [\d.]+ \| [\d.]+x \| [\d.]+x \| {agree} \|"


@pytest.mark.slow
@pytest.mark.needs_torch
def test_quick_mode_reports_the_tagger_and_span_qa():
    for module in ("transformers", "onnxruntime", "onnxscript", "ai_edge_litert"):
        require(module)
    done = subprocess.run([sys.executable, os.path.join("bench", "litert_latency.py"),
                           "--quick", "--task", "tag,squad"], cwd=REPO,
                          capture_output=True, text=True, timeout=900)
    assert done.returncode == 0, done.stderr[-3000:]
    tables = re.split(r"^tiny (?=tag|squad)", done.stdout, flags=re.M)[1:]
    assert [t.split(",")[0] for t in tables] == ["tag", "squad"], done.stdout
    for table in tables:
        assert "| back to back p50 ms | call by call p50 ms |" in table, table
        # The float32 files and the SavedModels (plain and `--xla`) answer as ORT float32
        # does (the same weights; the bench's texts are tokenized alike); int8 is timed,
        # not gated here.
        for name in ("litert", "session", "session_xla", "ort"):
            assert re.search(ROW.format(name=name, agree=r"100\.0"), table), (name, table)
        for name in ("litert_int8", "ort_int8"):
            assert re.search(ROW.format(name=name, agree=r"[\d.]+"), table), (name, table)
        # LiteRT's own runner answers the int8 file as LiteRTModel does.
        agree = re.search(ROW.format(name="litert_int8", agree=r"([\d.]+)"), table).group(1)
        assert re.search(ROW.format(name="litert_int8_runner", agree=re.escape(agree)),
                         table), table
