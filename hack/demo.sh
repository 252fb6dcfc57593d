#!/usr/bin/env bash
# The main job on the embedded local cluster: set-up, then `testbed demo` (binaries, cluster,
# extender, fleet, workloads, report). Extra arguments go to `testbed demo`.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
hack/setup.sh
exec .venv/bin/testbed demo "$@"
