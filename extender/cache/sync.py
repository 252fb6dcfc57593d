"""Keep the store in step with the cluster: one informer task per kind."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable

from extender.cache.store import KINDS, Store
from testbed import runtime
from testbed.kube import watching
from testbed.kube.client import Kube

log = logging.getLogger(__name__)

RestartObserver = Callable[[str, watching.RestartReason], None]

# Only scheduled, unfinished pods matter (job siblings); the API server filters the rest.
# A pod that finishes leaves the selection, which the watch reports as DELETED.
POD_FIELD_SELECTOR = "spec.nodeName!=,status.phase!=Succeeded,status.phase!=Failed"


async def watch_kind(
    kube: Kube,
    store: Store,
    kind: str,
    *,
    on_restart: RestartObserver | None = None,
    stop: asyncio.Event | None = None,
    liveness: watching.Liveness | None = None,
) -> None:
    def restarted(reason: watching.RestartReason) -> None:
        if on_restart is not None:
            on_restart(kind, reason)

    async for item in watching.informer(
        kube,
        KINDS[kind],
        field_selector=POD_FIELD_SELECTOR if kind == "Pod" else None,
        on_restart=restarted,
        stop=stop,
        liveness=liveness,
    ):
        store.feed(kind, item)
        # One watch read can hold dozens of events; kube-scheduler waits on every call, so
        # let a pending call in between events rather than after the whole burst.
        await asyncio.sleep(0)


def start(
    kube: Kube,
    store: Store,
    *,
    on_restart: RestartObserver | None = None,
    stop: asyncio.Event | None = None,
    liveness: watching.Liveness | None = None,
) -> list[asyncio.Task[None]]:
    """Named, supervised informer tasks for every kind the store wants, and the liveness
    probe they share (when given)."""
    tasks = []
    for kind in store.kinds:
        task = asyncio.create_task(
            watch_kind(kube, store, kind, on_restart=on_restart, stop=stop, liveness=liveness),
            name=f"watch-{kind}",
        )
        task.add_done_callback(runtime.log_exit(log))
        tasks.append(task)
    if liveness is not None:
        probe = asyncio.create_task(liveness.run(stop), name="apiserver-liveness")
        probe.add_done_callback(runtime.log_exit(log))
        tasks.append(probe)
    return tasks
