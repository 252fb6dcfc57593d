#!/usr/bin/env bash
# More runs on a kept cost curve, then the pages again, in one command:
#   docs/results/more-curve-runs.sh RELEASE SIZES RUNS      e.g.  1.37 2000,5000 2
# runs bench/schedperf_curves.py --append RUNS times at each of SIZES on the release's kept
# curve file (bench/results/curve-sp-RELEASE-*.json, grown in place), keeps it again in
# docs/results/curves/ (today's date and HEAD's commit beside the earlier ones) and rewrites
# the pages (`testbed results`). Everything runs under `nice -n 19`.
set -euo pipefail
if [[ $# -ne 3 ]]; then
  echo "usage: $0 RELEASE SIZES RUNS   (e.g. $0 1.37 2000,5000 2)" >&2
  exit 2
fi
release=$1 sizes=$2 runs=$3
cd "$(dirname "${BASH_SOURCE[0]}")/../.."
kept=$(ls bench/results/curve-sp-"$release"-*.json 2>/dev/null | tail -1)
if [[ -z "$kept" ]]; then
  echo "error: no kept curve bench/results/curve-sp-$release-*.json" >&2
  exit 2
fi
work=results/curve-sp-$release
mkdir -p "$work"
cp "$kept" "$work/curve.json"
nice -n 19 .venv/bin/python bench/schedperf_curves.py --kubernetes "$release" --sizes "$sizes" \
  --pods 300 --repeat "$runs" --timeout 1500 --append --out "$work"
cp "$work/curve.json" "$kept"
machine="$(nproc) cores, $(awk '/MemTotal/ {printf "%.0f GiB", $2 / 1048576}' /proc/meminfo), Linux $(uname -m | sed 's/x86_64/amd64/')"
nice -n 19 .venv/bin/testbed results curve "$kept" --id "curve-sp-$release" \
  --commit "$(git rev-parse --short HEAD)" --date "$(date -u +%F)" --machine "$machine"
nice -n 19 .venv/bin/testbed results
