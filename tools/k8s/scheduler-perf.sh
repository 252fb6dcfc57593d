#!/usr/bin/env bash
# Builds scheduler_perf as a library benchmark for one pinned Kubernetes release: the test
# binary of scheduler-perf/ (`go test -c`, against that release's module file) and the etcd
# the release ships (its integration framework starts etcd from PATH), into a cache directory
# keyed by the versions and the wrapper's sources, and prints that directory. It holds
#   scheduler_perf.test  the benchmark (flags: -workloads FILE, -allocator, -topic, and
#                        scheduler_perf's own, e.g. -data-items-dir)
#   etcd                 copied from the control plane's cache when built there, else built
#   upstream             one line: the release's test/integration/scheduler_perf directory in
#                        the Go module cache (upstream's workload files, read in place)
# A complete cache is reused without invoking go; one build per cache directory at a time.
#
# Built with -trimpath, as the control plane is, so the two share compiled packages in the
# Go build cache. scheduler_perf's API server finds its test data from its own source path,
# which -trimpath leaves relative: run the binary with TEST_SRCDIR=<GOMODCACHE> and
# TEST_WORKSPACE=. and it resolves that path in the module cache again.
#
# Usage: tools/k8s/scheduler-perf.sh [--kubernetes 1.NN] [--print-dir] [--print-upstream]
#                                    [--releases]
#   --print-upstream  print the release's upstream directory (downloading the module if
#                     needed) and exit, without building
# Exit status: 0 built or cached, 1 build failed (one line with the log's path), 2 usage.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
# shellcheck source=lib.sh
source "$here/lib.sh"
wrapper="$here/scheduler-perf"

default_release="$(minor_of "$(pinned "$wrapper/go.mod" k8s.io/kubernetes)")"
releases() {
  local f
  echo "$default_release"
  for f in "$wrapper"/1.*.mod; do [[ -f "$f" ]] && basename "$f" .mod; done
}

main() {
  local release print_dir
  release_args --print-upstream -- "$@"
  local modfile kube_module
  if [[ "$release" == "$default_release" ]]; then
    modfile=go.mod kube_module=kubernetes
  else
    modfile="$release.mod" kube_module="kubernetes-$release"
  fi
  if [[ ! "$release" =~ ^[0-9]+\.[0-9]+$ || ! -f "$wrapper/$modfile" || ! -f "$here/$kube_module/etcd.module" ]]; then
    echo "error: no pinned scheduler_perf module for Kubernetes '$release'; releases: $(releases_line)" >&2
    exit 2
  fi

  local kube_version etcd_module etcd_version sources key out
  kube_version="$(pinned "$wrapper/$modfile" k8s.io/kubernetes)"
  etcd_module="$(cat "$here/$kube_module/etcd.module")"
  etcd_version="$(pinned "$here/$etcd_module/go.mod" go.etcd.io/etcd/server/v3)"
  # The wrapper's own files change the binary too: a short hash of them is part of the key.
  sources="$(cd "$wrapper" && cat ./*.go "$modfile" "${modfile%.mod}.sum" | sha256sum | cut -c1-12)"
  key="scheduler-perf-${kube_version}_etcd-${etcd_version}_${sources}"
  out="$cache_root/bin/$key"

  if [[ "$print_dir" == upstream ]]; then
    local mod_dir
    mod_dir="$(go mod download -json "k8s.io/kubernetes@$kube_version" | sed -n 's/.*"Dir": "\(.*\)",*/\1/p')"
    [[ -n "$mod_dir" ]] || { echo "error: cannot download k8s.io/kubernetes@$kube_version" >&2; exit 1; }
    echo "$mod_dir/test/integration/scheduler_perf"
    exit 0
  elif [[ -n "$print_dir" ]]; then
    echo "$out"
    exit 0
  fi

  complete() {
    [[ -x "$1/scheduler_perf.test" && -x "$1/etcd" && -f "$1/upstream" ]] && [[ -d "$(cat "$1/upstream")" ]]
  }
  claim_build "$out" "$key" "install Go >= 1.26 to build the scheduler_perf benchmark"

  local log="$cache_root/logs/build-$key.log" staging="$out.partial"
  rm -rf "$staging"
  mkdir -p "$staging"
  : >"$log"
  fail() {
    echo "error: $1; full log: $log" >&2
    exit 1
  }
  # The control plane's flags, so the two builds share the Go build cache's packages.
  export CGO_ENABLED=0 GOFLAGS=-buildvcs=false
  SECONDS=0
  echo "building the scheduler_perf benchmark ($key) into $out; a first build takes about" \
    "a minute on 2 cores after the release's control plane, whose compiled packages it" \
    "reuses (later runs reuse it); log: $log" >&2

  local cp_dir
  cp_dir="$(env -u DRA_TESTBED_BIN_DIR "$here/build.sh" --kubernetes "$release" --print-dir 2>/dev/null || true)"
  if [[ -n "$cp_dir" && -x "$cp_dir/etcd" ]]; then
    cp "$cp_dir/etcd" "$staging/etcd"
  else
    echo ">> go build go.etcd.io/etcd/server/v3 ($etcd_module)" >>"$log"
    (cd "$here/$etcd_module" && go build -trimpath -ldflags "-s -w" -o "$staging/etcd" go.etcd.io/etcd/server/v3) >>"$log" 2>&1 ||
      fail "building etcd $etcd_version failed"
  fi

  echo ">> go test -c -modfile=$modfile ($kube_version)" >>"$log"
  (cd "$wrapper" && go test -c -trimpath -vet=off -modfile="$modfile" -o "$staging/scheduler_perf.test" .) >>"$log" 2>&1 ||
    fail "building the scheduler_perf benchmark for Kubernetes $release failed"
  (cd "$wrapper" && go list -modfile="$modfile" -f '{{.Dir}}' k8s.io/kubernetes/test/integration/scheduler_perf) >"$staging/upstream" 2>>"$log" ||
    fail "locating k8s.io/kubernetes@$kube_version in the Go module cache failed"

  rm -rf "$out"
  mv "$staging" "$out"
  echo "   built the scheduler_perf benchmark in ${SECONDS}s" >&2
  echo "$out"
}

main "$@"
