"""The provisioner: make the cluster hold exactly the fleet's objects, touching only the diff.

Desired objects come from `render` (pure); actual ones are listed by the fleet's labels. Each
node is written first (a slice's ownerReference needs the Node's uid), then its two slices at
once, many nodes in flight; extra nodes and slices are deleted; objects that already match
are not written at all, so a re-apply of the same spec makes zero writes. Concurrency is
bounded by a semaphore on top of the client's QPS bucket; the client retries
429/5xx/unreachable with backoff, and this module retries conflicts with a fresh read.
"""

from __future__ import annotations

import asyncio
import contextlib
import inspect
import logging
import time
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from fleet import diff, drivers, layout, render
from fleet.metrics import FleetMetrics
from fleet.progress import Counts, NoProgress, Progress
from fleet.record import RECORD_KEY, RECORD_NAMESPACE, record_name, record_object, recorded_fleet
from fleet.spec import Fleet
from fleet.status import FleetStatus, fleet_status
from testbed import vocab
from testbed.kube import errors, resources
from testbed.kube.client import Kube
from testbed.kube.resources import (
    CONFIG_MAPS,
    DEVICE_CLASSES,
    NAMESPACES,
    NODES,
    RESOURCE_SLICES,
    Resource,
)
from testbed.kube.watching import Change, Snapshot, informer

log = logging.getLogger(__name__)

Obj = dict[str, Any]


class ReconcileError(Exception):
    """The fleet could not be brought to its spec; one line for the user."""


@dataclass(frozen=True, kw_only=True)
class ReconcileSettings:
    concurrency: int = 64
    """Objects in flight at once (a node and its slices count as one unit of work)."""
    field_manager: str = vocab.FLEET_MANAGER
    """Server-side apply field manager for updates."""
    conflict_retries: int = 5
    """Re-reads after a 409 Conflict before giving up on one object."""
    record_namespace: str = RECORD_NAMESPACE
    """Where the ConfigMap recording each fleet's applied spec lives (read by `fleet status`)."""
    outage_seconds: float = 120.0
    """How long `apply` waits for an unreachable or failing API server (a restart, an
    upgrade) to answer again before it gives up."""
    outage_passes: int = 5
    """Outages one `apply` rides through: after each, a fresh pass lists and writes only
    what is still missing, so a pass cut short loses nothing."""


