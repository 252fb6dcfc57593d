"""Who still uses a local cluster: live holds (experiments, test sessions; see `holds`) and
live loadgen runs recorded on the cluster itself (see `testbed.heartbeats`). `testbed down`
refuses to delete a cluster in use unless forced.
"""

from __future__ import annotations

import json
import subprocess
import time
from pathlib import Path

from testbed import heartbeats, vocab
from testbed.cluster import holds


def users(home: Path, name: str, kubeconfig: Path, kubectl: Path | None) -> list[str]:
    """One phrase per live user of cluster `name` (empty: nobody)."""
    out = [f"{h.what} (pid {h.pid})" for h in holds.holders(home, name)]
    if kubectl is not None and kubeconfig.is_file():
        out += [f"loadgen run in namespace {ns}" for ns in _live_runs(kubeconfig, kubectl)]
    return out


def _live_runs(kubeconfig: Path, kubectl: Path) -> list[str]:
    """Namespaces of loadgen runs whose heartbeat is fresh; none if the API server does not
    answer (a cluster that does not answer runs nothing)."""
    proc = subprocess.run(
        [
            str(kubectl),
            *("--kubeconfig", str(kubeconfig)),
            *("get", "namespaces", "-o", "json", "--request-timeout=5s"),
            *("-l", f"{vocab.LABEL_MANAGED_BY}={vocab.LOADGEN_MANAGED_BY}"),
        ],
        capture_output=True,
        text=True,
        check=False,
    )
    if proc.returncode != 0:
        return []
    try:
        items = json.loads(proc.stdout).get("items") or []
    except json.JSONDecodeError:
        return []
    now = time.time()
    return [
        str(ns["metadata"]["name"])
        for ns in items
        if heartbeats.state(ns, now) == "running" and not ns["metadata"].get("deletionTimestamp")
    ]
