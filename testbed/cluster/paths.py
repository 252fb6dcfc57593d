"""Where the testbed keeps its state, and where the repository's own files are."""

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


def manifests_dir() -> Path:
    root = repo_root()
    if root is None:
        raise FileNotFoundError(
            "the manifests/ directory is only available from a source checkout of dra-testbed"
        )
    return root / "manifests"
