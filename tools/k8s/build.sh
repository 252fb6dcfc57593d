#!/usr/bin/env bash
# Builds the local control plane from the pinned Go modules beside this script:
#   kubernetes/  kube-apiserver, kube-controller-manager, kube-scheduler, kubectl
#   etcd/        etcd
#   kwok/        kwok, kwokctl
# into a cache directory keyed by the pinned versions, and prints that directory.
# A complete cache is reused without invoking go. DRA_TESTBED_BIN_DIR, when set,
# names a directory of existing binaries to use instead (nothing is built).
#
# Usage: tools/k8s/build.sh [--print-dir]
#   --print-dir   print the cache directory and exit (no build)
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
binaries=(kube-apiserver kube-controller-manager kube-scheduler kubectl etcd kwok kwokctl)

# The version of module $2 as required by the wrapper module in directory $1.
pinned() { sed -n "s|^\(require\)\{0,1\}[[:space:]]*$2 \(v[^ ]*\).*|\2|p" "$here/$1/go.mod" | head -n1; }

kube_version="$(pinned kubernetes k8s.io/kubernetes)"
etcd_version="$(pinned etcd go.etcd.io/etcd/server/v3)"
kwok_version="$(pinned kwok sigs.k8s.io/kwok)"
key="kube-${kube_version}_etcd-${etcd_version}_kwok-${kwok_version}"
cache_root="${DRA_TESTBED_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/dra-testbed}"
out="$cache_root/bin/$key"

if [[ "${1:-}" == "--print-dir" ]]; then
  echo "${DRA_TESTBED_BIN_DIR:-$out}"
  exit 0
fi

complete() {
  local b
  for b in "${binaries[@]}"; do [[ -x "$1/$b" ]] || return 1; done
}

if [[ -n "${DRA_TESTBED_BIN_DIR:-}" ]]; then
  if ! complete "$DRA_TESTBED_BIN_DIR"; then
    echo "error: DRA_TESTBED_BIN_DIR=$DRA_TESTBED_BIN_DIR lacks one of: ${binaries[*]}" >&2
    exit 1
  fi
  echo "$DRA_TESTBED_BIN_DIR"
  exit 0
fi

if complete "$out"; then
  echo "$out"
  exit 0
fi

if ! command -v go >/dev/null 2>&1; then
  echo "error: go is not on PATH; install Go >= 1.26 or set DRA_TESTBED_BIN_DIR to existing binaries" >&2
  exit 1
fi

mkdir -p "$cache_root/logs"
log="$cache_root/logs/build-$key.log"
staging="$out.partial"
rm -rf "$staging"
mkdir -p "$staging"

export CGO_ENABLED=0 GOFLAGS=-buildvcs=false
build_date="$(date -u +%Y-%m-%dT%H:%M:%SZ)"
kube_minor="$(echo "$kube_version" | cut -d. -f2)"
kube_ldflags="-s -w"
for pkg in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
  kube_ldflags+=" -X $pkg.gitVersion=$kube_version -X $pkg.gitMajor=1 -X $pkg.gitMinor=$kube_minor"
  kube_ldflags+=" -X $pkg.gitTreeState=clean -X $pkg.buildDate=$build_date"
done
kwok_ldflags="-s -w -X sigs.k8s.io/kwok/pkg/consts.Version=${kwok_version#v}"
kwok_ldflags+=" -X sigs.k8s.io/kwok/pkg/consts.KubeVersion=${kube_version#v}"

# build MODULE_DIR BINARY PACKAGE LDFLAGS
build() {
  local start=$SECONDS
  echo ">> go build $3 ($1)" >>"$log"
  if ! (cd "$here/$1" && go build -trimpath -ldflags "$4" -o "$staging/$2" "$3") >>"$log" 2>&1; then
    echo "error: building $2 failed; full log: $log" >&2
    exit 1
  fi
  echo "   built $2 in $((SECONDS - start))s" | tee -a "$log" >&2
}

: >"$log"
echo "building control-plane binaries ($key) into $out; log: $log" >&2
for b in kube-apiserver kube-controller-manager kube-scheduler kubectl; do
  build kubernetes "$b" "k8s.io/kubernetes/cmd/$b" "$kube_ldflags"
done
build etcd etcd go.etcd.io/etcd/server/v3 "-s -w"
build kwok kwok sigs.k8s.io/kwok/cmd/kwok "$kwok_ldflags"
build kwok kwokctl sigs.k8s.io/kwok/cmd/kwokctl "$kwok_ldflags"

rm -rf "$out"
mv "$staging" "$out"
echo "$out"
