#!/usr/bin/env bash
# Installs keras_bert and runs the main job on its embedded defaults (examples/quickstart.py).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install.sh
exec .venv/bin/python examples/quickstart.py "$@"
