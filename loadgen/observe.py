"""Measures pods that something else creates (`loadgen observe`): the same watches, records
and reports as a run, with nothing created or deleted.

    result = await observe.observe(kube, observe.Target(namespace="team-a"), stop=ctrl_c)
    result = await observe.observe(kube, observe.Target(namespace_prefix="test-"), stop=ctrl_c)

A target is one namespace, every namespace (`Target()`), or every namespace whose name starts
with a prefix: tools like ClusterLoader2 make their own namespaces, whose names are not known
before they run. Pods and claims of other namespaces are ignored as they arrive.

Start it before the pods are created: like ClusterLoader2, the first event seen of a pod is
its create, so pods already there when the watch lists count from that moment.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Callable
from dataclasses import dataclass, field

from loadgen import explaining, fleet_views, outcome, records, tracker
from loadgen.scenarios import Phase, Scenario
from testbed.kube import resources
from testbed.kube.client import Kube

PHASE = "observed"


@dataclass(frozen=True, kw_only=True)
class Target:
    namespace: str = ""
    """Namespace whose pods are measured; empty: every namespace (see `namespace_prefix`)."""
    namespace_prefix: str = ""
    """Without a namespace: only namespaces whose name starts with this."""
    selector: dict[str, str] = field(default_factory=dict)
    """Only pods with these labels (all pods of the namespace when empty)."""
    count: int | None = None
    """Stop once this many pods have run (None: until `stop`)."""
    timeout: float | None = None
    """Stop after this many seconds at the latest."""
    node_selector: dict[str, str] = field(default_factory=dict)
    """The fleet whose GPUs the allocation figures count (all nodes when empty)."""
    scrape: dict[str, str] = field(default_factory=dict)
    run_id: str = field(default_factory=lambda: "observe-" + outcome.new_run_id())
    """Names the report (and its default directory); nothing in the cluster."""

    def __post_init__(self) -> None:
        if self.namespace and self.namespace_prefix:
            raise ValueError("a namespace and a namespace prefix exclude each other")

    @property
    def scope(self) -> records.Scope:
        return records.Scope(namespace=self.namespace, prefix=self.namespace_prefix)


def where(scope: records.Scope) -> str:
    """The namespaces of `scope` in words: for the scenario's description and the console."""
    if scope.namespace:
        return f"namespace {scope.namespace}"
    if scope.prefix:
        return f"namespaces {scope.prefix}*"
    return "all namespaces"


def scenario_of(target: Target) -> Scenario:
    """A one-phase scenario that describes what was observed (for the reports)."""
    labels = resources.label_selector(target.selector) if target.selector else "all pods"
    return Scenario(
        name="observe",
        description=f"pods in {where(target.scope)} ({labels}), created by others",
        phases=[Phase(name=PHASE, kind="pods", count=max(1, target.count or 1), wait="created")],
    )


async def observe(
    kube: Kube,
    target: Target,
    *,
    stop: asyncio.Event | None = None,
    on_progress: Callable[[int, int, int], None] | None = None,
    on_watching: Callable[[], None] | None = None,
) -> outcome.RunResult:
    """Watch until `stop`, `target.count` pods ran, or `target.timeout`; the measurements
    of every pod seen. `on_watching()` once every watch has listed (pods created from then
    on are all seen from their first event); `on_progress(seen, scheduled, ran)` four times
    a second."""
    stop = stop or asyncio.Event()
    await kube.request("GET", "/version", retry=False)
    watcher = tracker.Tracker(
        kube,
        namespace=target.scope,
        pod_selector=target.selector,
        node_selector=target.node_selector,
    )
    await watcher.start()
    if on_watching is not None:
        on_watching()
    rec = watcher.records
    result = outcome.RunResult(
        run_id=target.run_id,
        namespace=rec.namespace,
        scenario=scenario_of(target),
        settings=outcome.Settings(
            run_id=target.run_id, node_selector=target.node_selector, scrape=target.scrape
        ),
        records=rec,
        started_wall=time.time(),
        started_mono=watcher.clock(),
        fleet_nodes=len(fleet_views.fleet_nodes(rec)),
        fleet_gpus=fleet_views.fleet_gpus(rec),
        held_by_others_at_start=fleet_views.gpus_held_by_others(rec),
    )
    gathering = await explaining.start(kube, result.settings, watcher.clock, result.started_mono)
    try:
        await _wait(watcher, target, stop, on_progress)
    finally:
        result.finished_mono = watcher.clock()
        result.cpu_seconds = time.process_time() - result.started_cpu
        result.interrupted = stop.is_set()
        await watcher.stop()
        await gathering.finish(result)
    return result


async def _wait(
    watcher: tracker.Tracker,
    target: Target,
    stop: asyncio.Event,
    on_progress: Callable[[int, int, int], None] | None,
) -> None:
    total = watcher.records.total
    count = target.count

    async def enough() -> None:
        await watcher.wait_until(
            lambda: count is not None and total.running >= count, target.timeout
        )

    async def report() -> None:
        while on_progress is not None:
            on_progress(total.seen, total.scheduled, total.running)
            await asyncio.sleep(0.25)

    waiting = asyncio.ensure_future(enough())
    stopped = asyncio.ensure_future(stop.wait())
    reporter = asyncio.ensure_future(report())
    try:
        await asyncio.wait([waiting, stopped], return_when=asyncio.FIRST_COMPLETED)
    finally:
        for task in (waiting, stopped, reporter):
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task
        if on_progress is not None:
            on_progress(total.seen, total.scheduled, total.running)
