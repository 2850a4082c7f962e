#!/usr/bin/env bash
# Installs keras_bert, then runs the main job on its embedded defaults (examples/quickstart.py):
# pretrain BERT-Tiny -> build the source task -> fine-tune -> export -> serve -> query, offline.
# Extra arguments go to the job (e.g. --out DIR, --quick).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install.sh
exec .venv/bin/python examples/quickstart.py "$@"
