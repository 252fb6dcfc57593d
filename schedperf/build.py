"""The scheduler_perf benchmark of a pinned release, from tools/k8s/scheduler-perf.sh's
cache (built there on first use; the script owns the cache key, the lock and the log)."""

from __future__ import annotations

import re
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

from testbed.cluster import paths

_KEY = re.compile(r"scheduler-perf-(v\d+\.\d+\.\d+)_etcd-(v[^_]+)_")


class BuildError(RuntimeError):
    """The benchmark cannot be built; the message is one line with the build log's path."""


class UnknownRelease(ValueError):
    """A release with no pinned scheduler_perf module; the message names those with one."""


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


def script() -> Path:
    tools = paths.k8s_tools()
    if tools is None:
        raise BuildError("the scheduler_perf benchmark is built from a source checkout only")
    return tools / "scheduler-perf.sh"


def releases() -> list[str]:
    """The releases with a pinned scheduler_perf module (ascending)."""
    proc = subprocess.run(
        [str(script()), "--releases"], capture_output=True, text=True, check=False
    )
    return proc.stdout.split()


def upstream_dir(release: str) -> Path:
    """The release's upstream scheduler_perf directory (the module is downloaded if needed,
    nothing is built); UnknownRelease for a release with no pinned module."""
    proc = subprocess.run(
        [str(script()), "--kubernetes", release, "--print-upstream"],
        capture_output=True,
        text=True,
        check=False,
    )
    if proc.returncode == 2:
        raise UnknownRelease(paths.tool_error(proc.stderr, f"no pinned module for {release}"))
    if proc.returncode != 0:
        raise BuildError(paths.tool_error(proc.stderr, "scheduler-perf.sh failed"))
    return Path(proc.stdout.strip().splitlines()[-1])


def ensure(release: str) -> Build:
    """The benchmark of `release`, from the cache or a build. The build's progress lines go
    to our stderr as they come; its error line becomes the BuildError."""
    proc = subprocess.Popen(
        [str(script()), "--kubernetes", release],
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
    code = proc.wait()
    if code == 2:
        raise UnknownRelease(paths.tool_error(error, f"no pinned module for {release}"))
    if code != 0:
        raise BuildError(paths.tool_error(error, f"scheduler-perf.sh exited {code}"))
    return Build(Path(out.strip().splitlines()[-1]))
