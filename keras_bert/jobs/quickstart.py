"""Quick start: raw text -> pretrained BERT-Tiny -> fine-tuned classifier -> served answers.

Runs offline on the embedded defaults (public-domain corpus, 8k uncased vocabulary):

1. pretrains BERT-Tiny from scratch on the embedded corpus (masked LM + next sentence);
2. builds the "which source is this sentence from" task, Moby Dick vs State of the Union
   (`keras_bert.data.source_task`: the rule, the document-level split, the dedupe);
3. fine-tunes a classifier from the pretrained encoder and measures held-out accuracy;
4. exports it with its preprocessing (raw strings in, labels out) for TensorFlow Serving;
5. starts `keras-bert serve` on free ports, queries it over gRPC and REST with raw strings,
   and stops it;
6. draws one attention heat map (`keras-bert attention`).

    keras-bert quickstart [--out artifacts/quickstart] [--quick]

`--quick` runs the same path with a few steps and a few hundred sentences (tests).
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import threading
import time

SUMMARY = "quickstart.json"
# The main job's figures must not depend on the host: with `auto`, a CPU with AMX trains in
# mixed bfloat16, and there the quick mode's classifier learned nothing (held-out accuracy
# 0.500, against 0.703 in float32 on the same Intel Xeon, 2026-11-27).
PRECISION = "float32"
MARKER = ".written-by-quickstart"
QUERIES = [
    "The harpooneers stood in the bows while the whale rose beside the boat.",
    "Tonight I ask the Congress to pass a budget that creates jobs for American workers.",
    "The old captain paced the quarter-deck, his ivory leg striking the planks.",
    "Our nation's economy is growing, and our alliances abroad are strong.",
]
ATTENTION_TEXT = "Call me Ishmael."
ATTENTION_TEXT_B = "The State of the Union is strong."


@dataclasses.dataclass(frozen=True)
class Settings:
    """How long each stage runs."""

    pretrain_steps: int
    steps_per_epoch: int
    pretrain_batch: int
    eval_steps: int
    seq_length: int
    finetune_epochs: int
    finetune_batch: int
    finetune_learning_rate: float
    max_per_class: int | None
    # The classifier reads the masked mean of the last layer: after a few hundred steps the
    # NSP-trained pooler is still weak (held out: 92.8% with mean vs 90.5% with pooled).
    pooling: str = "mean"


FULL = Settings(pretrain_steps=600, steps_per_epoch=100, pretrain_batch=32, eval_steps=20,
                seq_length=64, finetune_epochs=3, finetune_batch=32,
                finetune_learning_rate=1e-3, max_per_class=None)
QUICK = Settings(pretrain_steps=10, steps_per_epoch=5, pretrain_batch=16, eval_steps=1,
                 seq_length=32, finetune_epochs=3, finetune_batch=32,
                 finetune_learning_rate=1e-3, max_per_class=64)


class Stages:
    """Prints `[i/n] what` headers with the elapsed time of the previous stage."""

    def __init__(self, total: int):
        self.total, self.index = total, 0
        self.start = self.last = time.perf_counter()

    def __call__(self, message: str) -> None:
        now = time.perf_counter()
        if self.index:
            print(f"    ({now - self.last:.0f}s)", flush=True)
        self.index += 1
        self.last = now
        print(f"\n==> [{self.index}/{self.total}] {message}", flush=True)

    def elapsed(self) -> float:
        """Seconds since the first stage began."""
        return time.perf_counter() - self.start


def prepare_out(out: str) -> None:
    """Empties `out` if an earlier quick start wrote it; refuses any other non-empty folder."""
    if os.path.isdir(out) and os.listdir(out):
        if not os.path.exists(os.path.join(out, MARKER)):
            raise ValueError(f"{out} exists and was not written by the quick start; pass "
                             "another --out")
        shutil.rmtree(out)
    os.makedirs(out, exist_ok=True)
    open(os.path.join(out, MARKER), "w").close()


def pretrain(out: str, s: Settings) -> dict:
    """Stage 1: BERT-Tiny on the embedded corpus (`keras_bert.jobs.pretrain`)."""
    from keras_bert.jobs.pretrain import PretrainJob, run_pretraining

    metrics = run_pretraining(PretrainJob(
        out=os.path.join(out, "pretrain"), preset="tiny", steps=s.pretrain_steps,
        steps_per_epoch=s.steps_per_epoch, batch_size=s.pretrain_batch,
        seq_length=s.seq_length, max_predictions=max(5, s.seq_length // 6),
        eval_steps=s.eval_steps, precision=PRECISION))
    ev = metrics["eval"]
    nsp_baseline = ev.get("nsp_majority_baseline")
    print(f"    held-out MLM accuracy {ev['mlm_accuracy']:.3f} (always predicting the most "
          f"frequent token: {ev['mlm_frequency_baseline']:.3f}); NSP accuracy "
          f"{ev['nsp_accuracy']:.3f} (" + (f"majority class: {nsp_baseline:.3f})"
                                          if nsp_baseline is not None else "chance: 0.5)"))
    return metrics


def build_task(out: str, s: Settings) -> dict[str, str]:
    """Stage 2: the source task's train/eval CSV files."""
    from collections import Counter

    from keras_bert.data.source_task import source_task, write_csv

    splits = source_task(max_per_class=s.max_per_class)
    paths = {}
    for name, examples in splits.items():
        paths[name] = write_csv(examples, os.path.join(out, "data", f"{name}.csv"))
        documents = len({ex.document for ex in examples})
        counts = ", ".join(f"{k} {v}" for k, v in sorted(Counter(ex.label for ex in examples)
                                                         .items()))
        print(f"    {name}: {len(examples)} sentences ({counts}) from {documents} documents "
              f"-> {paths[name]}")
    return paths


