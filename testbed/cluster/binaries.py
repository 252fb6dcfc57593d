"""The control-plane binaries: built once per Kubernetes release by tools/k8s/build.sh into a
versioned cache.

Each release has a pinned wrapper module (tools/k8s/kubernetes for the default, 1.37;
tools/k8s/kubernetes-1.NN for others), built with the etcd its release ships
(tools/k8s/etcd-3.N, named in the module's etcd.module) and the one kwok.

tools/k8s's pinned-build scripts (build.sh, scheduler-perf.sh) share one contract, and
`script_dir` / `script_build` are its one wrapper: `--kubernetes 1.NN`, `--print-dir`,
`--releases`; the cache directory as the last line of stdout; exit 2 for a release with no
pinned module, any other failure with an `error: ` line naming the build's log.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

from testbed.cluster import paths

NAMES = (
    "kube-apiserver",
    "kube-controller-manager",
    "kube-scheduler",
    "kubectl",
    "etcd",
    "kwok",
    "kwokctl",
)
DEFAULT_RELEASE = "1.37"

_CACHE_KEY = re.compile(r"/kube-v(\d+\.\d+)\.\d+[^/]*_etcd-")


class BinariesError(RuntimeError):
    """The binaries are missing and cannot be built; the message says what to do."""


class UnknownRelease(BinariesError):
    """A Kubernetes release with no pinned module: a usage error."""


@dataclass(frozen=True)
class Binaries:
    dir: Path

    def __getitem__(self, name: str) -> Path:
        return self.dir / name

    def missing(self) -> list[str]:
        return [n for n in NAMES if not os.access(self.dir / n, os.X_OK)]


def release_of(binary_path: str) -> str | None:
    """The Kubernetes release (`1.NN`) a cached binary was built for, from its cache
    directory's name (pure); None for binaries outside the cache."""
    m = _CACHE_KEY.search(binary_path)
    return m.group(1) if m else None


def at_least(release: str, first: str) -> bool:
    """Release `release` (`1.NN`) is `first` or later (pure)."""
    return int(release.split(".")[1]) >= int(first.split(".")[1])


def releases() -> list[str]:
    """The Kubernetes releases with a pinned module in this checkout (ascending)."""
    tools = paths.k8s_tools()
    if tools is None:
        return [DEFAULT_RELEASE]
    found = {DEFAULT_RELEASE}
    for go_mod in tools.glob("kubernetes-*/go.mod"):
        found.add(go_mod.parent.name.removeprefix("kubernetes-"))
    return sorted(found, key=lambda r: tuple(int(p) for p in r.split(".") if p.isdigit()))


def module_dir(release: str) -> Path | None:
    """The pinned wrapper module of `release` (`1.NN`) in this checkout; None outside one."""
    tools = paths.k8s_tools()
    if tools is None:
        return None
    return tools / ("kubernetes" if release == DEFAULT_RELEASE else f"kubernetes-{release}")


def check_release(release: str) -> str:
    """`release` as `1.NN` if it has a pinned module, else UnknownRelease naming those that do."""
    norm = release.removeprefix("v")
    if norm.count(".") == 2:  # 1.35.4: the patch is pinned by the module, not chosen here
        norm = norm.rsplit(".", 1)[0]
    known = releases()
    if norm not in known:
        raise UnknownRelease(
            f"no pinned module for Kubernetes {release!r}; releases: {', '.join(known)}"
        )
    return norm


def script(name: str) -> Path:
    """tools/k8s/`name` of this checkout (BinariesError outside one)."""
    tools = paths.k8s_tools()
    if tools is None:
        raise BinariesError(f"tools/k8s/{name} runs from a source checkout of dra-testbed only")
    return tools / name


def script_releases(name: str) -> list[str]:
    """The releases tools/k8s/`name` has a pinned module for (ascending, as it lists them)."""
    proc = subprocess.run(
        [str(script(name)), "--releases"], capture_output=True, text=True, check=False
    )
    return proc.stdout.split()


def script_dir(name: str, release: str, *flags: str) -> Path:
    """The directory tools/k8s/`name` prints for `release` with `flags` (`--print-dir`, or a
    script's own), nothing built; UnknownRelease or BinariesError with the script's reason."""
    proc = subprocess.run(
        [str(script(name)), "--kubernetes", release, *flags],
        capture_output=True,
        text=True,
        check=False,
    )
    _raise_for(name, release, proc.returncode, proc.stderr)
    return Path(proc.stdout.strip().splitlines()[-1])


def script_build(name: str, release: str) -> Path:
    """Build (or reuse) `release` with tools/k8s/`name`; its directory. The build's progress
    lines go to our stderr as they come (a first build takes minutes: they are how the user
    knows it is alive); its `error: ` line becomes the exception's message."""
    proc = subprocess.Popen(
        [str(script(name)), "--kubernetes", release],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert proc.stderr is not None and proc.stdout is not None
    error = ""
    for line in proc.stderr:
        if line.startswith("error: "):
            error = line
        else:
            sys.stderr.write(line)
            sys.stderr.flush()
    out = proc.stdout.read()
    _raise_for(name, release, proc.wait(), error)
    return Path(out.strip().splitlines()[-1])


def _raise_for(name: str, release: str, code: int, stderr: str) -> None:
    if code == 2:
        raise UnknownRelease(paths.tool_error(stderr, f"no pinned module for {release}"))
    if code != 0:
        raise BinariesError(paths.tool_error(stderr, f"tools/k8s/{name} exited {code}"))


def ensure(*, build: bool = True, release: str = DEFAULT_RELEASE) -> Binaries:
    """The binaries of `release`, from $DRA_TESTBED_BIN_DIR, the cache, or a build (when
    `build`; the build's progress goes to our stderr as it happens)."""
    if explicit := os.environ.get("DRA_TESTBED_BIN_DIR"):
        found = Binaries(Path(explicit))
        if missing := found.missing():
            raise BinariesError(f"DRA_TESTBED_BIN_DIR={explicit} lacks {', '.join(missing)}")
        return found
    if paths.k8s_tools() is None:
        raise BinariesError(
            "no control-plane binaries: set DRA_TESTBED_BIN_DIR to a directory holding "
            + ", ".join(NAMES)
        )
    release = check_release(release)
    found = Binaries(script_dir("build.sh", release, "--print-dir"))
    if found.missing() and build:
        try:
            found = Binaries(script_build("build.sh", release))
        except BinariesError as e:
            raise BinariesError(
                f"building the Kubernetes {release} control plane failed: {e}"
            ) from None
    if missing := found.missing():
        raise BinariesError(
            f"control-plane binaries not built yet ({', '.join(missing)} missing in {found.dir});"
            f" run tools/k8s/build.sh --kubernetes {release}"
        )
    return found
