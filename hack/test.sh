#!/usr/bin/env bash
# The whole test suite on a fresh machine: set-up, static checks, then unit, integration and
# end-to-end tests against a real local control plane that pytest brings up and tears down.
# This is what CI runs (.ci/run). Extra arguments go to pytest (e.g. hack/test.sh tests/unit -k stats).
#
# `hack/test.sh --unit [PYTEST ARGS]`: the fast path, the same static checks and tests/unit
# only (pure Python: no Go build, no apt-get, no cluster), in about a minute.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

unit=""
if [[ "${1:-}" == "--unit" ]]; then
  unit=1
  shift
fi
if [[ -n "$unit" ]]; then
  hack/setup.sh --python-only
else
  hack/setup.sh
  hack/install-test-deps.sh
fi

echo "== ruff"
.venv/bin/ruff format --check .
.venv/bin/ruff check .
echo "== mypy"
.venv/bin/mypy
echo "== import-linter"
.venv/bin/lint-imports
echo "== pytest"
if [[ -n "$unit" ]]; then
  .venv/bin/pytest tests/unit "$@"
else
  # The slowest tests at the end: where the suite's time goes, in every CI log.
  .venv/bin/pytest --durations=25 "$@"
fi
