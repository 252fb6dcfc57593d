"""Runs in a cluster: list them, keep one's heartbeat, remove them (the I/O behind
`loadgen runs`, `loadgen cleanup` and a run's own clean-up; `loadgen.runs` judges)."""

from __future__ import annotations

import asyncio
import logging
import time
from typing import Any

from loadgen import runs, templates
from testbed import runtime, vocab
from testbed.kube import errors, resources
from testbed.kube.client import Kube

log = logging.getLogger(__name__)

MANAGED = f"{vocab.LABEL_MANAGED_BY}={templates.MANAGED_BY}"
"""Label selector of everything loadgen creates."""


class NotOwned(Exception):
    """The namespace is not (or no longer) the one this process created."""


async def list_runs(kube: Kube) -> list[runs.Run]:
    """Every loadgen run whose namespace exists, with what it holds."""
    namespaces, claims = await asyncio.gather(
        kube.list(resources.NAMESPACES, label_selector=MANAGED),
        kube.list(resources.RESOURCE_CLAIMS),
    )
    pods = await _run_pods(kube, [ns["metadata"]["name"] for ns in namespaces.items])
    return runs.summarize(namespaces.items, pods, claims.items, time.time())


async def _run_pods(kube: Kube, namespaces: list[str]) -> list[dict[str, Any]]:
    """loadgen's pods in `namespaces`: one list across the cluster where that is allowed,
    else one per namespace, as a ServiceAccount that reads pods only in its runs'
    namespaces may (`loadgen.access`); a namespace it may not read counts no pods."""
    try:
        return (await kube.list(resources.PODS, label_selector=MANAGED)).items
    except errors.Forbidden:
        pass
    limit = asyncio.Semaphore(8)

    async def pods_in(namespace: str) -> list[dict[str, Any]]:
        async with limit:
            try:
                found = await kube.list(resources.PODS, namespace=namespace, label_selector=MANAGED)
            except (errors.Forbidden, errors.NotFound):
                return []
            return found.items

    return [p for items in await asyncio.gather(*map(pods_in, namespaces)) for p in items]


async def _heartbeat_of(kube: Kube, run_id: str) -> str | None:
    """The run's heartbeat annotation as written (None: no namespace, or no heartbeat)."""
    try:
        ns = await kube.get(resources.NAMESPACES, templates.namespace_name(run_id))
    except errors.NotFound:
        return None
    value = (ns["metadata"].get("annotations") or {}).get(vocab.ANNOTATION_LOADGEN_HEARTBEAT)
    return None if value is None else str(value)


async def still_beating(kube: Kube, run_ids: list[str], window: float) -> set[str]:
    """Of runs that look abandoned, those whose heartbeat changes within `window` seconds
    of this caller's own watching: alive after all. A heartbeat's age alone cannot tell a
    killed run from a live one whose beats failed while the control plane was down (every
    live run looks stale right after an outage longer than the stale limit); a beat seen
    to arrive can."""
    first = {i: await _heartbeat_of(kube, i) for i in run_ids}
    alive: set[str] = set()
    deadline = time.monotonic() + window
    while len(alive) < len(run_ids) and time.monotonic() < deadline:
        await asyncio.sleep(min(1.0, max(0.0, deadline - time.monotonic())))
        for i in run_ids:
            if i not in alive and (beat := await _heartbeat_of(kube, i)) != first[i] and beat:
                alive.add(i)
    return alive


async def remove(kube: Kube, run_id: str, *, token: str | None = None) -> bool:
    """Delete run `run_id`'s namespace and with it everything the run made. With `token`,
    only if the namespace is the one created with that token (raises NotOwned otherwise);
    the delete is conditional on the namespace's uid, so one re-created in between is left
    alone. False when it was already gone."""
    name = templates.namespace_name(run_id)
    try:
        ns = await kube.get(resources.NAMESPACES, name)
    except errors.NotFound:
        return False
    if token is not None and not runs.owned_by(ns, token):
        raise NotOwned(f"namespace {name} belongs to another run: left alone")
    body = {
        "propagationPolicy": "Background",
        "preconditions": {"uid": ns["metadata"]["uid"]},
    }
    try:
        await kube.request("DELETE", resources.NAMESPACES.path(None, name), body=body)
    except errors.NotFound:
        return False
    except errors.Conflict:
        raise NotOwned(f"namespace {name} was replaced before it could be removed") from None
    return True


async def wait_gone(kube: Kube, run_id: str, within: float) -> bool:
    """True once the run's namespace (and so each of its claims) no longer exists."""
    name = templates.namespace_name(run_id)
    deadline = time.monotonic() + within
    while True:
        try:
            await kube.get(resources.NAMESPACES, name)
        except errors.NotFound:
            return True
        if time.monotonic() >= deadline:
            return False
        await asyncio.sleep(0.5)


async def keep_alive(kube: Kube, run_id: str, interval: float, stop: asyncio.Event) -> None:
    """Refresh the run's heartbeat every `interval` seconds until `stop`; a failed refresh
    is logged and retried at the next beat (three in a row would make the run look dead)."""
    name = templates.namespace_name(run_id)
    while not stop.is_set():
        if await runtime.wait_set(stop, interval):
            return
        try:
            await kube.patch(resources.NAMESPACES, name, runs.heartbeat(time.time()))
        except errors.KubeError as e:
            log.warning("heartbeat of run %s failed: %s", run_id, e)


async def mark_kept(kube: Kube, run_id: str) -> None:
    """Say on the namespace that the run ended and left its objects on purpose."""
    name = templates.namespace_name(run_id)
    try:
        await kube.patch(resources.NAMESPACES, name, runs.kept())
    except errors.KubeError as e:
        log.warning("could not mark run %s as kept: %s", run_id, e)
