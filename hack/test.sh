#!/usr/bin/env bash
# The whole test suite on a fresh machine: set-up, static checks, then unit, integration and
# end-to-end tests against a real local control plane that pytest brings up and tears down.
# This is what CI runs (.ci/run). Extra arguments go to pytest (e.g. hack/test.sh tests/unit -k stats).
#
# `hack/test.sh --unit [PYTEST ARGS]`: the fast path, the same static checks and tests/unit
# only (pure Python: no Go build, no apt-get, no cluster), in about a minute.
#
# tests/unit always runs as on a fresh machine: with nothing on PATH but the venv (not even
# Python's own directory, which may be /usr/bin, where Debian's promtool, chromium and openssl
# live) and an empty binary cache, so a unit test that needs an outside binary fails here
# rather than on a new user's machine. Tests that need one live in tests/tools,
# tests/integration, tests/browser (hack/install-test-deps.sh installs what they use).
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
bare_cache="$(mktemp -d)"
trap 'rm -rf "$bare_cache"' EXIT
bare() {
  env -u DRA_TESTBED_BIN_DIR PATH="$PWD/.venv/bin" DRA_TESTBED_CACHE="$bare_cache" "$@"
}
if [[ -n "$unit" ]]; then
  bare .venv/bin/pytest tests/unit "$@"
elif [[ $# -eq 0 ]]; then
  # The whole suite: tests/unit as a fresh machine runs them (no extra time: each test
  # runs once), then the rest with every tool. The slowest tests at the end: where the
  # suite's time goes, in every CI log.
  bare .venv/bin/pytest tests/unit
  .venv/bin/pytest --durations=25 --ignore=tests/unit
else
  .venv/bin/pytest --durations=25 "$@"
fi