def finetune(out: str, model: str, data: dict[str, str], s: Settings) -> dict:
    """Stage 3: a classifier from the pretrained encoder (`keras_bert.jobs.finetune`)."""
    from keras_bert.jobs.finetune import FinetuneJob, run_finetuning

    metrics = run_finetuning(FinetuneJob(
        task="classify", model=model, train=data["train"], eval=data["eval"],
        out=os.path.join(out, "finetune"), seq_length=s.seq_length, epochs=s.finetune_epochs,
        batch_size=s.finetune_batch, learning_rate=s.finetune_learning_rate,
        pooling=s.pooling, precision=PRECISION))
    print(f"    held-out accuracy {metrics['eval']['accuracy']:.3f} on "
          f"{metrics['eval_examples']} sentences (chance 0.5)")
    return metrics


class Server:
    """`keras-bert serve BASE_DIR` as a subprocess on free ports."""

    def __init__(self, base_dir: str, model_name: str):
        script = os.path.join(os.path.dirname(sys.executable), "keras-bert")
        command = [script] if os.path.exists(script) else [sys.executable, "-m", "keras_bert.cli"]
        self.command = command + ["serve", base_dir, "--model-name", model_name,
                                  "--grpc-port", "0", "--rest-port", "0",
                                  "--log-level", "WARNING"]
        self.process = subprocess.Popen(self.command, stdout=subprocess.PIPE,
                                        stderr=subprocess.PIPE, text=True)
        self.lines: list[str] = []
        self.errors: list[str] = []
        for stream, sink in ((self.process.stdout, self.lines),
                             (self.process.stderr, self.errors)):
            threading.Thread(target=lambda s=stream, k=sink: k.extend(iter(s.readline, "")),
                             daemon=True).start()

    def addresses(self, timeout: float = 180) -> tuple[str, str]:
        """`(grpc_address, rest_url)` once the server has printed that it listens."""
        deadline = time.monotonic() + timeout
        while not any(line.startswith("Ctrl-C") for line in list(self.lines)):
            if self.process.poll() is not None:
                raise RuntimeError("keras-bert serve exited:\n" + "".join(self.errors[-30:]))
            if time.monotonic() > deadline:
                raise RuntimeError(f"keras-bert serve did not start within {timeout:.0f}s")
            time.sleep(0.2)
        text = "".join(self.lines)
        return (re.search(r"^gRPC\s+(\S+)", text, re.M).group(1),
                re.search(r"^REST\s+(http://\S+?)/v1/", text, re.M).group(1))

    def stop(self, timeout: float = 60) -> int:
        """SIGTERM, then waits: the server's exit status (0 = clean stop)."""
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(timeout)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(30)
        return self.process.returncode


def serve_and_query(export_base: str, model_name: str = "bert") -> dict:
    """Stage 5: serve, query with raw strings over gRPC and REST, stop."""
    from keras_bert.client import GrpcClient, RestClient

    server = Server(export_base, model_name)
    print("    $ " + " ".join(server.command), flush=True)
    try:
        grpc_address, rest_url = server.addresses()
        print(f"    listening: gRPC {grpc_address}, REST {rest_url}")
        with GrpcClient(grpc_address, model_name) as grpc_client, \
                RestClient(rest_url, model_name) as rest_client:
            by_grpc = grpc_client.predict(QUERIES)
            by_rest = rest_client.predict(QUERIES)
    finally:
        status = server.stop()
    answers = []
    for text, g, r in zip(QUERIES, by_grpc, by_rest, strict=True):
        p = max(g["probabilities"])
        print(f"    gRPC {g['label']:>9} ({p:.2f}) | REST {r['label']:>9}   {text}")
        answers.append({"text": text, "grpc": g["label"], "rest": r["label"],
                        "probability": p})
    if any(a["grpc"] != a["rest"] for a in answers):
        raise RuntimeError("gRPC and REST answered differently")
    print(f"    server stopped (exit status {status})")
    if status != 0:
        raise RuntimeError(f"keras-bert serve exited with status {status}:\n"
                           + "".join(server.errors[-30:]))
    return {"grpc": grpc_address, "rest": rest_url, "answers": answers}


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The job's arguments, on `parser` (`keras-bert quickstart`)."""
    parser.add_argument("--out", help="output directory (default artifacts/quickstart, "
                                      "or artifacts/quickstart-quick with --quick)")
    parser.add_argument("--quick", action="store_true", help="a few steps only (tests)")


