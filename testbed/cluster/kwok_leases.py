"""A kwok controller started again takes its nodes over at once.

kwok manages a node only while it holds the node's Lease (namespace kube-node-lease), under an
identity each process makes afresh (`<hostname>_<uuid>`). A killed controller's leases stay
held for their duration (200 s on the local cluster), and its successor manages none of those
nodes until they lapse: no pod on them starts, runs out its time or ends, and a run stalls.
So before a controller is started again, the leases its dead process held are deleted, and
its successor creates them at start. Leases held by live controllers (the other kwok shards)
are never touched: only the dead process's identity, read from its own log, is released.

`LocalCluster._repair` calls `release` before it starts a controller again.
"""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path

from testbed.cluster.kwok_shards import CONTROLLER

NAMESPACE = "kube-node-lease"
_IDENTITY = re.compile(rb'"id":"([^"]+)"')
_TAIL_BYTES = 256 * 1024


def last_identity(log: Path) -> str | None:
    """The identity in the last line of a kwok controller's log that names one: the process
    that wrote last (None: no log, or no line names one)."""
    try:
        with log.open("rb") as f:
            f.seek(0, 2)
            size = f.tell()
            f.seek(max(0, size - _TAIL_BYTES))
            found = _IDENTITY.findall(f.read())
    except OSError:
        return None
    return found[-1].decode() if found else None


def identities(logs: Path, stopped: list[str]) -> set[str]:
    """The identities of the stopped components' dead kwok processes (`<name>.log` in `logs`)."""
    return {
        identity
        for name in stopped
        if name.startswith(CONTROLLER) and (identity := last_identity(logs / f"{name}.log"))
    }


def held_by(leases_json: str, identities: set[str]) -> list[str]:
    """The names of the leases (`kubectl get leases -o json`) one of `identities` holds."""
    items = json.loads(leases_json).get("items") or []
    return [
        str(item["metadata"]["name"])
        for item in items
        if (item.get("spec") or {}).get("holderIdentity") in identities
    ]


def release(kubectl: Path, kubeconfig: Path, identities: set[str]) -> int:
    """Delete the node leases `identities` hold; how many were deleted (0 when the API server
    does not answer: the successor then waits for them to lapse, as before)."""
    base = [str(kubectl), "--kubeconfig", str(kubeconfig), "--request-timeout=30s"]
    listed = subprocess.run(
        [*base, "get", "leases", "-n", NAMESPACE, "-o", "json"],
        capture_output=True,
        text=True,
        check=False,
    )
    if listed.returncode != 0 or not identities:
        return 0
    names = held_by(listed.stdout, identities)
    deleted = 0
    for i in range(0, len(names), 500):  # bounded command lines
        chunk = names[i : i + 500]
        done = subprocess.run(
            [*base, "delete", "leases", "-n", NAMESPACE, "--ignore-not-found", *chunk],
            capture_output=True,
            check=False,
        )
        deleted += len(chunk) if done.returncode == 0 else 0
    return deleted
