#!/usr/bin/env bash
# Builds the local control plane from the pinned Go modules beside this script:
#   kubernetes/        kube-apiserver, kube-controller-manager, kube-scheduler, kubectl
#                      of the default release (1.37)
#   kubernetes-1.NN/   the same for another release (--kubernetes 1.NN)
#   kubernetes-1.NN-beta/  a preview (its `control-plane` file names a release): only its
#                      kube-scheduler, built with the Go of its `toolchain` file and the
#                      replaces of its `substitutions` file, beside that release's other
#                      binaries (a newer scheduler than API server: outside the supported skew)
#   kubernetes-1.NN/awaiting  a release not buildable yet: the modules it waits for, asked for
#                      on every run (by a preview's run too); until they are served,
#                      --kubernetes 1.NN names the missing ones (exit 2)
#   etcd-3.N/          etcd; each kubernetes*/etcd.module names the one its release ships
#   kwok/              kwok, kwokctl
# (tools/k8s/pin.sh writes a wrapper module for a new patch release.)
# into a cache directory keyed by the pinned versions, and prints that directory.
# A complete cache is reused without invoking go. DRA_TESTBED_BIN_DIR, when set,
# names a directory of existing binaries to use instead (nothing is built).
# One build per cache directory at a time: a second caller waits for the first.
#
# Usage: tools/k8s/build.sh [--kubernetes 1.NN] [--print-dir] [--releases]
#   --kubernetes 1.NN  the Kubernetes release (default: the one in kubernetes/), e.g. 1.36,
#                      1.38-beta
#   --print-dir        print the cache directory and exit (no build)
#   --releases         print the releases with a pinned module and exit
# Exit status: 0 built or cached, 1 build failed, 2 usage (e.g. a release with no module).
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
# shellcheck source=lib.sh
source "$here/lib.sh"
binaries=(kube-apiserver kube-controller-manager kube-scheduler kubectl etcd kwok kwokctl)

default_release="$(minor_of "$(pinned "$here/kubernetes/go.mod" k8s.io/kubernetes)")"
releases() {
  local d
  echo "$default_release"
  for d in "$here"/kubernetes-*/; do
    [[ -f "$d/go.mod" ]] && basename "$d" | sed 's/^kubernetes-//'
  done
}

# The pin.sh call for release $1 once the modules $2 (an `awaiting` line) are served.
pin_command() {
  local first="${2%% *}"
  echo "tools/k8s/pin.sh kubernetes kubernetes-$1 ${first#*@}"
}

# not_yet RELEASE AWAITING: one line and exit 2 for a release that waits for modules: which
# are missing, or, once they are served, the pin that is all it needs. Nothing is built.
not_yet() {
  local served
  if served="$(awaited "$2")"; then
    echo "error: Kubernetes $1 is served now ($served) but not pinned yet: $(pin_command "$1" "$served")" >&2
  else
    echo "error: Kubernetes $1 is not buildable yet: missing $served; releases: $(releases_line)" >&2
  fi
  exit 2
}

