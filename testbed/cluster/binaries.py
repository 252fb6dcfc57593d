"""The control-plane binaries: built once per Kubernetes release by tools/k8s/build.sh into a
versioned cache.

Each release has a pinned wrapper module (tools/k8s/kubernetes for the default, 1.37;
tools/k8s/kubernetes-1.NN for others), built with the etcd its release ships
(tools/k8s/etcd-3.N, named in the module's etcd.module) and the one kwok. A preview
(`1.NN-beta`, tools/k8s/kubernetes-1.NN-beta) builds only kube-scheduler from a pre-release
and runs it on the control plane of the release its `control-plane` file names; its cache
directory's `preview.txt` says what runs instead of the release. A release waiting for
modules the proxy does not serve yet has only an `awaiting` file (build.sh names them).

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

_CACHE_KEY = re.compile(r"/kube-v(\d+\.\d+)\.\d+(-beta\.\d+)?[^/]*_etcd-")
_VERSION = re.compile(r"v?(\d+\.\d+)(?:\.\d+)?(-beta(?:\.\d+)?)?")
PREVIEW_FILE = "preview.txt"


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

    def preview(self) -> list[str]:
        """What a preview runs instead of its release, one line each (build.sh writes them:
        the control plane it borrows, each substituted module and why); empty otherwise."""
        listing = self.dir / PREVIEW_FILE
        return listing.read_text().splitlines() if listing.is_file() else []


def release_of(binary_path: str) -> str | None:
    """The Kubernetes release (`1.NN`, `1.NN-beta` for a preview) a cached binary was built
    for, from its cache directory's name (pure); None for binaries outside the cache."""
    m = _CACHE_KEY.search(binary_path)
    return m.group(1) + ("-beta" if m.group(2) else "") if m else None


_KEY_VERSIONS = re.compile(r"/kube-(v[^/_+]+)(?:\+(v[^/_]+))?_etcd-[^/]*/[^/]*$")


@dataclass(frozen=True)
class Versions:
    scheduler: str
    apiserver: str
    """kube-apiserver's (and kube-controller-manager's): a preview's control plane's."""


def versions_of(binary_path: str) -> Versions | None:
    """The versions a cached binary's directory was built with, from its name (pure): one
    for a release, `kube-vSCHEDULER+vAPISERVER` for a preview; None outside the cache."""
    m = _KEY_VERSIONS.search(binary_path)
    return Versions(m.group(1), m.group(2) or m.group(1)) if m else None


def order(release: str) -> tuple[int, int, int]:
    """Sort key of a release (`1.NN` or `1.NN-beta`): a preview after the release before it
    and before its own full release (pure)."""
    m = _VERSION.match(release)
    if m is None:
        return (0, 0, 0)
    major, minor = m.group(1).split(".")
    return (int(major), int(minor), 0 if m.group(2) else 1)


def at_least(release: str, first: str) -> bool:
    """Release `release` (`1.NN`, `1.NN-beta`) is `first` or later by minor (pure)."""
    return order(release)[:2] >= order(first)[:2]


def releases() -> list[str]:
    """The Kubernetes releases with a pinned module in this checkout (ascending)."""
    tools = paths.k8s_tools()
    if tools is None:
        return [DEFAULT_RELEASE]
    found = {DEFAULT_RELEASE}
    for go_mod in tools.glob("kubernetes-*/go.mod"):
        found.add(go_mod.parent.name.removeprefix("kubernetes-"))
    return sorted(found, key=order)


def module_dir(release: str) -> Path | None:
    """The pinned wrapper module of `release` (`1.NN`) in this checkout; None outside one."""
    tools = paths.k8s_tools()
    if tools is None:
        return None
    return tools / ("kubernetes" if release == DEFAULT_RELEASE else f"kubernetes-{release}")


def control_plane(release: str) -> str | None:
    """The release whose kube-apiserver and kube-controller-manager a preview `release` runs
    with; None for a full release (its own)."""
    module = module_dir(release)
    listing = module / "control-plane" if module else None
    return listing.read_text().strip() if listing is not None and listing.is_file() else None


def check_release(release: str) -> str:
    """`release` as `1.NN` (`1.NN-beta` for a preview) if it has a pinned module, else
    UnknownRelease naming those that do, or the modules a release not yet buildable waits
    for (build.sh asks the module proxy)."""
    m = _VERSION.fullmatch(release)
    # 1.35.4: the patch is pinned by the module, not chosen here (v1.38.0-beta.0: the preview)
    norm = m.group(1) + ("-beta" if m.group(2) else "") if m else release
    known = releases()
    if norm not in known:
        module = module_dir(norm)
        if module is not None and (awaiting := module / "awaiting").is_file():
            try:
                script_dir("build.sh", norm, "--print-dir")  # raises with its one line
            except UnknownRelease:
                raise
            except BinariesError as e:  # the script cannot run here: name what it waits for
                needs = [ln for ln in awaiting.read_text().splitlines() if ln[:1] not in "#"]
                raise UnknownRelease(
                    f"Kubernetes {norm} is not buildable yet: missing {' or '.join(needs)} "
                    f"(not checked: {e})"
                ) from None
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
