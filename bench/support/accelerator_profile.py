"""Where a pretraining step's device time goes: `bench/accelerator.py run --profile DIR`
traces a few steps of each model's timed fit (`jax.profiler.trace` into `DIR/<model>`), and
`summarise` (also `bench/accelerator.py profile DIR`, here or there) sums the traced XLA
operations' durations into categories.

Which events: on a GPU, every kernel and copy on the device plane's streams; on a host alone
(the CPU quick mode), the host's XLA operation events. An event's own time excludes the
events nested in it on its line, and control flow (`while`, `conditional`, `call`) counts only
through the operations it runs. The categories, first match wins:

* copies / input: memcpy, memset, host-to-device and device-to-host transfers (the batches
  `fit` sends each step);
* optimizer: an HLO instruction traced under the optimizer's name scope (Keras' JAX backend
  opens `jax.named_scope(optimizer.name)` around `apply`: `jit(train_step)/adam_w/...`, the
  gradient clipping included), read from the HLO modules the trace holds;
* attention: the attention core (scores, mask, softmax, dropout, probabilities x values)
  under the attention layer's scope other than its `query`, `key`, `value` and `output`
  projections, whatever computes it; then kernels and custom calls named flash, fmha, sdpa,
  softmax or cudnn (cuDNN's fused attention);
* matrix products: dot and convolution instructions, fusions around one, and kernels named
  gemm, dot, cublas, cutlass, xmma, nvjet, matmul or convolution;
* other: collectives, sort, random bits, custom calls not named above;
* element-wise fusions: the rest (norms, GELU, dropout masks, casts, bias adds, reductions).

Where a trace holds no HLO modules, nothing names the optimizer's operations: its updates
fall in the element-wise share, and the summary says so (`optimizer_separated`).
"""

from __future__ import annotations

import json
import os
import re
import time
from collections import defaultdict
from pathlib import Path

from bench.support import common
from bench.support.accelerator_xplane import hlo_module, plane_names, read_plane

CATEGORIES = ("matrix products", "attention", "element-wise fusions", "optimizer",
              "copies / input", "other")
COPIES = re.compile(r"memcpy|memset|h2d|d2h|htod|dtoh|host.?to.?device|device.?to.?host"
                    r"|transfer", re.I)
ATTENTION_NAMES = re.compile(r"flash|fmha|sdpa|softmax|dot_product_attention", re.I)
MATMUL_NAMES = re.compile(r"gemm|dot|cublas|cutlass|xmma|nvjet|matmul|convolution", re.I)
CONTROL = re.compile(r"^(while|conditional|cond|call)(\.\d+)?$")
OTHER_OPCODES = ("all-reduce", "all-gather", "reduce-scatter", "all-to-all", "collective-permute",
                 "send", "recv", "sort", "rng", "rng-bit-generator", "infeed", "outfeed")
# Keras' optimizers' default names (`AdamW` -> adam_w), the scope their updates run under.
OPTIMIZER_SCOPES = ("adam_w", "adamw", "adam", "lamb", "sgd")
ATTENTION_SCOPE, PROJECTIONS = "attention", ("query", "key", "value", "output")
# Lines a profiler may add to a device plane as views of its streams' events (counted there).
DERIVED_LINES = ("XLA Modules", "XLA Ops", "Async XLA Ops", "XLA TraceMe", "Steps",
                 "Framework Name Scope", "Framework Ops", "TensorFlow Name Scope",
                 "TensorFlow Ops", "Source code", "Launch Stats")
PROFILE_STEPS = 3
STEPS_FILE = "steps.json"  # beside a model's traces: how many steps they hold


def category(name: str, instruction=None, computations=None) -> str:
    """The category of one event: `name` (a kernel's or an XLA operation's), `instruction`
    the HLO instruction it ran (`accelerator_xplane.Instruction`) where the trace has it."""
    if COPIES.search(name):
        return "copies / input"
    if instruction is not None:
        scopes = [s.lower() for s in instruction.op_name.split("/")]
        if any(s in OPTIMIZER_SCOPES for s in scopes):
            return "optimizer"
        if ATTENTION_SCOPE in scopes:
            after = scopes[scopes.index(ATTENTION_SCOPE) + 1:]
            if after and after[0] not in PROJECTIONS:
                return "attention"
        name = f"{name} {instruction.target}"
        if instruction.opcode in OTHER_OPCODES:
            return "other"
    if ATTENTION_NAMES.search(name):
        return "attention"
    if MATMUL_NAMES.search(name) or _computes_matmul(instruction, computations or {}):
        return "matrix products"
    if "cudnn" in name.lower():
        return "attention"
    if instruction is not None:
        return "other" if instruction.opcode == "custom-call" else "element-wise fusions"
    return "element-wise fusions" if "fusion" in name or "wrapped_" in name else "other"


