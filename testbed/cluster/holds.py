"""Holds on a local cluster: who is using it, so `testbed down` does not pull it from under
them and a test session does not take over a cluster someone else runs.

A hold is a small file `<home>/holds/<cluster>/<pid>.json` written by the process using the
cluster (an experiment, a test session) and removed when it is done. A process killed with
SIGKILL leaves its file behind; a hold counts only while its process is alive and is the same
process (its start time, from /proc, matches), so a reused pid never keeps a cluster held.
"""

from __future__ import annotations

import contextlib
import json
import os
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from testbed.cluster import supervision


@dataclass(frozen=True)
class Holder:
    pid: int
    what: str


def _dir(home: Path, cluster: str) -> Path:
    return home / "holds" / cluster


@contextlib.contextmanager
def hold(home: Path, cluster: str, what: str) -> Iterator[None]:
    """Hold `cluster` for the block, as `what` (e.g. "experiment writing to runs/x")."""
    folder = _dir(home, cluster)
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{os.getpid()}.json"
    record = {"pid": os.getpid(), "start": supervision.start_time(os.getpid()), "what": what}
    tmp = folder / f".{os.getpid()}.tmp"
    tmp.write_text(json.dumps(record))
    tmp.replace(path)
    try:
        yield
    finally:
        path.unlink(missing_ok=True)


def holders(home: Path, cluster: str) -> list[Holder]:
    """The live holds on `cluster` (other than this process's own); stale files are removed."""
    out = []
    for path in sorted(_dir(home, cluster).glob("*.json")):
        try:
            record = json.loads(path.read_text())
            pid, start, what = int(record["pid"]), record["start"], str(record["what"])
        except (OSError, ValueError, KeyError, TypeError):
            continue
        if start is None or supervision.start_time(pid) != start:
            path.unlink(missing_ok=True)
            continue
        if pid != os.getpid():
            out.append(Holder(pid, what))
    return out


def release_all(home: Path, cluster: str) -> None:
    """Forget every hold on a cluster that is gone."""
    folder = _dir(home, cluster)
    for path in folder.glob("*"):
        path.unlink(missing_ok=True)
    with contextlib.suppress(OSError):
        folder.rmdir()
