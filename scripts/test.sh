#!/usr/bin/env bash
# Installs everything the tests need (scripts/install.sh), lints (ruff), then runs pytest on
# two xdist workers (one per core; docs/testing.md). One option, first, picks the tier:
#   scripts/test.sh          the tests to run before every commit: no test marked `slow` or
#                            `exhaustive`
#   scripts/test.sh --full   every test but the exhaustive tier (the slow ones included)
#   scripts/test.sh --ci     CI's run (.ci/run): the default tier plus this landing's slow
#                            tests and exhaustive test (tests/support/schedule.py; the landing
#                            is KERAS_BERT_ROTATION, the commit count unless set)
# Other arguments go to pytest after the tier's, so they win: `-m exhaustive` runs the
# exhaustive tier, `-n 0` one process, a path one file. PYTHON picks the interpreter of a new
# .venv (scripts/install.sh), e.g. `PYTHON=3.12 bash scripts/test.sh`.
set -euo pipefail
cd "$(dirname "$0")/.."
TIER=default
case "${1:-}" in
  --full|--ci) TIER=${1#--}; shift ;;
esac
case "$TIER" in
  default) MARKS="not slow and not exhaustive" ;;
  # No landing number: every slow test runs (tests/support/schedule.py).
  full) MARKS="not exhaustive"; unset KERAS_BERT_ROTATION ;;
  ci) MARKS="not exhaustive or ci_pick"
      KERAS_BERT_ROTATION=${KERAS_BERT_ROTATION:-$(git rev-list --count HEAD 2>/dev/null || echo 0)}
      export KERAS_BERT_ROTATION ;;
esac
bash scripts/install.sh
echo "[test] ruff"
.venv/bin/ruff check .
echo "[test] tier $TIER${KERAS_BERT_ROTATION:+, rotation $KERAS_BERT_ROTATION}," \
     "$(.venv/bin/python -c 'import platform; print("CPython", platform.python_version())'):" \
     "pytest -n 2 --dist loadfile --no-loadscope-reorder -m \"$MARKS\" $*"
# --no-loadscope-reorder: xdist hands out files in the collection's order, which
# tests/conftest.py sorts longest first (tests/durations.json); by default it reorders them by
# their number of tests, so that a 10-second file of one test started last.
exec .venv/bin/python -m pytest -n 2 --dist loadfile --no-loadscope-reorder -m "$MARKS" "$@"
