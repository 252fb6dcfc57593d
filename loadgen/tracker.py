"""Watches a run's pods and claims and the fleet's slices, feeding `loadgen.records`.

The I/O shell around the pure records: one informer per resource type, no polling (nodes
are listed once, see `Tracker.start`). Every event is stamped with the client's receive
time (`clock`, monotonic seconds) the moment it arrives, the way CL2's PodStartupLatency
does, and handed to the matching `watch_events.on_*` function; waiters (a phase waiting for its
pods to run) are checked after each event.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Awaitable, Callable
from typing import Any

from loadgen import records, watch_events, watch_gaps
from testbed import runtime, vocab
from testbed.kube import errors, resources, watching
from testbed.kube.client import Kube

log = logging.getLogger(__name__)

Clock = Callable[[], float]
Handler = Callable[[records.Records, str, dict[str, Any], float], None]


class Tracker:
    """Keeps `self.records` of one run up to date while it runs.

    `start()` returns once every watch has listed, so nothing created afterwards is missed.
    """

    def __init__(
        self,
        kube: Kube,
        *,
        namespace: str | records.Scope,
        pod_selector: dict[str, str],
        node_selector: dict[str, str] | None = None,
        clock: Clock = time.monotonic,
        sample_interval: float = 1.0,
    ) -> None:
        self.kube = kube
        self.pod_selector = dict(pod_selector)
        self.clock = clock
        self.sample_interval = sample_interval
        self.records = records.new(namespace, node_selector, wall_offset=time.time() - clock())
        self._waiters: list[tuple[Callable[[], bool], asyncio.Future[None]]] = []
        self._tasks: list[asyncio.Task[None]] = []
        self._stop = asyncio.Event()

    # -- lifecycle -------------------------------------------------------------------------

    async def start(self, sync_timeout: float = 60.0, *, pods: bool = True) -> None:
        """List the nodes, watch slices (so a claim's devices can be placed on arrival), then
        watch all claims and (unless not `pods`: then `start_pods` later) the run's pods.

        Nodes are listed once, not watched: kwok's heartbeats modify every node every few
        seconds, and decoding those (60/s at 1,000 nodes) would cost more CPU than the pods.
        A node added during the run is therefore not part of the fleet figures.
        """
        stages: list[list[tuple[resources.Resource, str | None, str | None, Handler]]] = [
            [(resources.RESOURCE_SLICES, None, None, watch_events.on_slice)],
            [(resources.RESOURCE_CLAIMS, None, None, watch_events.on_claim)],
        ]
        if pods:
            stages[1].append(self._pods_watch())

        async def first() -> None:
            nodes = await self.kube.list(resources.NODES)
            self._replay(resources.NODES, nodes.items, self.clock(), watch_events.on_node)

        await self._sync(stages, sync_timeout, first)
        self._tasks.append(asyncio.create_task(self._sample(), name="timeline"))

    async def start_pods(self, sync_timeout: float = 60.0) -> None:
        """Watch the run's pods, after `start(pods=False)`: once the run's namespace exists
        (and loadgen may read pods there)."""
        await self._sync([[self._pods_watch()]], sync_timeout)

    def _pods_watch(self) -> tuple[resources.Resource, str | None, str | None, Handler]:
        selector = resources.label_selector(self.pod_selector) if self.pod_selector else None
        return (resources.PODS, self.records.scope.watch_namespace, selector, watch_events.on_pod)

    async def _sync(
        self,
        stages: list[list[tuple[resources.Resource, str | None, str | None, Handler]]],
        sync_timeout: float,
        first: Callable[[], Awaitable[None]] | None = None,
    ) -> None:
        """Start each stage's watches and wait until they have listed, stage by stage."""
        try:
            async with asyncio.timeout(sync_timeout):
                if first is not None:
                    await first()
                for stage in stages:
                    synced = [asyncio.Event() for _ in stage]
                    for (res, ns, sel, handler), ev in zip(stage, synced, strict=True):
                        task = self._watch(res, ns, sel, handler, ev)
                        self._tasks.append(asyncio.create_task(task, name=f"watch-{res.plural}"))
                    await asyncio.gather(*(e.wait() for e in synced))
        except TimeoutError:
            await self.stop()
            raise errors.Unreachable(
                f"watches of the run did not sync within {sync_timeout:g}s"
            ) from None
        except BaseException:
            await self.stop()
            raise

    async def stop(self) -> None:
        if not self._stop.is_set():  # the end state, however short the run
            watch_events.take_sample(self.records, self.clock(), tick=False)
        self._stop.set()
        for task in self._tasks:
            task.cancel()
        for task in self._tasks:
            with contextlib.suppress(asyncio.CancelledError):
                await task
        self._tasks.clear()
        for plural in list(self.records.broken):
            watch_gaps.watch_resumed(self.records, plural, None)  # a gap without an end
        for _, fut in self._waiters:
            if not fut.done():
                fut.cancel()

    async def _watch(
        self,
        res: resources.Resource,
        namespace: str | None,
        selector: str | None,
        handler: Handler,
        synced: asyncio.Event,
    ) -> None:
        rec = self.records

        def restarted(reason: watching.RestartReason) -> None:
            watch_gaps.watch_broke(rec, res.plural, reason, self.clock())

        async for item in watching.informer(
            self.kube,
            res,
            namespace=namespace,
            label_selector=selector,
            on_restart=restarted,
            stop=self._stop,
        ):
            now = self.clock()
            if res.plural in rec.broken:
                watch_gaps.watch_resumed(rec, res.plural, now)
            if isinstance(item, watching.Snapshot):
                self._replay(res, item.items, now, handler)
                synced.set()
            else:
                handler(rec, item.type, item.object, now)
            self._check_waiters()

    def _replay(
        self, res: resources.Resource, items: list[dict[str, Any]], now: float, handler: Handler
    ) -> None:
        """A (re)list's snapshot as ADDED events, after the views it rebuilds are reset."""
        watch_events.relisting(self.records, res.plural)
        for obj in items:
            handler(self.records, "ADDED", obj, now)

    async def _sample(self) -> None:
        """A ticker like Go's time.Ticker (scheduler_perf samples on one): ticks at fixed
        times from the start; a tick missed because the loop was busy is dropped, not
        bunched, and the sample carries the time it was really taken."""
        start = self.clock()
        n = 0
        while not self._stop.is_set():
            n += 1
            behind = self.clock() - (start + n * self.sample_interval)
            if behind > 0:
                n += int(behind // self.sample_interval) + 1
            delay = start + n * self.sample_interval - self.clock()
            if not await runtime.wait_set(self._stop, delay):
                watch_events.take_sample(self.records, self.clock())

    # -- waiting ---------------------------------------------------------------------------

    async def wait_until(self, predicate: Callable[[], bool], within: float | None) -> bool:
        """True once `predicate()` holds (checked after every event); False on timeout."""
        if predicate():
            return True
        fut: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        entry = (predicate, fut)
        self._waiters.append(entry)
        try:
            await asyncio.wait_for(asyncio.shield(fut), within)
            return True
        except TimeoutError:
            return False
        finally:
            if entry in self._waiters:
                self._waiters.remove(entry)

    def _check_waiters(self) -> None:
        for predicate, fut in self._waiters:
            if not fut.done() and predicate():
                fut.set_result(None)


def run_pod_selector(run_id: str) -> dict[str, str]:
    """The label every pod of run `run_id` carries."""
    return {vocab.LABEL_RUN: run_id}
