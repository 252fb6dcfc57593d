"""A fleet handed to `fleet serve`: written as a Fleet object, reconciled by the service.

`fleet apply --through-service` writes the spec as the Fleet object and waits until the
service reports that generation Ready; `fleet delete` of a fleet that has a Fleet object
deletes the object and waits until the service's finalizer has removed the fleet's nodes, or,
when no service takes the deletion up within seconds, lets the caller delete them directly.
So the service's metrics (the dashboard's fleet row) show the work, which a `fleet apply`
process, gone before a scrape, cannot.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from enum import Enum
from typing import Any

from fleet import crd
from fleet.reconcile import ReconcileError
from testbed import vocab
from testbed.kube import errors
from testbed.kube.client import Kube

POLL_SECONDS = 1.0
ACK_SECONDS = 10.0
"""How long `fleet delete` waits for a service to take up a Fleet's deletion before it deletes
the fleet's objects itself; a running service answers within a poll or two."""


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


class Withdrawal(Enum):
    """How `withdraw` ended."""

    NO_OBJECT = "no Fleet object"
    """None there, or none this identity may read (no CRD, or RBAC without Fleets)."""
    SERVED = "served"
    """The service deleted the fleet's objects, then released the Fleet object."""
    UNSERVED = "unserved"
    """The Fleet object is deleted (or marked so) but no service acted on it: the caller
    deletes the fleet's objects directly, then `release`s the object."""


def acknowledged(obj: dict[str, Any]) -> bool:
    """Whether a service has seen this Fleet's deletion (pure): the API server bumps
    metadata.generation when it marks the object deleted, and the service writes
    status.observedGeneration at that generation before deleting anything."""
    status = obj.get("status") or {}
    generation = int(obj["metadata"].get("generation") or 0)
    return bool(obj["metadata"].get("deletionTimestamp")) and (
        int(status.get("observedGeneration") or 0) >= generation
    )


async def withdraw(
    kube: Kube, name: str, *, within: float, ack_within: float = ACK_SECONDS
) -> Withdrawal:
    """Delete the Fleet object `name`; if a service acknowledges the deletion within
    `ack_within` seconds, wait (up to `within`) until it has removed the fleet's objects and
    the object is gone. A Fleet no service holds (no finalizer) or none acknowledges (say
    `fleet serve` stopped) is UNSERVED at once or after `ack_within`, not after `within`."""
    try:
        before = await kube.get(crd.FLEETS, name)
    except (errors.NotFound, errors.Forbidden):
        return Withdrawal.NO_OBJECT
    held = vocab.FLEET_FINALIZER in (before["metadata"].get("finalizers") or [])
    if not await kube.delete(crd.FLEETS, name):
        return Withdrawal.NO_OBJECT
    started = time.monotonic()
    seen = False
    while True:
        try:
            obj = await kube.get(crd.FLEETS, name)
        except errors.NotFound:
            # Gone: released by the service (our finalizer was on it), else never served.
            return Withdrawal.SERVED if held or seen else Withdrawal.UNSERVED
        seen = seen or acknowledged(obj)
        waited = time.monotonic() - started
        if not seen and waited >= min(ack_within, within):
            return Withdrawal.UNSERVED
        if waited >= within:
            raise ReconcileError(
                f"Fleet {name} still there after {within:g}s; fleet serve is deleting its objects"
            )
        await asyncio.sleep(POLL_SECONDS)


async def set_finalizer(kube: Kube, name: str, *, present: bool) -> None:
    """Add or remove the fleet service's finalizer on Fleet `name`, leaving any other; a Fleet
    that is gone is left alone."""
    for _ in range(5):
        try:
            obj = await kube.get(crd.FLEETS, name)
        except errors.NotFound:
            return
        finalizers = [
            f for f in obj["metadata"].get("finalizers") or [] if f != vocab.FLEET_FINALIZER
        ]
        if present:
            finalizers.append(vocab.FLEET_FINALIZER)
        patch = {
            "metadata": {
                "finalizers": finalizers,
                "resourceVersion": obj["metadata"]["resourceVersion"],
            }
        }
        try:
            await kube.patch(crd.FLEETS, name, patch)
            return
        except errors.Conflict:
            continue
        except errors.NotFound:
            return
