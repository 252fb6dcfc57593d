#!/usr/bin/env bash
# Writes (or rewrites) the wrapper module that pins one Kubernetes release or one etcd, and
# tidies it, so a new patch release is one command:
#   tools/k8s/pin.sh kubernetes DIR vX.Y.Z       e.g. kubernetes v1.37.2 / kubernetes-1.36 v1.36.4
#                                                or kubernetes-1.38-beta v1.38.0-beta.0
#   tools/k8s/pin.sh etcd DIR vX.Y.Z             e.g. etcd-3.7 v3.7.3 / etcd v3.6.16
#   tools/k8s/pin.sh scheduler-perf FILE vX.Y.Z  e.g. go.mod v1.37.2 / 1.36.mod v1.36.4
# The replace block for k8s.io/kubernetes is derived from the pinned release's own go.mod
# (every staging module at v0.Y.Z), the route kubernetes-sigs/scheduler-plugins takes; a
# release's feature-gates.txt is written from its own gate registry (gates.go).
# scheduler-perf/ is one module (one benchmark file) with a module file per release: go.mod
# for the default one, 1.NN.mod (+ 1.NN.sum) for the others, used with `go -modfile`.
# A kubernetes DIR may hold, before pin.sh runs (a preview release, e.g. kubernetes-1.38-beta):
#   toolchain      the Go toolchain it needs (GOTOOLCHAIN, fetched through the module proxy)
#   substitutions  `MODULE => TARGET  # why` lines: replaces for modules the proxy does not
#                  serve; a local TARGET (./dir) becomes an empty stub module
#   control-plane  the release whose other binaries it runs with: only kube-scheduler is built
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
kind="${1:-}" dir="${2:-}" version="${3:-}"
usage() { sed -n '2,12s/^# \{0,1\}//p' "${BASH_SOURCE[0]}" >&2; exit 2; }
[[ "$kind" =~ ^(kubernetes|etcd|scheduler-perf)$ && -n "$dir" && "$version" =~ ^v[0-9]+\.[0-9]+\.[0-9]+(-(alpha|beta|rc)\.[0-9]+)?$ ]] || usage

# The require line and replace block of a module that builds from k8s.io/kubernetes $1, with
# the replace lines of the `substitutions` file $2 (if given) instead of the staging lines of
# the modules they name.
kubernetes_requirements() {
  local mod staging subs="${2:-/dev/null}"
  mod="$(go mod download -json "k8s.io/kubernetes@$1" | sed -n 's/.*"GoMod": "\(.*\)",*/\1/p')"
  staging="v0.${1#v1.}"
  printf 'require k8s.io/kubernetes %s\n\nreplace (\n' "$1"
  sed -n 's|^[[:space:]]*\(k8s.io/[a-z0-9-]*\) => ./staging/.*|\1 => \1 '"$staging"'|p' "$mod" |
    grep -v -F -f <(replaces "$subs" | cut -d' ' -f1 | sed 's/$/ =>/') | sed 's/^/\t/' || true
  replaces "$subs" | sed 's/^/\t/'
  printf ')\n'
}

# The replace lines of the `substitutions` file $1 (`MODULE => TARGET  # why`), comments dropped.
replaces() { sed -n 's|^\([^#[:space:]][^#]*[^#[:space:]]\)[[:space:]]*\(#.*\)\{0,1\}$|\1|p' "$1"; }

case "$kind" in
kubernetes)
  mkdir -p "$here/$dir"
  cd "$here/$dir"
  rm -f go.mod go.sum
  if [[ -f toolchain ]]; then
    GOTOOLCHAIN="$(cat toolchain)"
    export GOTOOLCHAIN
  fi
  subs=/dev/null
  if [[ -f substitutions ]]; then
    subs=substitutions
    # A local target is an empty module: nothing the built binaries import comes from it.
    replaces "$subs" | sed -n 's|^\([^ ]*\) => \(\./[^ ]*\)$|\1 \2|p' | while read -r module stub; do
      mkdir -p "$stub"
      printf 'module %s\n\ngo 1.26.0\n' "$module" >"$stub/go.mod"
    done
  fi
  tools=(kube-apiserver kube-controller-manager kube-scheduler kubectl)
  [[ -f control-plane ]] && tools=(kube-scheduler)
  {
    printf 'module dra-testbed/tools/k8s/%s\n\ngo 1.26.0\n\n' "$dir"
    kubernetes_requirements "$version" "$subs"
    printf '\ntool (\n'
    for b in "${tools[@]}"; do
      printf '\tk8s.io/kubernetes/cmd/%s\n' "$b"
    done
    printf ')\n'
  } >go.mod
  # -e for a preview: tidy also resolves its packages' tests' imports, some of them from
  # staging modules that are not served yet either (k8s.io/ktesting for 1.38.0-beta.0)
  tidy=(go mod tidy)
  [[ "$subs" != /dev/null ]] && tidy+=(-e)
  GOFLAGS=-mod=mod "${tidy[@]}"
  # Every gate the release knows, with its stage and default (testbed/cluster/feature_gates.py
  # reads it: gates the release lacks are never set, and a user's unknown gate is refused).
  go run ../gates.go >feature-gates.txt
  ;;
etcd)
  mkdir -p "$here/$dir"
  cd "$here/$dir"
  rm -f go.mod go.sum
  printf 'module dra-testbed/tools/k8s/%s\n\ngo 1.26.0\n\nrequire go.etcd.io/etcd/server/v3 %s\n\ntool go.etcd.io/etcd/server/v3\n' "$dir" "$version" >go.mod
  GOFLAGS=-mod=mod go mod tidy
  ;;
scheduler-perf)
  [[ "$dir" == go.mod || "$dir" =~ ^1\.[0-9]+\.mod$ ]] || usage
  cd "$here/scheduler-perf"
  rm -f "$dir" "${dir%.mod}.sum"
  {
    printf 'module dra-testbed/tools/k8s/scheduler-perf\n\ngo 1.26.0\n\n'
    kubernetes_requirements "$version"
  } >"$dir"
  GOFLAGS=-mod=mod go mod tidy -modfile="$dir"
  ;;
esac