def _computes_matmul(instruction, computations: dict, depth: int = 0) -> bool:
    """A dot or a convolution, or a fusion whose body holds one."""
    if instruction is None or depth > 8:
        return False
    if instruction.opcode in ("dot", "convolution"):
        return True
    return any(_computes_matmul(inner, computations, depth + 1)
               for called in instruction.calls for inner in computations.get(called, ()))


def _is_control(name: str, instruction) -> bool:
    if instruction is not None:
        return instruction.opcode in ("while", "conditional", "call")
    return bool(CONTROL.match(name))


def _op_events(plane, device: bool):
    """`(start ps, duration ps, name, stats)` of the plane's operations, line by line: on a
    device, every event of its streams (or, where no line is named so, of the lines that
    are not views derived from them); on a host, its XLA operations."""
    lines = plane.lines
    if device:
        lines = ([line for line in lines if line.name.startswith("Stream")]
                 or [line for line in lines if line.name not in DERIVED_LINES])
    for line in lines:
        events = []
        for key, offset, duration, stats in line.events:
            merged = {**plane.event_stats.get(key, {}), **stats}
            if device or "hlo_op" in merged:
                start = line.timestamp_ns * 1000 + offset
                events.append((start, duration, plane.event_names.get(key, ""), merged))
        yield events


def _own_times(events):
    """Each event with its own duration: minus the events nested in it on its line."""
    own, open_ = [], []  # open_: (end, index into own) of the enclosing events
    for start, duration, name, stats in sorted(events, key=lambda e: (e[0], -e[1])):
        while open_ and open_[-1][0] <= start:
            open_.pop()
        if open_:
            own[open_[-1][1]][0] -= duration
        own.append([duration, start, name, stats])
        open_.append((start + duration, len(own) - 1))
    return own


def summarise_space(data: bytes, totals=None) -> dict:
    """Adds one serialized XSpace's device time to `totals` (picoseconds per category);
    returns them, with the events' span and whether HLO modules named the optimizer."""
    planes = plane_names(data)
    devices = [m for n, m in planes if n.startswith(("/device:GPU", "/device:TPU"))]
    chosen = devices or [m for n, m in planes if n.startswith("/host:CPU")]
    metadata = [read_plane(m) for n, m in planes if n == "/host:metadata"]
    protos = {name: meta.event_stats[key].get("Hlo Proto") for meta in metadata
              for key, name in meta.event_names.items()}
    modules: dict = {}
    totals = totals or {"ps": defaultdict(int), "first": None, "last": None, "hlo": False}
    for message in chosen:
        for events in _op_events(read_plane(message), device=bool(devices)):
            for own, start, name, stats in _own_times(events):
                instruction, computations = _lookup(stats, protos, modules)
                if _is_control(name, instruction):
                    continue
                totals["hlo"] = totals["hlo"] or instruction is not None
                totals["ps"][category(name, instruction, computations)] += max(own, 0)
                totals["first"] = min(start, totals["first"] or start)
                totals["last"] = max(start + own, totals["last"] or 0)
    return totals


def _lookup(stats: dict, protos: dict, modules: dict):
    """The HLO instruction an event ran, from the module (`name(program id)`) it names; where
    the event gives no program id, the first module of that name holding the instruction."""
    op, module = stats.get("hlo_op"), stats.get("hlo_module")
    if not op or not module:
        return None, None
    keys = ([f"{module}({stats['program_id']})"] if "program_id" in stats
            else [k for k in protos if k.split("(")[0] == module])
    for key in keys:
        if key not in modules:
            modules[key] = hlo_module(protos[key])[1:] if protos.get(key) else ({}, {})
        instructions, computations = modules[key]
        if op in instructions:
            return instructions[op], computations
    return None, None


