# Sourced by the build scripts beside it (build.sh, scheduler-perf.sh, clusterloader2.sh):
# what each does before it builds into the shared cache.

# The cache every build writes under ($DRA_TESTBED_CACHE, else the user's cache directory).
cache_root="${DRA_TESTBED_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/dra-testbed}"

# The version of module $2 that the go.mod file $1 requires.
pinned() { sed -n "s|^\(require\)\{0,1\}[[:space:]]*$2 \(v[^ ]*\).*|\2|p" "$1" | head -n1; }

# The release (1.NN) of version $1 (v1.NN.P).
minor_of() { echo "$1" | sed -n 's|^v\([0-9]*\.[0-9]*\)\..*|\1|p'; }

# The caller's `releases` in order, on one line, for its error messages.
releases_line() { releases | sort -uV | paste -sd, | sed 's/,/, /g'; }

# release_args [--print-WORD ...] -- ARGS...: the command line every build script takes, into
# the caller's `release` (1.NN, a leading v dropped; default $default_release) and `print_dir`
# (1 for --print-dir, WORD for one of the caller's extra --print-WORD flags, else empty).
# --releases and --help print and exit 0; anything else is a usage error (exit 2).
release_args() {
  local extra=" "
  while [[ "$1" != -- ]]; do extra+="$1 " && shift; done
  shift
  release="$default_release" print_dir=""
  while [[ $# -gt 0 ]]; do
    case "$1" in
      --print-dir) print_dir=1 ;;
      --releases) releases | sort -uV; exit 0 ;;
      --kubernetes) release="${2:-}"; shift ;;
      --kubernetes=*) release="${1#*=}" ;;
      # The script's header comment, up to its first line of code.
      -h | --help) sed -n '2,/^[^#]/s/^# \{0,1\}//p' "${BASH_SOURCE[-1]}"; exit 0 ;;
      *)
        [[ "$1" == --print-* && "$extra" == *" $1 "* ]] || {
          echo "error: unknown argument $1 (see --help)" >&2
          exit 2
        }
        print_dir="${1#--print-}"
        ;;
    esac
    shift
  done
  release="${release#v}"
}

# claim_build OUT NAME GO_HINT: print OUT and exit 0 when the caller's `complete OUT` holds;
# otherwise check that go is on PATH (else one error line ending in GO_HINT, exit 1) and take
# the build lock of NAME. Two first runs would build into the same staging directory: the
# second waits here for the first, then finds OUT complete. Returns when the caller builds.
claim_build() {
  local out="$1" name="$2" hint="$3"
  if complete "$out"; then
    echo "$out"
    exit 0
  fi
  if ! command -v go >/dev/null 2>&1; then
    echo "error: go is not on PATH; $hint" >&2
    exit 1
  fi
  mkdir -p "$cache_root/logs"
  if command -v flock >/dev/null 2>&1; then
    exec 9>"$cache_root/build-$name.lock"
    if ! flock -n 9; then
      echo "another build of $name is running; waiting for it to finish" >&2
      flock 9
    fi
    if complete "$out"; then
      echo "$out"
      exit 0
    fi
  fi
}

# awaited FILE: whether the release that FILE (a pin directory's `awaiting`) waits for can be
# pinned now. Each line of FILE is one set of MODULE@VERSION that together make it buildable.
# Asks the module proxy for each (once per call); prints the first line all of whose modules
# are served and returns 0, else prints the missing ones (`not served`, `unreachable`, or
# `not checked` without go; comma-separated, one line) and returns 1.
awaited() {
  local line m missing=() answer
  while read -r line; do
    [[ -z "$line" || "$line" == \#* ]] && continue
    local all=1
    for m in $line; do
      answer="$(cd / && GOFLAGS='' go mod download -json "$m" 2>&1)" || true
      if ! grep -q '"Error"' <<<"$answer" && grep -q '"GoMod"' <<<"$answer"; then
        continue
      fi
      all=""
      if ! command -v go >/dev/null 2>&1; then
        missing+=("$m (not checked: go is not on PATH)")
      elif grep -q 'not available\|404\|410\|not found\|unknown revision\|invalid version' <<<"$answer"; then
        missing+=("$m (not served)")
      else
        missing+=("$m (unreachable)")
      fi
    done
    if [[ -n "$all" ]]; then
      echo "$line"
      return 0
    fi
  done <"$1"
  local joined
  joined="$(printf '%s, ' "${missing[@]}")"
  echo "${joined%, }"
  return 1
}
