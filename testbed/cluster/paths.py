"""Where the testbed keeps its state, and where the repository's own files are (with the
one-line reason a tools/k8s script gives when it fails)."""

from __future__ import annotations

import os
from pathlib import Path


def state_home() -> Path:
    """Cluster state (kwokctl work dir, kubeconfigs): $DRA_TESTBED_HOME or XDG state dir."""
    if explicit := os.environ.get("DRA_TESTBED_HOME"):
        return Path(explicit)
    xdg = os.environ.get("XDG_STATE_HOME") or str(Path.home() / ".local" / "state")
    return Path(xdg) / "dra-testbed"


def repo_root() -> Path | None:
    """The source checkout this package runs from, if any (editable installs and tests)."""
    root = Path(__file__).resolve().parents[2]
    return root if (root / "tools" / "k8s" / "build.sh").is_file() else None


def k8s_tools() -> Path | None:
    """tools/k8s (the build scripts and pinned modules) in this checkout; None outside one."""
    root = repo_root()
    return None if root is None else root / "tools" / "k8s"


def tool_error(stderr: str, fallback: str) -> str:
    """The reason a tools/k8s script failed: its last stderr line without the `error: `
    prefix the scripts put on it, or `fallback` when it printed none."""
    lines = [ln for ln in stderr.strip().splitlines() if ln.strip()]
    return (lines[-1] if lines else fallback).removeprefix("error: ")


def manifests_dir() -> Path:
    root = repo_root()
    if root is None:
        raise FileNotFoundError(
            "the manifests/ directory is only available from a source checkout of dra-testbed"
        )
    return root / "manifests"