def summarise(folder: str, steps: int | None = None) -> dict:
    """The `*.xplane.pb` files under `folder`: milliseconds per step by category, the
    shares, and the device's busy share of the span from its first to its last operation
    (on a host, its threads' time summed: over 100% where they overlap). `steps`: how many
    the traces hold; by default what `capture` wrote in `STEPS_FILE`."""
    files = sorted(Path(folder).rglob("*.xplane.pb"))
    if not files:
        raise FileNotFoundError(f"no *.xplane.pb under {folder}")
    if steps is None:
        written = Path(folder, STEPS_FILE)
        steps = json.loads(written.read_text())["steps"] if written.is_file() else PROFILE_STEPS
    totals = None
    for path in files:
        totals = summarise_space(path.read_bytes(), totals)
    total = sum(totals["ps"].values()) or 1
    span = (totals["last"] or 0) - (totals["first"] or 0)
    return {"steps": steps, "device_ms_per_step": total / 1e9 / steps,
            "ms_per_step": {c: totals["ps"].get(c, 0) / 1e9 / steps for c in CATEGORIES},
            "shares": {c: totals["ps"].get(c, 0) / total for c in CATEGORIES},
            "busy_share": total / span if span > 0 else None,
            "optimizer_separated": totals["hlo"], "files": len(files)}


def profile_table(summaries: dict) -> str:
    """One column per traced model: the share of each category, then ms per step."""
    names = list(summaries)
    rows = [[c, *(f"{100 * summaries[n]['shares'][c]:.1f}% "
                  f"({summaries[n]['ms_per_step'][c]:.2f} ms)" for n in names)]
            for c in CATEGORIES]
    rows.append(["device ms per step", *(f"{summaries[n]['device_ms_per_step']:.2f}"
                                         for n in names)])
    rows.append(["device busy over its span", *(
        "n/a" if summaries[n]["busy_share"] is None else
        f"{100 * summaries[n]['busy_share']:.0f}%" for n in names)])
    rows.append(["optimizer", *("separated (HLO scopes)" if summaries[n]["optimizer_separated"]
                                else "in element-wise" for n in names)])
    return common.markdown_table(["share of device time (ms per step)", *names], rows)


def summarise_folders(folder: str) -> dict:
    """`bench/accelerator.py profile DIR`: one summary per model folder under `folder`
    (`run --profile DIR` writes `DIR/<model>`), or one for `folder` itself."""
    models = sorted(p for p in Path(folder).iterdir() if p.is_dir()
                    and any(p.rglob("*.xplane.pb")) and p.name != "plugins")
    if not models:
        return {Path(folder).name: summarise(folder)}
    return {p.name: summarise(str(p)) for p in models}


def capture(model, data: dict, batch: int, folder: str) -> dict:
    """`PROFILE_STEPS` steps of `model.fit` (compiled by the timed fit before) under
    `jax.profiler.trace(folder)`, then their summary; a note on another backend."""
    import keras

    if keras.backend.backend() != "jax":
        return {"note": f"skipped: jax.profiler traces Keras' JAX backend, not "
                        f"{keras.backend.backend()}"}
    import jax

    options = jax.profiler.ProfileOptions()
    try:  # options of the JAX this was written for; another's defaults do as well
        options.python_tracer_level = 0  # Python's frames: large files, not device time
        options.enable_hlo_proto = True  # the modules whose name scopes find the optimizer
    except AttributeError:
        pass
    steps = min(PROFILE_STEPS, len(data["input_word_ids"]) // batch)
    os.makedirs(folder, exist_ok=True)
    Path(folder, STEPS_FILE).write_text(json.dumps({"steps": steps, "batch": batch}))
    start = time.perf_counter()
    with jax.profiler.trace(folder, profiler_options=options):
        history = model.fit({k: v[:steps * batch] for k, v in data.items()}, batch_size=batch,
                            verbose=0, shuffle=False)
        float(history.history["loss"][-1])  # the last step has finished
    traced = time.perf_counter() - start
    start = time.perf_counter()
    summary = summarise(folder, steps)
    return {**summary, "traced_s": traced, "summarised_s": time.perf_counter() - start}