class Reconciler:
    """Applies, inspects and deletes fleets through one shared `Kube` client."""

    def __init__(
        self,
        kube: Kube,
        *,
        settings: ReconcileSettings | None = None,
        metrics: FleetMetrics | None = None,
    ) -> None:
        self.kube = kube
        self.settings = settings or ReconcileSettings()
        self.metrics = metrics
        self._sem = asyncio.Semaphore(self.settings.concurrency)

    # -- apply ---------------------------------------------------------------------------

    async def apply(
        self, desired: layout.DesiredFleet, *, progress: Progress | None = None
    ) -> Counts:
        """Create, update and delete until the cluster holds exactly the desired objects.

        An API server outage mid-way (retries of single requests exhausted) cancels the pass;
        once the server answers again a fresh pass lists and diffs anew, for up to
        `settings.outage_seconds`.
        """
        progress = progress or NoProgress()
        started = time.perf_counter()
        fleet = desired.fleet
        counts = Counts()
        outages = 0
        try:
            while True:
                counts.failed, counts.first_error = 0, ""
                try:
                    await self._apply_pass(desired, counts, progress)
                    break
                except errors.KubeError as e:
                    outages += 1
                    if not errors.is_retriable(e) or outages > self.settings.outage_passes:
                        raise
                    log.warning(
                        "fleet %s: API server failing (%s); resuming when it answers",
                        fleet.name,
                        str(e).splitlines()[0][:200],
                    )
                    if self.metrics:
                        self.metrics.errors.labels("outage").inc()
                    if not await self._await_server(self.settings.outage_seconds):
                        raise
        finally:
            if self.metrics:
                self.metrics.reconcile_duration.observe(time.perf_counter() - started)
        if counts.failed:
            raise ReconcileError(
                f"fleet {fleet.name}: {counts.failed} object writes failed, first: "
                f"{counts.first_error}"
            )
        return counts

    async def _await_server(self, within: float) -> bool:
        """True once the API server answers a read from storage; False if it did not within
        `within` seconds. (Not /readyz: a restarted server serves requests for many seconds
        before all its post-start hooks report ready.)"""
        deadline = time.monotonic() + within
        delay = 0.2
        path = f"/api/v1/namespaces/{self.settings.record_namespace}"
        while time.monotonic() < deadline:
            try:
                await self.kube.request("GET", path, retry=False)
                return True
            except errors.NotFound:
                return True  # answered from storage: the namespace is not made yet
            except errors.KubeError:
                await asyncio.sleep(delay)
                delay = min(delay * 2, 2.0)
        return False

    async def _apply_pass(
        self, desired: layout.DesiredFleet, counts: Counts, progress: Progress
    ) -> None:
        """One list-diff-write pass; raises the first API-server-level failure."""
        fleet, wanted_nodes = desired.fleet, desired.nodes
        await self._ensure_device_classes(counts)
        await self._mark_applying(desired)
        selector = layout.fleet_selector(fleet.name)
        nodes_l, slices_l = await asyncio.gather(
            self.kube.list(NODES, label_selector=selector),
            self.kube.list(RESOURCE_SLICES, label_selector=selector),
        )
        nodes = {n["metadata"]["name"]: n for n in nodes_l.items}
        slices = {s["metadata"]["name"]: s for s in slices_l.items}
        wanted = {n.name for n in wanted_nodes}
        wanted_slices = {name for n in wanted_nodes for name in layout.slice_names(n)}
        extra_nodes = sorted(set(nodes) - wanted)
        extra_slices = sorted(set(slices) - wanted_slices)
        # Each node, then at once its slices (a slice's ownerReference needs its Node's uid;
        # on a real node kubelet registers before drivers publish); nodes are pipelined, so
        # slices of the first nodes are written while later nodes are created, and kwok
        # readies nodes meanwhile.
        progress.phase(
            f"fleet {fleet.name}: nodes and slices", len(wanted_nodes) + len(extra_nodes)
        )
        pools: dict[tuple[str, str], list[Obj]] = {}
        for obj in slices.values():
            spec = obj.get("spec") or {}
            pools.setdefault((spec.get("nodeName", ""), spec.get("driver", "")), []).append(obj)
        work: list[Awaitable[None]] = [
            self._sync_host(fleet, n, nodes.get(n.name), slices, pools, counts, progress)
            for n in wanted_nodes
        ]
        work += self._removals(slices, extra_nodes, extra_slices, counts, progress)
        await self._all(work, counts)
        if not counts.failed:
            await self._record(desired)

    async def _all(self, work: list[Awaitable[None]], counts: Counts) -> None:
        """Run `work` with bounded concurrency; if one item raises, cancel the rest (no
        writes of a stale pass run on behind the next one) and raise it."""
        tasks = [asyncio.ensure_future(self._bounded(w, counts)) for w in work]
        try:
            await asyncio.gather(*tasks)
        except BaseException:
            for t in tasks:
                t.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)
            for w in work:  # cancelled before they started: close them, quietly
                if inspect.iscoroutine(w) and inspect.getcoroutinestate(w) == inspect.CORO_CREATED:
                    w.close()
            raise

    async def _bounded(self, work: Awaitable[None], counts: Counts) -> None:
        async with self._sem:
            try:
                await work
            except errors.KubeError as e:
                counts.failed += 1
                counts.first_error = counts.first_error or str(e)
                if self.metrics:
                    self.metrics.errors.labels("object").inc()
                # A failing or unreachable API server fails everything after it, as do bad
                # credentials: stop early (apply resumes with a fresh pass after an outage).
                if errors.is_retriable(e) or isinstance(e, errors.Forbidden | errors.Unauthorized):
                    raise

    async def _sync_host(
        self,
        fleet: Fleet,
        node: layout.DesiredNode,
        actual: Obj | None,
        slices: Mapping[str, Obj],
        pools: Mapping[tuple[str, str], list[Obj]],
        counts: Counts,
        progress: Progress,
    ) -> None:
        """One node and its slices: the Node first (its uid owns them), then each driver's
        pool of slices."""
        uid = await self._sync_node(fleet, node, actual, counts)
        by_driver: dict[str, list[Obj]] = {}
        for s in drivers.slice_objects(fleet, node, uid):
            by_driver.setdefault(s["spec"]["driver"], []).append(s)
        await asyncio.gather(
            *(
                self._sync_slice(group[0], slices.get(group[0]["metadata"]["name"]), counts)
                if len(group) == 1
                else self._sync_pool(group, slices, pools.get((node.name, driver), []), counts)
                for driver, group in by_driver.items()
            )
        )
        progress.advance()

    async def _sync_pool(
        self, desired: list[Obj], slices: Mapping[str, Obj], present: list[Obj], counts: Counts
    ) -> None:
        """A pool of several slices (partitionable GPUs): if any slice differs, all are
        rewritten at one new generation, as a driver republishes a pool; the scheduler only
        uses a pool whose slices all carry its highest generation."""
        actual = [slices.get(d["metadata"]["name"]) for d in desired]
        generations = {diff.pool_generation([a]) for a in actual if a is not None}
        if len(generations) == 1 and all(
            a is not None and diff.slice_matches(d, a) for d, a in zip(desired, actual, strict=True)
        ):
            for d in desired:
                counts.same("ResourceSlice", d["metadata"]["name"])
            return
        # Above every generation of this node's pool, leftovers of another layout included.
        generation = diff.pool_generation([*actual, *present]) + 1
        await asyncio.gather(
            *(
                self._write_slice(d, a, generation, counts)
                for d, a in zip(desired, actual, strict=True)
            )
        )

    async def _write_slice(
        self, desired: Obj, actual: Obj | None, generation: int, counts: Counts
    ) -> None:
        pool = {**desired["spec"]["pool"], "generation": generation}
        body = {**desired, "spec": {**desired["spec"], "pool": pool}}
        await self._put_slice(body, actual, lambda a: diff.with_version(body, a), counts)

    async def _sync_node(
        self, fleet: Fleet, node: layout.DesiredNode, actual: Obj | None, counts: Counts
    ) -> str:
        """Create or update one Node; returns its uid."""
        desired = render.node_object(fleet, node)
        fresh = False
        if actual is None:
            try:
                actual = await self.kube.create(NODES, desired)
                self._wrote(counts, "Node", "created", node.name)
                fresh = True
            except errors.AlreadyExists:
                actual = await self.kube.get(NODES, node.name)
                _refuse_foreign("Node", actual, layout.fleet_labels(fleet.name))
        if not fresh:
            if diff.node_matches(desired, actual):
                counts.same("Node", node.name)
            else:
                actual = await self._update_node(desired, actual)
                self._wrote(counts, "Node", "updated", node.name)
        return str(actual["metadata"]["uid"])

    async def _update_node(self, desired: Obj, actual: Obj) -> Obj:
        body = diff.node_apply_body(desired)
        out = await self.kube.apply(NODES, body, field_manager=self.settings.field_manager)
        if not diff.capacity_matches(desired, actual):
            name = desired["metadata"]["name"]
            patch = diff.node_status_patch(desired, actual)
            out = await self.kube.patch(NODES, name, patch, subresource="status")
        return out

    async def _sync_slice(self, desired: Obj, actual: Obj | None, counts: Counts) -> None:
        def republish(actual: Obj) -> Obj | None:
            if diff.slice_matches(desired, actual):
                return None
            body = diff.with_version(desired, actual)
            # Drivers bump the pool generation when they republish a pool.
            old = ((actual.get("spec") or {}).get("pool") or {}).get("generation") or 0
            body["spec"]["pool"] = {**body["spec"]["pool"], "generation": int(old) + 1}
            return body

        await self._put_slice(desired, actual, republish, counts)

    async def _put_slice(
        self,
        body: Obj,
        actual: Obj | None,
        update: Callable[[Obj], Obj | None],
        counts: Counts,
    ) -> None:
        """Create `body` where there is no `actual`; else replace the slice with
        `update(actual)` (None: it matches already), reading it again after each conflict."""
        name = body["metadata"]["name"]
        if actual is None:
            try:
                await self.kube.create(RESOURCE_SLICES, body)
                self._wrote(counts, "ResourceSlice", "created", name)
                return
            except errors.AlreadyExists:
                actual = await self.kube.get(RESOURCE_SLICES, name)
        for _ in range(self.settings.conflict_retries):
            replacement = update(actual)
            if replacement is None:
                counts.same("ResourceSlice", name)
                return
            try:
                await self.kube.replace(RESOURCE_SLICES, replacement)
                self._wrote(counts, "ResourceSlice", "updated", name)
                return
            except errors.Conflict:
                actual = await self.kube.get(RESOURCE_SLICES, name)
        raise errors.Conflict(f"resourceslice {name}: still conflicting after retries")

    def _removals(
        self,
        slices: Mapping[str, Obj],
        extra_nodes: list[str],
        extra_slices: list[str],
        counts: Counts,
        progress: Progress,
    ) -> list[Awaitable[None]]:
        """Deletes of `extra_nodes` and `extra_slices`, each node's slices before the node
        (else the garbage collector races us for them, and the counts lie)."""
        by_node: dict[str, list[str]] = {}
        gone = set(extra_nodes)
        for s in extra_slices:
            owner = (slices[s].get("spec") or {}).get("nodeName", "")
            by_node.setdefault(owner if owner in gone else "", []).append(s)
        work: list[Awaitable[None]] = [
            self._delete_node(n, by_node.get(n, []), counts, progress) for n in extra_nodes
        ]
        work += [self._delete_one(RESOURCE_SLICES, s, counts) for s in by_node.get("", [])]
        return work

    async def _delete_node(
        self, name: str, slice_names: list[str], counts: Counts, progress: Progress
    ) -> None:
        await asyncio.gather(*(self._delete_one(RESOURCE_SLICES, s, counts) for s in slice_names))
        await self._delete_one(NODES, name, counts)
        progress.advance()

    async def _delete_one(self, res: Resource, name: str, counts: Counts) -> None:
        if await self.kube.delete(res, name):
            self._wrote(counts, res.kind, "deleted")

    def _wrote(self, counts: Counts, kind: str, action: str, name: str = "") -> None:
        counts.wrote(kind, action, name)
        if self.metrics:
            self.metrics.object_written(kind, action)

    async def _ensure_device_classes(self, counts: Counts) -> None:
        """Install the DeviceClasses if missing, update ours if different; shared by all
        fleets. A foreign one (a real driver's) is used if it selects what ours would, and
        never replaced."""
        for desired in render.device_classes():
            name = desired["metadata"]["name"]
            try:
                actual = await self.kube.get(DEVICE_CLASSES, name)
            except errors.NotFound:
                try:
                    await self.kube.create(DEVICE_CLASSES, desired)
                    self._wrote(counts, "DeviceClass", "created")
                except errors.AlreadyExists:
                    pass
                continue
            if diff.covers(actual.get("spec") or {}, desired["spec"]):
                continue  # ours or a driver's that selects the same devices: used as it is
            owner = {vocab.LABEL_MANAGED_BY: vocab.FLEET_MANAGER}
            _refuse_foreign("DeviceClass", actual, owner)
            await self.kube.replace(DEVICE_CLASSES, diff.with_version(desired, actual))
            self._wrote(counts, "DeviceClass", "updated")

    async def _mark_applying(self, desired: layout.DesiredFleet) -> None:
        """Before the first object write, mark an existing record whose spec differs: until
        `_record` rewrites it, `fleet status` reports the fleet as incomplete, even if this
        process is killed. (A fleet with no record yet needs no mark: objects without a
        record are incomplete already.)"""
        name, ns = record_name(desired.name), self.settings.record_namespace
        try:
            actual = await self.kube.get(CONFIG_MAPS, name, ns)
        except errors.NotFound:
            return
        marked = vocab.ANNOTATION_FLEET_APPLYING in (actual["metadata"].get("annotations") or {})
        if marked or (actual.get("data") or {}).get(RECORD_KEY) == desired.record:
            return
        now = datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
        patch = {"metadata": {"annotations": {vocab.ANNOTATION_FLEET_APPLYING: now}}}
        await self.kube.patch(CONFIG_MAPS, name, patch, namespace=ns)

    async def _record(self, desired: layout.DesiredFleet) -> None:
        """Record the applied spec, last, once every object is written: `fleet status` reads
        the desired counts from it, and its absence (or mark) flags an unfinished apply."""
        body = record_object(desired, self.settings.record_namespace)
        name, ns = body["metadata"]["name"], body["metadata"]["namespace"]
        try:
            actual = await self.kube.get(CONFIG_MAPS, name, ns)
        except errors.NotFound:
            await self._ensure_namespace(ns)
            await self.kube.create(CONFIG_MAPS, body)
            return
        marked = vocab.ANNOTATION_FLEET_APPLYING in (actual["metadata"].get("annotations") or {})
        if marked or (actual.get("data") or {}).get(RECORD_KEY) != desired.record:
            await self.kube.replace(CONFIG_MAPS, diff.with_version(body, actual))

    async def _ensure_namespace(self, namespace: str) -> None:
        """The records' namespace, created if missing (a local cluster has none; in a
        cluster the manifests made it, and the fleet's role may only read it)."""
        try:
            await self.kube.get(NAMESPACES, namespace)
        except errors.NotFound:
            body = {
                "metadata": {
                    "name": namespace,
                    "labels": {vocab.LABEL_MANAGED_BY: vocab.FLEET_MANAGER},
                }
            }
            with contextlib.suppress(errors.AlreadyExists):
                await self.kube.create(NAMESPACES, body)

    # -- wait ----------------------------------------------------------------------------

    async def wait_ready(
        self,
        desired: layout.DesiredFleet,
        *,
        within: float,
        progress: Progress | None = None,
        on_change: Callable[[int, int], None] | None = None,
    ) -> int:
        """Wait (on a watch) until kwok reports every node of the fleet Ready."""
        progress = progress or NoProgress()
        fleet = desired.fleet
        expected = {n.name for n in desired.nodes}
        progress.phase(f"fleet {fleet.name}: waiting for Ready", len(expected))
        ready: set[str] = set()
        stop = asyncio.Event()

        async def watch() -> None:
            async for ev in informer(
                self.kube, NODES, label_selector=layout.fleet_selector(fleet.name), stop=stop
            ):
                if isinstance(ev, Snapshot):
                    ready.clear()
                    ready.update(
                        n["metadata"]["name"]
                        for n in ev.items
                        if resources.node_ready(n) and n["metadata"]["name"] in expected
                    )
                elif isinstance(ev, Change):
                    name = ev.object["metadata"]["name"]
                    if (
                        ev.type != "DELETED"
                        and resources.node_ready(ev.object)
                        and name in expected
                    ):
                        ready.add(name)
                    else:
                        ready.discard(name)
                progress.set_done(len(ready))
                if on_change:
                    on_change(len(ready), len(expected))
                if ready >= expected:
                    return

        try:
            await asyncio.wait_for(watch(), within)
        except TimeoutError:
            raise ReconcileError(
                f"fleet {fleet.name}: {len(ready)} of {len(expected)} nodes Ready after "
                f"{within:.0f}s (is kwok running?)"
            ) from None
        finally:
            stop.set()
        return len(ready)

    # -- status --------------------------------------------------------------------------

    async def read_record(self, name: str) -> Fleet | None:
        """The spec of the fleet's last finished apply, if any."""
        cm = await self._record_object(name)
        return recorded_fleet(name, cm) if cm else None

    async def _record_object(self, name: str) -> Obj | None:
        try:
            return await self.kube.get(
                CONFIG_MAPS, record_name(name), self.settings.record_namespace
            )
        except errors.NotFound:
            return None

    async def status(self, name: str) -> FleetStatus:
        """Desired, present and Ready nodes per pool, and whether the cluster holds exactly
        the recorded fleet."""
        selector = layout.fleet_selector(name)
        cm, nodes_l, slices_l = await asyncio.gather(
            self._record_object(name),
            self.kube.list(NODES, label_selector=selector),
            self.kube.list(RESOURCE_SLICES, label_selector=selector),
        )
        return fleet_status(name, cm, nodes_l.items, slices_l.items)

    async def list_fleets(self) -> list[str]:
        """Names of every fleet with objects or a record in the cluster."""
        sel = f"{vocab.LABEL_MANAGED_BY}={vocab.FLEET_MANAGER}"
        nodes, cms = await asyncio.gather(
            self.kube.list(NODES, label_selector=sel),
            self.kube.list(
                CONFIG_MAPS, namespace=self.settings.record_namespace, label_selector=sel
            ),
        )
        names = {
            (o["metadata"].get("labels") or {}).get(vocab.LABEL_FLEET, "")
            for o in [*nodes.items, *cms.items]
        }
        return sorted(n for n in names if n)

    # -- delete --------------------------------------------------------------------------

    async def delete(
        self, name: str, *, within: float = 300.0, progress: Progress | None = None
    ) -> Counts:
        """Remove every node, slice and record of fleet `name` and nothing else.

        One DELETE per object with bounded concurrency: the API server runs a deletecollection
        with a single worker by default, which is several times slower at fleet scale.
        """
        progress = progress or NoProgress()
        selector = layout.fleet_selector(name)
        counts = Counts()
        deadline = time.monotonic() + within
        # Repeat until a list comes back empty: objects created meanwhile are caught too.
        while True:
            nodes_l, slices_l = await asyncio.gather(
                self.kube.list(NODES, label_selector=selector),
                self.kube.list(RESOURCE_SLICES, label_selector=selector),
            )
            if not nodes_l.items and not slices_l.items:
                break
            if time.monotonic() > deadline:
                left = len(nodes_l.items) + len(slices_l.items)
                raise ReconcileError(
                    f"fleet {name}: {left} objects still present after {within:.0f}s"
                )
            slices = {o["metadata"]["name"]: o for o in slices_l.items}
            nodes = sorted(o["metadata"]["name"] for o in nodes_l.items)
            progress.phase(f"fleet {name}: deleting", len(nodes))
            work = self._removals(slices, nodes, sorted(slices), counts, progress)
            await self._all(work, counts)
            if counts.failed:
                raise ReconcileError(
                    f"fleet {name}: {counts.failed} deletes failed, first: {counts.first_error}"
                )
        await self.kube.delete(CONFIG_MAPS, record_name(name), self.settings.record_namespace)
        return counts


def _refuse_foreign(kind: str, actual: Obj, owner: Mapping[str, str]) -> None:
    """Raise, naming it, unless `actual` carries every label of `owner`: an object of the same
    name that the testbed did not make (or another fleet made) is never taken over, since
    `fleet delete` would then remove it."""
    labels = actual["metadata"].get("labels") or {}
    theirs = {k: labels.get(k) for k in owner if labels.get(k) != owner[k]}
    if theirs:
        found = ", ".join(f"{k}={v}" if v is not None else f"no {k}" for k, v in theirs.items())
        raise ReconcileError(
            f"{kind} {actual['metadata']['name']} exists and is not this fleet's ({found}); "
            "refusing to take it over: delete it or choose other names"
        )
