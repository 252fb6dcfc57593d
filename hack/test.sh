#!/usr/bin/env bash
# The whole test suite on a fresh machine: set-up, static checks, then unit, integration and
# end-to-end tests against a real local control plane that pytest brings up and tears down.
# Extra arguments go to pytest (e.g. hack/test.sh tests/unit -k stats).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
hack/setup.sh
hack/install-test-deps.sh

echo "== ruff"
.venv/bin/ruff format --check .
.venv/bin/ruff check .
echo "== mypy"
.venv/bin/mypy
echo "== import-linter"
.venv/bin/lint-imports
echo "== pytest"
.venv/bin/pytest "$@"
