#!/usr/bin/env bash
# Everything a fresh machine needs: a virtual environment with dra-testbed and its test and
# dev tools, and the control-plane binaries built from the pinned Go modules (cached, reused).
# Idempotent: a second run only checks. Needs Python >= 3.11 and Go >= 1.26 on PATH.
# `--python-only`: the virtual environment alone (no Go, no build), for the unit tests.
set -euo pipefail
python_only=""
if [[ "${1:-}" == "--python-only" ]]; then python_only=1; fi
cd "$(dirname "${BASH_SOURCE[0]}")/.."

python="${PYTHON:-python3}"
if ! "$python" -c 'import sys; sys.exit(sys.version_info < (3, 11))' 2>/dev/null; then
  echo "error: Python >= 3.11 is required (set PYTHON=/path/to/python3.11)" >&2
  exit 1
fi
if [[ ! -x .venv/bin/python ]]; then
  "$python" -m venv .venv
fi
stamp=.venv/.installed-$(sha256sum pyproject.toml | cut -c1-12)
if [[ ! -f "$stamp" ]]; then
  # pip and setuptools print deprecation warnings nobody can act on; keep them in a log and
  # show it only if the install fails.
  log=.venv/pip-install.log
  echo "installing dra-testbed and its Python dependencies into .venv (about a minute)" >&2
  if ! { .venv/bin/python -m pip install --quiet --upgrade pip &&
    .venv/bin/python -m pip install --quiet -e '.[dev]'; } >"$log" 2>&1; then
    cat "$log" >&2
    echo "error: pip install failed (log: $log)" >&2
    exit 1
  fi
  rm -f .venv/.installed-*
  touch "$stamp"
fi
if [[ -n "$python_only" ]]; then exit 0; fi
# The first build prints what it builds, the time so far and an estimate (about 10 minutes
# on 2 cores); later runs find the cache and print nothing.
tools/k8s/build.sh >/dev/null
