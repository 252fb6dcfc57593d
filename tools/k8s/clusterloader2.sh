#!/usr/bin/env bash
# Builds ClusterLoader2 (module k8s.io/perf-tests/clusterloader2, pinned below) into a cache
# directory keyed by its version, beside the control-plane binaries, and prints that
# directory. It holds `clusterloader` and the module's `testing/` configs, to be read and
# patched at run time by the experiment engine's `harness: clusterloader2`
# (experiment/sites/clusterloader2.py; nothing of CL2 is kept in this repo).
# A complete cache is reused without invoking go; a second caller waits for the first.
#
# The source is the pinned module from the Go module proxy (`go mod download`) or, where the
# proxy does not serve it, a checkout of kubernetes/perf-tests given with --source or
# $DRA_TESTBED_CL2_SOURCE (its top directory or its clusterloader2/ directory; a git checkout
# must be at the pinned commit). The proxy here refused the module (403, 2026-11-22 and
# 2026-11-29).
#
# Usage: tools/k8s/clusterloader2.sh [--source DIR] [--print-dir]
# Exit status: 0 built or cached, 1 build failed, 2 usage, 3 no source: the proxy refused the
# module and no checkout was given.
set -euo pipefail

# shellcheck source=lib.sh
source "$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)/lib.sh"

# The pinned module version: the pseudo-version of kubernetes/perf-tests commit 4b3415444f4c
# (2026-08-07), whose testing/dra is the DRA steady-state test this repo compares against.
VERSION=v0.0.0-20260807161653-4b3415444f4c
MODULE=k8s.io/perf-tests/clusterloader2

main() {
  local source="${DRA_TESTBED_CL2_SOURCE:-}" print_dir=""
  while [[ $# -gt 0 ]]; do
    case "$1" in
      --source) source="${2:-}"; shift ;;
      --source=*) source="${1#*=}" ;;
      --print-dir) print_dir=1 ;;
      -h | --help) sed -n '2,/^[^#]/s/^# \{0,1\}//p' "${BASH_SOURCE[0]}"; exit 0 ;;
      *) echo "error: unknown argument $1 (see --help)" >&2; exit 2 ;;
    esac
    shift
  done
  local out="$cache_root/bin/clusterloader2-$VERSION"
  if [[ -n "$print_dir" ]]; then
    echo "$out"
    exit 0
  fi
  complete() { [[ -x "$1/clusterloader" && -f "$1/testing/dra/config.yaml" ]]; }
  claim_build "$out" "clusterloader2-$VERSION" "install Go >= 1.26"

  local dir
  if [[ -n "$source" ]]; then
    [[ -f "$source/clusterloader2/go.mod" ]] && source="$source/clusterloader2"
    if ! grep -qx "module $MODULE" "$source/go.mod" 2>/dev/null; then
      echo "error: --source $source is not a checkout of $MODULE" >&2
      exit 2
    fi
    local head want="${VERSION##*-}"
    if head="$(git -C "$source" rev-parse HEAD 2>/dev/null)" && [[ "$head" != "$want"* ]]; then
      echo "error: --source $source is at commit ${head:0:12}, not the pinned $want" >&2
      exit 2
    fi
    dir="$(cd "$source" && pwd)"
  else
    local info
    if ! info="$(cd /tmp && GOFLAGS=-mod=mod go mod download -json "$MODULE@$VERSION" 2>&1)" ||
      ! dir="$(echo "$info" | sed -n 's/^[[:space:]]*"Dir": "\(.*\)",\{0,1\}$/\1/p')" || [[ -z "$dir" ]]; then
      echo "error: could not download $MODULE@$VERSION ($(echo "$info" | sed -n 's/.*"Error": "\(.*\)".*/\1/p' | head -c 200));" \
        "pass a checkout of kubernetes/perf-tests at commit ${VERSION##*-} with --source" >&2
      exit 3
    fi
  fi

  local log="$cache_root/logs/build-clusterloader2-$VERSION.log" staging="$out.partial"
  rm -rf "$staging"
  mkdir -p "$staging"
  echo "building clusterloader2 $VERSION from $dir into $out (about 5 min on 2 cores); log: $log" >&2
  SECONDS=0
  if ! (cd "$dir" && CGO_ENABLED=0 GOFLAGS=-buildvcs=false go build -trimpath -ldflags "-s -w" \
    -o "$staging/clusterloader" ./cmd/) >"$log" 2>&1; then
    echo "error: building clusterloader2 failed; full log: $log" >&2
    exit 1
  fi
  cp -R "$dir/testing" "$staging/testing"
  chmod -R u+w "$staging/testing"
  echo "$VERSION" >"$staging/VERSION"
  rm -rf "$out"
  mv "$staging" "$out"
  echo "   built clusterloader2 in ${SECONDS}s" >&2
  echo "$out"
}

main "$@"