# Everything below runs from main, which bash reads whole before running it: editing or
# checking out this file while a build runs cannot change what that build does.
main() {
  release_args -- "$@"
  if [[ "$release" == "$default_release" ]]; then
    kube_module=kubernetes
  else
    kube_module="kubernetes-$release"
  fi
  if [[ -f "$here/$kube_module/awaiting" && ! -f "$here/$kube_module/go.mod" ]]; then
    not_yet "$release" "$here/$kube_module/awaiting"
  fi
  if [[ ! "$release" =~ ^[0-9]+\.[0-9]+(-beta)?$ || ! -f "$here/$kube_module/go.mod" ]]; then
    echo "error: no pinned module for Kubernetes '$release'; releases: $(releases_line)" >&2
    exit 2
  fi

  kube_version="$(pinned "$here/$kube_module/go.mod" k8s.io/kubernetes)"
  # A preview runs another release's control plane: its key names both.
  control_release=""
  plane_module="$kube_module"
  key_kube="$kube_version"
  if [[ -f "$here/$kube_module/control-plane" ]]; then
    control_release="$(cat "$here/$kube_module/control-plane")"
    plane_module=kubernetes
    [[ "$control_release" != "$default_release" ]] && plane_module="kubernetes-$control_release"
    key_kube+="+$(pinned "$here/$plane_module/go.mod" k8s.io/kubernetes)"
  fi
  etcd_module="$(cat "$here/$plane_module/etcd.module")"
  etcd_version="$(pinned "$here/$etcd_module/go.mod" go.etcd.io/etcd/server/v3)"
  kwok_version="$(pinned "$here/kwok/go.mod" sigs.k8s.io/kwok)"
  key="kube-${key_kube}_etcd-${etcd_version}_kwok-${kwok_version}"
  out="$cache_root/bin/$key"

  if [[ -n "$print_dir" ]]; then
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

  # The full release a preview stands in for is asked for on every run: the day its modules
  # are served, this says so (pinning it is then one pin.sh call).
  full="$here/kubernetes-${release%-beta}/awaiting"
  if [[ -n "$control_release" && -f "$full" ]]; then
    if served="$(awaited "$full")"; then
      echo "note: Kubernetes ${release%-beta} in full is served now ($served): $(pin_command "${release%-beta}" "$served")" >&2
    else
      echo "note: Kubernetes ${release%-beta} in full is not buildable yet, missing $served;" \
        "the preview runs kube-scheduler ${kube_version} on ${control_release}'s control plane" >&2
    fi
  fi

  # Two first `testbed up`s (or a set-up and a test run) take turns here.
  claim_build "$out" "$key" "install Go >= 1.26 or set DRA_TESTBED_BIN_DIR to existing binaries"

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

  # Three `go build`s: Kubernetes' four binaries in one (their packages compiled once and
  # the links overlapping the compiles), etcd, kwok's two. Wall seconds each step took on an
  # otherwise idle 2-core machine with empty Go caches, downloads included (1.37.2, the first
  # release built: 448/28/97 s; 1.35.8 and 1.36.4 after it, reusing the compiled packages
  # they share: ~300/16/3 s); scaled by the cores here for the estimate.
  steps=(kubernetes etcd kwok)
  declare -A cost=([kubernetes]=450 [etcd]=30 [kwok]=100)
  first="a first build"
  for other in "$cache_root"/bin/kube-v*; do
    # Another release built here left its compiled packages in the Go build cache.
    if [[ -d "$other" && "$other" != "$out" && "$other" != "$staging" ]]; then
      cost=([kubernetes]=310 [etcd]=20 [kwok]=5)
      first="a build after another release's"
      break
    fi
  done
  if [[ -n "$control_release" ]]; then
    # A preview builds kube-scheduler alone, with a Go of its own (nothing compiled is
    # shared with the other releases): 1.38.0-beta.0 with go1.27.3, toolchain download
    # included, on an otherwise idle 2-core machine: see docs/local-control-plane.md.
    steps=(kubernetes)
    cost=([kubernetes]=240)
    first="a preview's kube-scheduler"
  fi
  cores="$(nproc 2>/dev/null || echo 2)"
  scale() { echo $(($1 * 2 / (cores < 8 ? cores : 8))); }
  remaining_cost() {
    local step sum=0 seen=""
    for step in "${steps[@]}"; do
      [[ "$step" == "$1" ]] && seen=1
      [[ -n "$seen" ]] && sum=$((sum + ${cost[$step]}))
    done
    scale "$sum"
  }
  clock() { printf '%dm%02ds' $(($1 / 60)) $(($1 % 60)); }

  # Prints, while a build runs, a line that says it is alive: which binary, how long this
  # build has run, how much is left by the estimate. On a terminal the line is rewritten in
  # place every 5 s; otherwise a new line every 60 s.
  heartbeat() {
    local name="$1" n="$2" total="$3" every=60 t=0 left fetched
    [[ -t 2 ]] && every=5
    while sleep 1; do
      kill -0 $$ 2>/dev/null || exit 0 # the build was killed
      t=$((t + 1))
      ((t % every == 0)) || continue
      left=$(($(remaining_cost "$name") - (SECONDS - binary_start)))
      local line
      line="   building $name ($n/$total): $(clock "$SECONDS") elapsed, "
      if ((left > 0)); then
        line+="about $(clock "$left") left"
      else
        line+="past the estimate (a busy machine builds slower)"
      fi
      fetched="$(grep -c '^go: downloading' "$log" || true)"
      ((fetched > 0)) && line+=" ($fetched modules downloaded)"
      if [[ -t 2 ]]; then printf '\r%s ' "$line" >&2; else echo "$line" >&2; fi
    done
  }

  beat=""
  trap '[[ -n "$beat" ]] && kill "$beat" 2>/dev/null; true' EXIT

  # build STEP N MODULE_DIR LDFLAGS OUTPUT PACKAGE...: one `go build` of the PACKAGEs in
  # MODULE_DIR, to OUTPUT (a file for one package, the staging directory for several, where
  # each binary is named after its package).
  build() {
    local step="$1" n="$2" module="$3" ldflags="$4" output="$5"
    shift 5
    binary_start=$SECONDS
    echo ">> go build $* ($module)" >>"$log"
    heartbeat "$step" "$n" "${#steps[@]}" &
    beat=$!
    # A module's `toolchain` file names the Go it needs (fetched through the module proxy).
    if ! (cd "$here/$module" && if [[ -f toolchain ]]; then GOTOOLCHAIN="$(cat toolchain)" && export GOTOOLCHAIN; fi &&
      go build -trimpath -ldflags "$ldflags" -o "$output" "$@") >>"$log" 2>&1; then
      kill "$beat" 2>/dev/null || true
      [[ -t 2 ]] && echo >&2
      echo "error: building $step failed; full log: $log" >&2
      exit 1
    fi
    kill "$beat" 2>/dev/null || true
    wait "$beat" 2>/dev/null || true
    beat=""
    [[ -t 2 ]] && printf '\r\033[K' >&2
    echo "   built $step ($n/${#steps[@]}) in $((SECONDS - binary_start))s, $(clock "$SECONDS") elapsed" | tee -a "$log" >&2
  }

  # A preview's other binaries: its control-plane release's (built or reused by this script),
  # linked in, and `preview.txt`, what runs instead of the release, for `testbed status`.
  with_control_plane() {
    local plane b
    plane="$("$here/build.sh" --kubernetes "$control_release" | tail -n1)" || {
      echo "error: building Kubernetes $control_release, the preview's control plane, failed" >&2
      exit 1
    }
    for b in "${binaries[@]}"; do
      [[ "$b" == kube-scheduler ]] && continue
      ln -f "$plane/$b" "$staging/$b" 2>/dev/null || cp "$plane/$b" "$staging/$b"
    done
    {
      echo "kube-scheduler $kube_version (built with $(cat "$here/$kube_module/toolchain" 2>/dev/null || go env GOVERSION))" \
        "runs with Kubernetes $control_release's control plane: ${key_kube#*+} kube-apiserver," \
        "kube-controller-manager and kubectl, etcd $etcd_version, kwok $kwok_version"
      sed -n 's/^\([^#[:space:]].*\)/\1/p' "$here/$kube_module/substitutions" 2>/dev/null
    } >"$staging/preview.txt"
  }

  : >"$log"
  SECONDS=0
  echo "building the control plane ($key) into $out;" \
    "$first takes about $(clock "$(remaining_cost kubernetes)") on $cores cores" \
    "(later runs reuse it); log: $log" >&2
  if [[ -n "$control_release" ]]; then
    build kubernetes 1 "$kube_module" "$kube_ldflags" "$staging/kube-scheduler" \
      k8s.io/kubernetes/cmd/kube-scheduler
    with_control_plane
  else
    build kubernetes 1 "$kube_module" "$kube_ldflags" "$staging/" \
      k8s.io/kubernetes/cmd/{kube-apiserver,kube-controller-manager,kube-scheduler,kubectl}
    build etcd 2 "$etcd_module" "-s -w" "$staging/etcd" go.etcd.io/etcd/server/v3
    build kwok 3 kwok "$kwok_ldflags" "$staging/" sigs.k8s.io/kwok/cmd/{kwok,kwokctl}
  fi
  complete "$staging" || {
    echo "error: the build left out one of: ${binaries[*]}; full log: $log" >&2
    exit 1
  }

  rm -rf "$out"
  mv "$staging" "$out"
  echo "$out"
}

main "$@"
