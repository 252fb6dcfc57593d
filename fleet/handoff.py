"""A fleet handed to `fleet serve`: written as a Fleet object, reconciled by the service.

`fleet apply --through-service` writes the spec as the Fleet object and waits until the
service reports that generation Ready; `fleet delete` of a fleet that has a Fleet object
deletes the object and waits until the service's finalizer has removed the fleet's nodes.
So the service's metrics (the dashboard's fleet row) show the work, which a `fleet apply`
process, gone before a scrape, cannot.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from typing import Any

from fleet import crd
from fleet.reconcile import ReconcileError
from testbed.kube import errors
from testbed.kube.client import Kube

POLL_SECONDS = 1.0


def readiness(obj: dict[str, Any], generation: int) -> tuple[bool, str | None, str]:
    """(Ready at `generation`, the service's refusal of its spec if any, its latest message),
    from the Fleet's status (pure). A failed reconcile is retried by the service: not final."""
    status = obj.get("status") or {}
    for c in status.get("conditions") or []:
        if c.get("type") != "Ready" or status.get("observedGeneration") != generation:
            continue
        message = f"{c.get('reason')}: {c.get('message')}"
        if c.get("status") == "True":
            return True, None, message
        return False, (message if c.get("reason") == "InvalidSpec" else None), message
    return False, None, "waiting for fleet serve"


async def submit(kube: Kube, obj: dict[str, Any]) -> int:
    """Create or replace the Fleet object `obj`; its generation."""
    name = obj["metadata"]["name"]
    try:
        current = await kube.get(crd.FLEETS, name)
    except errors.NotFound:
        written = await kube.create(crd.FLEETS, obj)
    else:
        meta = {**current["metadata"], **obj["metadata"]}
        written = await kube.replace(crd.FLEETS, {**current, **obj, "metadata": meta})
    return int(written["metadata"]["generation"])


async def wait_ready(
    kube: Kube,
    name: str,
    generation: int,
    *,
    within: float,
    on_status: Callable[[str], None] | None = None,
) -> dict[str, Any]:
    """The Fleet's status once the service reports `generation` Ready; ReconcileError if it
    refuses the spec, the object goes, or `within` seconds pass."""
    deadline = time.monotonic() + within
    last = ""
    while True:
        try:
            obj = await kube.get(crd.FLEETS, name)
        except errors.NotFound:
            raise ReconcileError(f"Fleet {name} was deleted while waiting for it") from None
        ready, refused, message = readiness(obj, generation)
        if ready:
            return dict(obj.get("status") or {})
        if refused:
            raise ReconcileError(f"fleet serve refused Fleet {name}: {refused}")
        if on_status is not None and message != last:
            on_status(message)
            last = message
        if time.monotonic() >= deadline:
            raise ReconcileError(
                f"Fleet {name} not Ready after {within:g}s ({message}); is `fleet serve` running?"
            )
        await asyncio.sleep(POLL_SECONDS)


async def withdraw(kube: Kube, name: str, *, within: float) -> bool:
    """Delete the Fleet object `name` and wait until it is gone (the service removes the
    fleet's objects first); False if there is none, or none this identity may read (no CRD,
    or RBAC without Fleets: the caller deletes the objects directly, as before Fleets)."""
    try:
        await kube.get(crd.FLEETS, name)
    except (errors.NotFound, errors.Forbidden):
        return False
    if not await kube.delete(crd.FLEETS, name):
        return False
    deadline = time.monotonic() + within
    while True:
        try:
            await kube.get(crd.FLEETS, name)
        except errors.NotFound:
            return True
        if time.monotonic() >= deadline:
            raise ReconcileError(
                f"Fleet {name} still there after {within:g}s; is `fleet serve` running?"
            )
        await asyncio.sleep(POLL_SECONDS)
