"""The scheduler_perf benchmark of a pinned release, from tools/k8s/scheduler-perf.sh's
cache (built there on first use; the script owns the cache key, the lock and the log), run
through the one wrapper of tools/k8s's pinned-build scripts (`testbed.cluster.binaries`)."""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from testbed.cluster import binaries

_KEY = re.compile(r"scheduler-perf-(v\d+\.\d+\.\d+)_etcd-(v[^_]+)_")


BuildError = binaries.BinariesError
"""The benchmark cannot be built; the message is one line with the build log's path."""
UnknownRelease = binaries.UnknownRelease
"""A release with no pinned scheduler_perf module; the message names those with one."""
SCRIPT = "scheduler-perf.sh"


@dataclass(frozen=True)
class Build:
    dir: Path

    @property
    def binary(self) -> Path:
        return self.dir / "scheduler_perf.test"

    @property
    def upstream(self) -> Path:
        """The release's test/integration/scheduler_perf directory in the Go module cache."""
        return Path((self.dir / "upstream").read_text().strip())

    @property
    def module_cache(self) -> Path:
        """GOMODCACHE: `upstream` is <GOMODCACHE>/k8s.io/kubernetes@vX/test/integration/
        scheduler_perf."""
        return self.upstream.parents[4]

    @property
    def kubernetes_version(self) -> str:
        m = _KEY.search(self.dir.name)
        return m.group(1) if m else "unknown"

    @property
    def etcd_version(self) -> str:
        m = _KEY.search(self.dir.name)
        return m.group(2) if m else "unknown"


def releases() -> list[str]:
    """The releases with a pinned scheduler_perf module (ascending)."""
    return binaries.script_releases(SCRIPT)


def upstream_dir(release: str) -> Path:
    """The release's upstream scheduler_perf directory (the module is downloaded if needed,
    nothing is built); UnknownRelease for a release with no pinned module."""
    return binaries.script_dir(SCRIPT, release, "--print-upstream")


def ensure(release: str) -> Build:
    """The benchmark of `release`, from the cache or a build (its progress lines on our
    stderr as they come; its error line becomes the BuildError)."""
    return Build(binaries.script_build(SCRIPT, release))