def run(args) -> int:
    """Runs the six stages and prints where every artefact is (TensorFlow loaded)."""
    settings = QUICK if args.quick else FULL
    out = os.path.abspath(args.out or ("artifacts/quickstart-quick" if args.quick
                                       else "artifacts/quickstart"))
    prepare_out(out)
    stage = Stages(6)

    stage(f"pretraining BERT-Tiny on the embedded corpus ({settings.pretrain_steps} steps, "
          f"batch {settings.pretrain_batch}, sequence length {settings.seq_length})")
    pretrained = pretrain(out, settings)
    pretrained_model = os.path.join(out, "pretrain", "model")

    stage("building the task: which source is a sentence from (Moby Dick or State of the "
          "Union)? Held out by document")
    data = build_task(out, settings)

    stage(f"fine-tuning a classifier from the pretrained encoder ({settings.finetune_epochs} "
          "epochs)")
    finetuned = finetune(out, pretrained_model, data, settings)
    classifier = os.path.join(out, "finetune", "model")

    stage("exporting the classifier with its preprocessing (raw strings in, labels out)")
    export_base = export(out, classifier)

    stage("serving it with `keras-bert serve` and querying it with raw strings")
    served = serve_and_query(export_base)

    stage("drawing the classifier's attention (`keras-bert attention`)")
    attention_png = attention(out, classifier)

    total = stage.elapsed()
    artefacts = {
        "pretrained model dir": pretrained_model,
        "pretraining metrics": os.path.join(out, "pretrain", "metrics.json"),
        "pretraining curves": os.path.join(out, "pretrain", "curves.png"),
        "task data": os.path.dirname(data["train"]),
        "classifier model dir": classifier,
        "fine-tuning metrics": os.path.join(out, "finetune", "metrics.json"),
        "fine-tuning curves": os.path.join(out, "finetune", "curves.png"),
        "export (TF Serving base dir)": export_base,
        "attention heat map": attention_png,
    }
    summary = {"seconds": round(total, 1), "quick": args.quick,
               "settings": dataclasses.asdict(settings),
               "pretraining": pretrained["eval"], "finetuning": finetuned["eval"],
               "served": served, "artefacts": artefacts}
    report(out, summary, export_base)
    return 0


def export(out: str, classifier: str) -> str:
    """Stage 4: the classifier's TF Serving version (`keras-bert export`); its base dir."""
    from keras_bert.tasks.task_dir import export_model

    export_base = os.path.join(out, "export", "bert")
    exported = export_model(classifier, export_base)
    print(f"    version {exported.version} at {exported.path}; serving_default takes "
          f"{exported.signatures['serving_default']['inputs']}")
    return export_base


def attention(out: str, classifier: str) -> str:
    """Stage 6: the classifier's attention on a sentence pair (`keras-bert attention`)."""
    from keras_bert.visualize.attention_maps import draw_text_attention

    attention_png = os.path.join(out, "attention.png")
    print(f'    $ keras-bert attention {classifier} --text "{ATTENTION_TEXT}" --text-b '
          f'"{ATTENTION_TEXT_B}" --out {attention_png}')
    print("    " + draw_text_attention(classifier, ATTENTION_TEXT, attention_png,
                                       ATTENTION_TEXT_B))
    return attention_png


def report(out: str, summary: dict, export_base: str) -> None:
    """Writes the summary and prints where every artefact is and what to run next."""
    artefacts, total = summary["artefacts"], summary["seconds"]
    with open(os.path.join(out, SUMMARY), "w", encoding="utf-8") as f:
        json.dump(summary, f, indent=2)
    print(f"\ndone in {total / 60:.1f} min. Artefacts:")
    for name, path in {**artefacts, "this summary": os.path.join(out, SUMMARY)}.items():
        print(f"    {name:<29} {path}")
    scripts = os.path.dirname(sys.executable)  # where `keras-bert` is installed
    print(f"\nnext: {scripts}/keras-bert serve {export_base}   (then, in another shell)\n"
          f"      {scripts}/keras-bert query --server localhost:8500 \"Call me Ishmael.\"")

