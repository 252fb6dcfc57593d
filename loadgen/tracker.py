"""Watches a run's pods and claims and the fleet's slices; records timestamps.

One informer per resource type, no polling (nodes are listed once, see `Tracker.start`).
Every event is stamped with the client's receive time (`clock`, monotonic seconds) the
moment it arrives, the way CL2's PodStartupLatency does since it moved to watch-receive
times. Per-object state is a slotted
record of a few floats and strings: at 200 pods/s this loop must stay cheap.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from loadgen import placement, templates
from testbed import vocab
from testbed.kube import errors, resources, watching
from testbed.kube.client import Kube

log = logging.getLogger(__name__)

Clock = Callable[[], float]
Handler = Callable[[str, dict[str, Any], float], None]
_TOPOLOGY = (vocab.LABEL_RACK, vocab.LABEL_BLOCK)


@dataclass(slots=True)
class PodRecord:
    phase: str
    job: str | None
    gang: str | None
    seen: float
    """Client receive time of the first watch event."""
    created: float
    """The "create" of CL2's phases: the earliest client-side evidence that the pod exists —
    its first watch event, the answer to our own POST (bare pods), or the end of the second
    its creationTimestamp names. A lagging watch alone would make every phase that starts
    at "create" shorter than the API server's own timestamps allow."""
    created_server: float | None
    """creationTimestamp, epoch seconds (1 s resolution)."""
    scheduled: float | None = None
    running: float | None = None
    running_server: float | None = None
    """When the API server says the pod started (Ready transition / container start)."""
    finished: float | None = None
    succeeded: bool = False
    node: str = ""
    claim: str | None = None
    unschedulable: bool = False
    """The scheduler reported it does not fit (PodScheduled False, reason Unschedulable)."""


@dataclass(slots=True)
class ClaimRecord:
    pod: str | None
    seen: float
    allocated: float | None = None
    gpu_pcie: list[str | None] = field(default_factory=list)
    gpu_numa: list[str | None] = field(default_factory=list)
    nic_pcie: list[str | None] = field(default_factory=list)
    nic_numa: list[str | None] = field(default_factory=list)


@dataclass(slots=True)
class PhaseCounts:
    seen: int = 0
    scheduled: int = 0
    running: int = 0
    succeeded: int = 0
    failed: int = 0
    unschedulable: int = 0
    """Pods the scheduler found unschedulable and that are not scheduled (yet)."""


@dataclass(slots=True)
class WatchGap:
    """An interval in which one watch was broken: events of that kind that happened in it
    arrive late, at `end`, so latencies measured across it include part of the outage."""

    watch: str
    """Resource plural of the watch."""
    reason: str
    """The worst restart reason in the gap: gone (410, relisted) > error > closed."""
    start: float
    """When the watch broke (client monotonic seconds)."""
    end: float | None = None
    """First delivery after it resumed (a relist's snapshot or an event); None if the run
    ended first."""


_SEVERITY = {"closed": 0, "error": 1, "gone": 2}


@dataclass(slots=True)
class Sample:
    t: float
    seen: int
    scheduled: int
    running: int
    finished: int
    gpus_allocated: int
    gpus_stranded: int = 0
    """Free GPUs on partly used fleet nodes: too few together for a whole-node pod."""


def _parse_time(value: Any) -> float | None:
    if not value:
        return None
    try:
        return datetime.fromisoformat(str(value).replace("Z", "+00:00")).timestamp()
    except ValueError:
        return None


def _server_running_time(pod: dict[str, Any]) -> float | None:
    status = pod.get("status") or {}
    starts = [
        _parse_time((cs.get("state") or {}).get("running", {}).get("startedAt"))
        for cs in status.get("containerStatuses") or []
    ]
    known = [s for s in starts if s is not None]
    if known:
        return max(known)
    for cond in status.get("conditions") or []:
        if cond.get("type") == "Ready" and cond.get("status") == "True":
            return _parse_time(cond.get("lastTransitionTime"))
    return None


def _unschedulable(status: dict[str, Any]) -> bool:
    return any(
        c.get("type") == "PodScheduled"
        and c.get("status") == "False"
        and c.get("reason") == "Unschedulable"
        for c in status.get("conditions") or []
    )


def _attribute(attrs: dict[str, Any], driver: str, name: str) -> str | None:
    """A device attribute by qualified name; the driver's own domain may be left off."""
    raw = attrs.get(name)
    if raw is None and name.startswith(driver + "/"):
        raw = attrs.get(name[len(driver) + 1 :])
    if not isinstance(raw, dict) or not raw:
        return None
    return str(next(iter(raw.values())))


