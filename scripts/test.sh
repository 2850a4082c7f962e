#!/usr/bin/env bash
# Installs everything the tests need (scripts/install.sh), then lints and runs the test suite.
# Extra arguments go to pytest, e.g. `bash scripts/test.sh -m "not slow"`.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install.sh
echo "[test] ruff"
.venv/bin/ruff check .
echo "[test] pytest"
exec .venv/bin/python -m pytest "$@"
