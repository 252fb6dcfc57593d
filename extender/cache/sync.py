"""Keep the store in step with the cluster: one informer task per kind."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable

from extender.cache.store import Store
from testbed import runtime
from testbed.kube import watching
from testbed.kube.client import Kube

log = logging.getLogger(__name__)

RestartObserver = Callable[[str, watching.RestartReason], None]


async def watch_kind(
    kube: Kube,
    store: Store,
    name: str,
    *,
    on_restart: RestartObserver | None = None,
    stop: asyncio.Event | None = None,
    liveness: watching.Liveness | None = None,
) -> None:
    """Feed the store from the watch `name` (see store.watches)."""
    watch = store.watches[name]

    def restarted(reason: watching.RestartReason) -> None:
        if on_restart is not None:
            on_restart(watch.kind, reason)

    async for item in watching.informer(
        kube,
        watch.resource,
        field_selector=watch.field_selector,
        label_selector=watch.label_selector,
        on_restart=restarted,
        stop=stop,
        liveness=liveness,
    ):
        # Not while a call is judged on the index in a thread (`extender.cache.loan`).
        await store.index.loan.back()
        store.feed(name, item)
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
    for name in store.watches:
        task = asyncio.create_task(
            watch_kind(kube, store, name, on_restart=on_restart, stop=stop, liveness=liveness),
            name=f"watch-{name}",
        )
        task.add_done_callback(runtime.log_exit(log))
        tasks.append(task)
    if liveness is not None:
        probe = asyncio.create_task(liveness.run(stop), name="apiserver-liveness")
        probe.add_done_callback(runtime.log_exit(log))
        tasks.append(probe)
    return tasks