class Tracker:
    """Per-pod and per-claim timestamps of one run, plus fleet GPU allocation over time.

    `start()` returns once every watch has listed, so nothing created afterwards is missed.
    """

    def __init__(
        self,
        kube: Kube,
        *,
        run_id: str,
        node_selector: dict[str, str] | None = None,
        clock: Clock = time.monotonic,
        sample_interval: float = 1.0,
    ) -> None:
        self.kube = kube
        self.run_id = run_id
        self.namespace = templates.namespace_name(run_id)
        self.node_selector = dict(node_selector or {})
        self.clock = clock
        self.sample_interval = sample_interval
        self.pods: dict[str, PodRecord] = {}
        self.claims: dict[str, ClaimRecord] = {}
        self.counts: dict[str, PhaseCounts] = {}
        self.total = PhaseCounts()
        self.timeline: list[Sample] = []
        self.node_labels: dict[str, dict[str, str]] = {}
        self.watch_restarts = 0
        self.watch_gaps: list[WatchGap] = []
        self._broken: dict[str, WatchGap] = {}
        # Fleet view. GPU slices by name: (pool, generation, node, devices), not whole
        # objects, which at thousands of nodes would cost tens of MB; device topology
        # (PCIe root, NUMA node) by (driver, pool, device).
        self._gpu_slices: dict[str, tuple[str, int, str, int]] = {}
        self._devices: dict[tuple[str, str, str], tuple[str | None, str | None]] = {}
        self._pool_node: dict[tuple[str, str], str] = {}
        self._fleet: set[str] = set()
        self._gpus_by_claim: dict[str, tuple[str, int]] = {}  # claim -> (node, GPUs)
        self.gpus_allocated = 0
        self.peak_gpus_allocated = 0
        """Exact, updated on every claim change (samples, once a second, can miss a peak)."""
        # Epoch = monotonic + offset: converts server timestamps to the tracker's clock.
        self.wall_offset = time.time() - clock()
        self._posted: dict[str, float] = {}
        self._waiters: list[tuple[Callable[[], bool], asyncio.Future[None]]] = []
        self._tasks: list[asyncio.Task[None]] = []
        self._stop = asyncio.Event()

    # -- lifecycle -------------------------------------------------------------------------

    async def start(self, sync_timeout: float = 60.0) -> None:
        """List the nodes, watch slices (so a claim's devices can be placed on arrival), then
        watch the run's pods and all claims.

        Nodes are listed once, not watched: kwok's heartbeats modify every node every few
        seconds, and decoding those (60/s at 1,000 nodes) would cost more CPU than the pods.
        A node added during the run is therefore not part of the fleet figures.
        """
        selector = resources.label_selector({vocab.LABEL_RUN: self.run_id})
        stages: list[list[tuple[resources.Resource, str | None, str | None, Handler]]] = [
            [(resources.RESOURCE_SLICES, None, None, self._on_slice)],
            [
                (resources.PODS, self.namespace, selector, self._on_pod),
                (resources.RESOURCE_CLAIMS, None, None, self._on_claim),
            ],
        ]
        try:
            async with asyncio.timeout(sync_timeout):
                nodes = await self.kube.list(resources.NODES)
                self._resync(resources.NODES, nodes.items, self.clock(), self._on_node)
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
        self._tasks.append(asyncio.create_task(self._sample(), name="timeline"))

    async def stop(self) -> None:
        if not self._stop.is_set():
            self._take_sample()  # the end state, however short the run
        self._stop.set()
        for task in self._tasks:
            task.cancel()
        for task in self._tasks:
            with contextlib.suppress(asyncio.CancelledError):
                await task
        self._tasks.clear()
        for plural in list(self._broken):
            self._resumed(plural, None)  # still broken at the end: a gap without an end
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
        def restarted(reason: watching.RestartReason) -> None:
            self.watch_restarts += 1
            self._broke(res.plural, reason)

        async for item in watching.informer(
            self.kube,
            res,
            namespace=namespace,
            label_selector=selector,
            on_restart=restarted,
            stop=self._stop,
        ):
            now = self.clock()
            if res.plural in self._broken:
                self._resumed(res.plural, now)
            if isinstance(item, watching.Snapshot):
                self._resync(res, item.items, now, handler)
                synced.set()
            else:
                handler(item.type, item.object, now)
            self._check_waiters()

    def _broke(self, plural: str, reason: str) -> None:
        gap = self._broken.get(plural)
        if gap is None:
            self._broken[plural] = WatchGap(plural, reason, self.clock())
        elif _SEVERITY.get(reason, 1) > _SEVERITY.get(gap.reason, 1):
            gap.reason = reason

    def _resumed(self, plural: str, now: float | None) -> None:
        gap = self._broken.pop(plural)
        gap.end = now
        # A stream the server ended on its timeout and that resumed at once is routine: only
        # failures (no answer, 5xx, 410) make a gap worth reporting.
        if gap.reason != "closed":
            self.watch_gaps.append(gap)

    def _resync(
        self, res: resources.Resource, items: list[dict[str, Any]], now: float, handler: Handler
    ) -> None:
        """After a (re)list: rebuild fleet views; records only gain what they lacked."""
        if res is resources.RESOURCE_SLICES:
            self._gpu_slices.clear()
            self._devices.clear()
            self._pool_node.clear()
        elif res is resources.NODES:
            self.node_labels.clear()
            self._fleet.clear()
        elif res is resources.RESOURCE_CLAIMS:
            self._gpus_by_claim.clear()
            self.gpus_allocated = 0
        for obj in items:
            handler("ADDED", obj, now)

    def _take_sample(self) -> None:
        t = self.total
        self.timeline.append(
            Sample(
                self.clock(),
                t.seen,
                t.scheduled,
                t.running,
                t.succeeded + t.failed,
                self.gpus_allocated,
                self.gpus_stranded(),
            )
        )

    async def _sample(self) -> None:
        while not self._stop.is_set():
            self._take_sample()
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._stop.wait(), self.sample_interval)

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

    def phase(self, name: str) -> PhaseCounts:
        return self.counts.setdefault(name, PhaseCounts())

    def posted(self, pod: str) -> None:
        """Our POST of bare pod `pod` was answered now: it exists from now at the latest."""
        now = self.clock()
        rec = self.pods.get(pod)
        if rec is None:
            self._posted[pod] = now
        elif now < rec.created:
            rec.created = now

    # -- event handlers --------------------------------------------------------------------

    def _on_pod(self, kind: str, pod: dict[str, Any], now: float) -> None:
        meta = pod["metadata"]
        name = meta["name"]
        rec = self.pods.get(name)
        if rec is None:
            if kind == "DELETED":
                return
            labels = meta.get("labels") or {}
            created_server = _parse_time(meta.get("creationTimestamp"))
            created = min(now, self._posted.pop(name, now))
            if created_server is not None:
                created = min(created, created_server + 1.0 - self.wall_offset)
            rec = PodRecord(
                phase=labels.get(templates.LABEL_PHASE, ""),
                job=labels.get(vocab.LABEL_JOB_NAME),
                gang=labels.get(vocab.LABEL_GANG),
                seen=now,
                created=created,
                created_server=created_server,
            )
            self.pods[name] = rec
            self.phase(rec.phase).seen += 1
            self.total.seen += 1
        spec = pod.get("spec") or {}
        status = pod.get("status") or {}
        counts = self.phase(rec.phase)
        if rec.scheduled is None and spec.get("nodeName"):
            rec.scheduled = now
            rec.node = spec["nodeName"]
            counts.scheduled += 1
            self.total.scheduled += 1
            if rec.unschedulable:
                counts.unschedulable -= 1
                self.total.unschedulable -= 1
        elif rec.scheduled is None and not rec.unschedulable and _unschedulable(status):
            rec.unschedulable = True
            counts.unschedulable += 1
            self.total.unschedulable += 1
        phase = status.get("phase")
        if rec.running is None and phase in ("Running", "Succeeded", "Failed"):
            # A pod seen first as Succeeded ran too; we only learn it now.
            rec.running = now
            rec.running_server = _server_running_time(pod)
            counts.running += 1
            self.total.running += 1
        if rec.finished is None and phase in ("Succeeded", "Failed"):
            rec.finished = now
            rec.succeeded = phase == "Succeeded"
            if rec.succeeded:
                counts.succeeded += 1
                self.total.succeeded += 1
            else:
                counts.failed += 1
                self.total.failed += 1
        if rec.claim is None:
            for st in status.get("resourceClaimStatuses") or []:
                if st.get("resourceClaimName"):
                    rec.claim = st["resourceClaimName"]

    def _on_claim(self, kind: str, claim: dict[str, Any], now: float) -> None:
        meta = claim["metadata"]
        key = f"{meta.get('namespace')}/{meta['name']}"
        results = ((claim.get("status") or {}).get("allocation") or {}).get("devices", {})
        results = results.get("results") or []
        gpus = 0
        if kind != "DELETED":  # only GPUs of the fleet's nodes count towards its ratio
            gpus = sum(
                1
                for r in results
                if r.get("driver") == vocab.GPU_DRIVER
                and self._pool_node.get((vocab.GPU_DRIVER, r.get("pool", ""))) in self._fleet
            )
        self.gpus_allocated += gpus - self._gpus_by_claim.get(key, ("", 0))[1]
        self.peak_gpus_allocated = max(self.peak_gpus_allocated, self.gpus_allocated)
        if gpus:
            first = next(r for r in results if r.get("driver") == vocab.GPU_DRIVER)
            node = self._pool_node.get((vocab.GPU_DRIVER, first.get("pool", "")), "")
            self._gpus_by_claim[key] = (node, gpus)
        else:
            self._gpus_by_claim.pop(key, None)
        if meta.get("namespace") != self.namespace or kind == "DELETED":
            return
        rec = self.claims.get(meta["name"])
        if rec is None:
            owner = next(
                (o["name"] for o in meta.get("ownerReferences") or [] if o.get("kind") == "Pod"),
                None,
            )
            rec = ClaimRecord(pod=owner, seen=now)
            self.claims[meta["name"]] = rec
        if rec.allocated is None and results:
            rec.allocated = now
            for r in results:
                driver = r.get("driver", "")
                pcie, numa = self._devices.get(
                    (driver, r.get("pool", ""), r.get("device", "")), (None, None)
                )
                if driver == vocab.GPU_DRIVER:
                    rec.gpu_pcie.append(pcie)
                    rec.gpu_numa.append(numa)
                elif driver == vocab.NIC_DRIVER:
                    rec.nic_pcie.append(pcie)
                    rec.nic_numa.append(numa)

    def _on_slice(self, kind: str, slc: dict[str, Any], now: float) -> None:
        name = slc["metadata"]["name"]
        if kind == "DELETED":
            self._gpu_slices.pop(name, None)
            return
        spec = slc.get("spec") or {}
        driver = spec.get("driver", "")
        pool_info = spec.get("pool") or {}
        pool = pool_info.get("name", "")
        devices = spec.get("devices") or []
        if driver == vocab.GPU_DRIVER:
            generation = int(pool_info.get("generation", 0))
            node = spec.get("nodeName", "")
            self._gpu_slices[name] = (pool, generation, node, len(devices))
        if spec.get("nodeName"):
            self._pool_node[(driver, pool)] = spec["nodeName"]
        numa_attr = vocab.GPU_ATTR_NUMA if driver == vocab.GPU_DRIVER else vocab.NIC_ATTR_NUMA
        for dev in devices:
            attrs = dev.get("attributes") or {}
            self._devices[(driver, pool, dev.get("name", ""))] = (
                _attribute(attrs, driver, vocab.ATTR_PCIE_ROOT),
                _attribute(attrs, driver, numa_attr),
            )

    def _on_node(self, kind: str, node: dict[str, Any], now: float) -> None:
        meta = node["metadata"]
        name = meta["name"]
        labels = meta.get("labels") or {}
        # Only the topology levels gang spans are counted on.
        self.node_labels[name] = {k: labels[k] for k in _TOPOLOGY if k in labels}
        if all(labels.get(k) == v for k, v in self.node_selector.items()):
            self._fleet.add(name)

    # -- fleet views -----------------------------------------------------------------------

    def fleet_nodes(self) -> list[str]:
        """Nodes matching the run's node selector (all nodes when there is none)."""
        return sorted(self._fleet)

    def fleet_gpus(self) -> int:
        """GPUs published in ResourceSlices of the fleet's nodes (newest pool generation)."""
        return sum(self._gpus_by_node().values())

    def gpus_stranded(self) -> int:
        """Free GPUs on fleet nodes that already have some allocated: the fragmentation a
        whole-node (8-GPU) pod cannot use."""
        used: dict[str, int] = {}
        for node, gpus in self._gpus_by_claim.values():
            used[node] = used.get(node, 0) + gpus
        return sum(
            capacity - used[node]
            for node, capacity in self._gpus_by_node().items()
            if 0 < used.get(node, 0) < capacity
        )

    def _gpus_by_node(self) -> dict[str, int]:
        newest: dict[str, int] = {}
        for pool, generation, _, _ in self._gpu_slices.values():
            newest[pool] = max(newest.get(pool, 0), generation)
        out: dict[str, int] = {}
        for pool, generation, node, devices in self._gpu_slices.values():
            if node in self._fleet and generation == newest[pool]:
                out[node] = out.get(node, 0) + devices
        return out

    def gang_spans(self) -> dict[str, dict[str, int]]:
        """Per gang: its pods, and how many nodes, racks and blocks they landed on."""
        members: dict[str, list[str]] = {}
        for rec in self.pods.values():
            if rec.gang and rec.node:
                members.setdefault(rec.gang, []).append(rec.node)
        return {
            gang: {
                "pods": len(nodes),
                "nodes": len(set(nodes)),
                "racks": placement.span(nodes, self.node_labels, vocab.LABEL_RACK),
                "blocks": placement.span(nodes, self.node_labels, vocab.LABEL_BLOCK),
            }
            for gang, nodes in members.items()
        }
