#!/usr/bin/env bash
# Installs keras_bert (the package alone: what the job uses), then runs the main job on its
# embedded defaults (`keras-bert quickstart`, keras_bert/quickstart_job.py):
# pretrain BERT-Tiny -> build the source task -> fine-tune -> export -> serve -> query, offline.
# Extra arguments go to the job (e.g. --out DIR, --quick). PYTHON picks the interpreter of a
# new .venv, as for scripts/install.sh (e.g. `PYTHON=3.12 bash scripts/quickstart.sh`).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install.sh --main-job
exec .venv/bin/keras-bert quickstart "$@"
