"""The control-plane binaries: built once by tools/k8s/build.sh into a versioned cache."""

from __future__ import annotations

import os
import subprocess
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


class BinariesError(RuntimeError):
    """The binaries are missing and cannot be built; the message says what to do."""


@dataclass(frozen=True)
class Binaries:
    dir: Path

    def __getitem__(self, name: str) -> Path:
        return self.dir / name

    def missing(self) -> list[str]:
        return [n for n in NAMES if not os.access(self.dir / n, os.X_OK)]


def ensure(*, build: bool = True) -> Binaries:
    """The binaries, from $DRA_TESTBED_BIN_DIR, the cache, or a build (when `build`)."""
    if explicit := os.environ.get("DRA_TESTBED_BIN_DIR"):
        found = Binaries(Path(explicit))
        if missing := found.missing():
            raise BinariesError(f"DRA_TESTBED_BIN_DIR={explicit} lacks {', '.join(missing)}")
        return found
    root = paths.repo_root()
    if root is None:
        raise BinariesError(
            "no control-plane binaries: set DRA_TESTBED_BIN_DIR to a directory holding "
            + ", ".join(NAMES)
        )
    script = root / "tools" / "k8s" / "build.sh"
    args = [str(script)] if build else [str(script), "--print-dir"]
    proc = subprocess.run(args, capture_output=True, text=True, check=False)
    if proc.returncode != 0:
        last = (proc.stderr.strip().splitlines() or ["build failed"])[-1]
        raise BinariesError(last.removeprefix("error: "))
    found = Binaries(Path(proc.stdout.strip().splitlines()[-1]))
    if missing := found.missing():
        raise BinariesError(
            f"control-plane binaries not built yet ({', '.join(missing)} missing in {found.dir});"
            " run tools/k8s/build.sh"
        )
    return found
