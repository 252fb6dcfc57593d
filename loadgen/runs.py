"""Runs found in a cluster, as plain data: who owns a run's namespace, whether the run is
alive, and what it holds (pure; `loadgen.inventory` lists and removes them).

How a run records itself on its namespace (owner token, heartbeat) and when it counts as
alive is `testbed.heartbeats`, in the floor because `testbed down` asks too.
"""

from __future__ import annotations

import secrets
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from testbed import heartbeats, vocab

DEFAULT_INTERVAL = heartbeats.DEFAULT_INTERVAL
STALE_INTERVALS = heartbeats.STALE_INTERVALS
State = heartbeats.State
state = heartbeats.state


def new_token() -> str:
    return secrets.token_hex(8)


def stamp(epoch: float) -> str:
    """RFC 3339 UTC to the millisecond, as the heartbeat is written."""
    text = datetime.fromtimestamp(epoch, UTC).isoformat(timespec="milliseconds")
    return text.replace("+00:00", "Z")


def ownership(token: str, now: float, interval: float) -> dict[str, str]:
    """The annotations a new run's namespace is created with."""
    return {
        vocab.ANNOTATION_LOADGEN_OWNER: token,
        vocab.ANNOTATION_LOADGEN_HEARTBEAT: stamp(now),
        vocab.ANNOTATION_LOADGEN_INTERVAL: f"{interval:g}",
        vocab.ANNOTATION_LOADGEN_STATE: "running",
    }


def heartbeat(now: float) -> dict[str, Any]:
    """The merge patch that refreshes a run's heartbeat."""
    return {"metadata": {"annotations": {vocab.ANNOTATION_LOADGEN_HEARTBEAT: stamp(now)}}}


def kept() -> dict[str, Any]:
    """The merge patch of a run that ended and leaves its objects on purpose."""
    return {"metadata": {"annotations": {vocab.ANNOTATION_LOADGEN_STATE: "kept"}}}


def owned_by(namespace: dict[str, Any], token: str) -> bool:
    annotations = namespace.get("metadata", {}).get("annotations") or {}
    return annotations.get(vocab.ANNOTATION_LOADGEN_OWNER) == token


@dataclass(frozen=True)
class Run:
    run_id: str
    namespace: str
    age_seconds: float
    state: State
    heartbeat_age_seconds: float | None
    heartbeat_interval: float
    """Seconds between its heartbeats, as the run recorded them."""
    pods: int
    claims: int
    allocated_claims: int
    gpus: int
    """GPUs its allocated claims hold."""
    terminating: bool


def summarize(
    namespaces: Iterable[dict[str, Any]],
    pods: Iterable[dict[str, Any]],
    claims: Iterable[dict[str, Any]],
    now: float,
) -> list[Run]:
    """One `Run` per loadgen namespace, oldest first, from lists of namespaces, pods and
    claims (pods and claims of other namespaces are ignored)."""
    pod_count: dict[str, int] = {}
    for p in pods:
        ns = p["metadata"].get("namespace", "")
        pod_count[ns] = pod_count.get(ns, 0) + 1
    claim_count: dict[str, list[int]] = {}
    for c in claims:
        ns = c["metadata"].get("namespace", "")
        results = ((c.get("status") or {}).get("allocation") or {}).get("devices", {})
        results = results.get("results") or []
        entry = claim_count.setdefault(ns, [0, 0, 0])
        entry[0] += 1
        entry[1] += bool(results)
        entry[2] += sum(1 for r in results if r.get("driver") == vocab.GPU_DRIVER)
    out = []
    for ns in namespaces:
        meta = ns["metadata"]
        name = meta["name"]
        created = heartbeats.parse_time(meta.get("creationTimestamp")) or now
        beat = heartbeats.parse_time(
            (meta.get("annotations") or {}).get(vocab.ANNOTATION_LOADGEN_HEARTBEAT)
        )
        claims_here = claim_count.get(name, [0, 0, 0])
        out.append(
            Run(
                run_id=(meta.get("labels") or {}).get(vocab.LABEL_RUN, name),
                namespace=name,
                age_seconds=max(0.0, now - created),
                state=state(ns, now),
                heartbeat_age_seconds=None if beat is None else max(0.0, now - beat),
                heartbeat_interval=heartbeats.interval(ns),
                pods=pod_count.get(name, 0),
                claims=claims_here[0],
                allocated_claims=claims_here[1],
                gpus=claims_here[2],
                terminating=bool(meta.get("deletionTimestamp")),
            )
        )
    return sorted(out, key=lambda r: -r.age_seconds)
