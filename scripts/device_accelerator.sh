#!/usr/bin/env bash
# bench/accelerator.py on a lent GPU machine, in one call. That image has JAX and no
# TensorFlow, Keras or registry access: `bench/accelerator.py prepare .accelerator --wheels`
# (here, with TensorFlow) writes the token ids, MiniLM's arrays and the wheels Keras needs
# there, and the call carries that folder (`carry: [".accelerator"]`, about 50 MB; the limit
# is 64 MiB with the repository).
#   bash scripts/device_accelerator.sh probe          versions and devices only (a short call)
#   bash scripts/device_accelerator.sh [ARGS...]      the benchmark (`run` ARGS: --models ...)
# Results: $OUT/accelerator.json and $OUT/accelerator.log (the device tool brings $OUT back).
# With `--answers "$OUT"` also the fine-tuned weights and held-out logits (7 files in all,
# each under the 16 MB a lent machine sends back); here, `bench/accelerator.py verify
# --answers DIR` checks that their TF export answers as the GPU did.
set -euo pipefail
cd "$(dirname "$0")/.."
DATA=.accelerator
OUT=${OUT:-/tmp/accelerator-out}
mkdir -p "$OUT"
ls "$DATA"/wheels/*.whl >/dev/null || {
  echo "[device] $DATA/wheels is missing: run bench/accelerator.py prepare $DATA --wheels" >&2
  exit 2
}
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade \
  --target /tmp/site "$DATA"/wheels/*.whl
export PYTHONPATH="/tmp/site:$PWD" KERAS_BACKEND=jax PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader || true
python3 -c "import sys, jax, keras; print('python', sys.version.split()[0], '| jax', \
jax.__version__, jax.devices(), '| keras', keras.__version__)"
if [ "${1:-}" = probe ]; then
  exit 0
fi
python3 bench/accelerator.py run --data "$DATA" --json "$OUT/accelerator.json" "$@" \
  2>&1 | tee "$OUT/accelerator.log"
