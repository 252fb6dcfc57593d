#!/usr/bin/env bash
# Writes (or rewrites) the wrapper module that pins one Kubernetes release or one etcd, and
# tidies it, so a new patch release is one command:
#   tools/k8s/pin.sh kubernetes DIR vX.Y.Z   e.g. kubernetes v1.37.2 / kubernetes-1.36 v1.36.4
#   tools/k8s/pin.sh etcd DIR vX.Y.Z         e.g. etcd-3.7 v3.7.3 / etcd v3.6.16
# The replace block for k8s.io/kubernetes is derived from the pinned release's own go.mod
# (every staging module at v0.Y.Z), the route kubernetes-sigs/scheduler-plugins takes.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
kind="${1:-}" dir="${2:-}" version="${3:-}"
if [[ ! "$kind" =~ ^(kubernetes|etcd)$ || -z "$dir" || ! "$version" =~ ^v[0-9]+\.[0-9]+\.[0-9]+$ ]]; then
  sed -n '2,7s/^# \{0,1\}//p' "${BASH_SOURCE[0]}" >&2
  exit 2
fi
mkdir -p "$here/$dir"
cd "$here/$dir"
rm -f go.mod go.sum
if [[ "$kind" == kubernetes ]]; then
  mod="$(go mod download -json "k8s.io/kubernetes@$version" | sed -n 's/.*"GoMod": "\(.*\)",*/\1/p')"
  staging="v0.${version#v1.}"
  {
    printf 'module dra-testbed/tools/k8s/%s\n\ngo 1.26.0\n\nrequire k8s.io/kubernetes %s\n\nreplace (\n' "$dir" "$version"
    sed -n 's|^[[:space:]]*\(k8s.io/[a-z0-9-]*\) => ./staging/.*|\t\1 => \1 '"$staging"'|p' "$mod"
    printf ')\n\ntool (\n'
    for b in kube-apiserver kube-controller-manager kube-scheduler kubectl; do
      printf '\tk8s.io/kubernetes/cmd/%s\n' "$b"
    done
    printf ')\n'
  } >go.mod
else
  printf 'module dra-testbed/tools/k8s/%s\n\ngo 1.26.0\n\nrequire go.etcd.io/etcd/server/v3 %s\n\ntool go.etcd.io/etcd/server/v3\n' "$dir" "$version" >go.mod
fi
GOFLAGS=-mod=mod go mod tidy
