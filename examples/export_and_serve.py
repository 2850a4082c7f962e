"""Exports a model for TensorFlow Serving, serves it with `keras-bert serve`, queries it.

1. `export_model` writes BASE/<version>/: a SavedModel whose `serving_default` takes raw
   strings (the TF Text tokenizer and vocabulary are inside the graph), checked against the
   ops of the target TF Serving releases, with warmup requests.
2. `keras-bert serve BASE --grpc-port 0 --rest-port 0` starts in a subprocess (port 0: free
   ports, read back from its first lines); it speaks TF Serving's gRPC and REST protocols,
   so the same export runs unchanged in the official `tensorflow/serving` image (`export/`).
3. `GrpcClient` and `RestClient` send the same raw strings; the answers must agree.

Model: `--model DIR`, any keras_bert model directory (a converted or pretrained encoder,
exported as sentence embeddings; or a fine-tuned task model, e.g. the Rotten Tomatoes
classifier `artifacts/rotten_tomatoes/run/model`). Default: the real all-MiniLM-L6-v2
weights (mean pooling; the printout shows the cosine similarities of the answers).
`--quick` exports a randomly initialised BERT-Tiny instead (tests).

    python examples/export_and_serve.py [--model DIR]
    python examples/export_and_serve.py --quick

Figures (2 shared CPU cores, busy with other jobs): with MiniLM, 2 min 15 s wall (export and
op audit, server start with warmup, 2 requests); gRPC and REST answers agree to float32
precision; cosine 0.572 for the two whale sentences against 0.033 and 0.044 for the
unrelated pairs. `--quick` shows the same path with a random model (similarities
meaningless).
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
import time

import numpy as np
from _shared import DEFAULT_MINILM, minilm_model_dir, tiny_model_dir

TEXTS = ["The whale dived below the ship.", "A great fish plunged beneath the vessel.",
         "Taxes on imports will be reduced."]


def start_server(base_dir: str, model_name: str, timeout: float = 120.0):
    """Starts `keras-bert serve` on free ports; returns `(process, grpc address, rest url)`."""
    command = [sys.executable, "-m", "keras_bert.cli", "serve", base_dir, "--model-name",
               model_name, "--grpc-port", "0", "--rest-port", "0", "--log-level", "WARNING"]
    process = subprocess.Popen(command, stdout=subprocess.PIPE, text=True)
    grpc_address = rest_url = None
    deadline = time.monotonic() + timeout
    for line in process.stdout:
        print(f"  [serve] {line.rstrip()}")
        if match := re.match(r"gRPC\s+(\S+)", line):
            grpc_address = match.group(1)
        elif match := re.match(r"REST\s+(http://[^/\s]+)", line):
            rest_url = match.group(1)
        if (grpc_address and rest_url) or time.monotonic() > deadline:
            break
    if not (grpc_address and rest_url):
        process.terminate()
        raise RuntimeError(f"keras-bert serve did not report its ports (exit code "
                           f"{process.poll()})")
    return process, grpc_address, rest_url


def main(argv=None) -> dict:
    """Runs the example; returns the gRPC and REST answers."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", help="a keras_bert model directory (default: MiniLM)")
    parser.add_argument("--minilm", default=DEFAULT_MINILM, help="converted MiniLM (reused)")
    parser.add_argument("--out", default="artifacts/serving")
    parser.add_argument("--model-name", default="bert")
    parser.add_argument("--quick", action="store_true", help="a random BERT-Tiny (tests)")
    args = parser.parse_args(argv)

    from keras_bert.client import GrpcClient, RestClient
    from keras_bert.tasks.task_dir import export_model

    if args.model:
        model_path = args.model
    elif args.quick:
        model_path = tiny_model_dir(os.path.join(args.out, "tiny")).path
    else:
        model_path = minilm_model_dir(args.minilm).path
    base_dir = os.path.join(args.out, "models", args.model_name)
    shutil.rmtree(base_dir, ignore_errors=True)
    exported = export_model(model_path, base_dir, pooling="mean", model_name=args.model_name)
    print(f"exported {model_path} ({exported.task}) as version {exported.version}: "
          f"{exported.path}")

    process, grpc_address, rest_url = start_server(base_dir, args.model_name)
    try:
        with GrpcClient(grpc_address, args.model_name) as grpc_client:
            print(f"gRPC model status: {grpc_client.status()}")
            via_grpc = grpc_client.predict(TEXTS)
        via_rest = RestClient(rest_url, args.model_name).predict(TEXTS)
    finally:
        process.terminate()
        process.wait(timeout=60)
    for answer_grpc, answer_rest in zip(via_grpc, via_rest, strict=True):
        for key, value in answer_grpc.items():
            if isinstance(value, (float, list)):
                np.testing.assert_allclose(value, answer_rest[key], rtol=1e-5, atol=1e-6)
            else:
                assert value == answer_rest[key], (key, value, answer_rest[key])
    print(f"gRPC ({grpc_address}) and REST ({rest_url}) agree on {len(TEXTS)} answers")
    if "embedding" in via_grpc[0]:
        vectors = np.array([a["embedding"] for a in via_grpc])
        vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
        similarity = vectors @ vectors.T
        for i, j in ((0, 1), (0, 2), (1, 2)):
            print(f"cosine {similarity[i, j]:.3f}  {TEXTS[i]!r} ~ {TEXTS[j]!r}")
    else:
        for text, answer in zip(TEXTS, via_grpc, strict=True):
            print(f"{text!r} -> {answer}")
    return {"grpc": via_grpc, "rest": via_rest, "export": exported.path}


if __name__ == "__main__":
    main()
