"""`fleet serve`: the reconciler as a long-lived service driven by Fleet custom resources.

A watch (list, then watch, relist on 410, back off on errors, so it survives API server
restarts) feeds a controller that runs one reconcile task per Fleet: a new generation cancels
the running task and starts again; a deletion (held by a finalizer) deletes the fleet's
objects first. Progress and conditions go to the Fleet's status subresource. The aiohttp app
serves /metrics, /healthz and /readyz (ready once the first list of Fleets arrived).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import random
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from aiohttp import web
from prometheus_client import CollectorRegistry

from fleet import crd, handoff, render
from fleet.metrics import FleetMetrics
from fleet.profiles import ProfileError
from fleet.progress import Counts
from fleet.reconcile import ReconcileError, Reconciler, ReconcileSettings
from fleet.spec import SpecError, from_data
from testbed import runtime, vocab
from testbed.kube import crds, errors
from testbed.kube.client import ClientSettings, Kube
from testbed.kube.resources import CRDS
from testbed.kube.watching import Change, Liveness, Snapshot, informer

log = logging.getLogger(__name__)

Obj = dict[str, Any]


@dataclass(frozen=True, kw_only=True)
class ControllerSettings:
    ready_timeout: float = 600.0
    """Seconds a reconcile waits for kwok to report the nodes Ready before failing."""
    resync_seconds: float = 300.0
    """Re-run every fleet's reconcile this often, to repair objects changed behind its back."""
    retry_max: float = 60.0
    """Upper bound of the backoff between failed reconciles of one fleet, in seconds."""
    status_interval: float = 1.0
    """At most one progress update of a Fleet's status per this many seconds."""


@dataclass
class FleetController:
    """Watches Fleet objects and keeps one reconcile task per Fleet."""

    kube: Kube
    reconciler: Reconciler
    metrics: FleetMetrics
    settings: ControllerSettings = field(default_factory=ControllerSettings)
    liveness: Liveness | None = None
    """Probes the API server: while it does not answer, /readyz says so and the watch waits
    (then relists); its outages count as watch restarts with reason `hung`."""
    synced: asyncio.Event = field(default_factory=asyncio.Event)
    stop: asyncio.Event = field(default_factory=asyncio.Event)
    _tasks: dict[str, asyncio.Task[None]] = field(default_factory=dict)
    _started: dict[str, tuple[int, bool]] = field(default_factory=dict)  # generation, deleting
    _since: dict[str, tuple[bool, str]] = field(default_factory=dict)  # Ready value, since when
    # Progress status writes in flight: the loop holds tasks only weakly, so keep them here.
    _status_writes: set[asyncio.Task[None]] = field(default_factory=set)

    async def run(self) -> None:
        """Watch Fleets until `stop`; each (re)list re-examines every Fleet."""
        resync = asyncio.create_task(self._resync_loop(), name="fleet-resync")
        probe = asyncio.create_task(
            self.liveness.run(self.stop) if self.liveness else asyncio.sleep(0),
            name="apiserver-liveness",
        )
        try:
            async for ev in informer(
                self.kube,
                crd.FLEETS,
                on_restart=lambda reason: self.metrics.watch_restarts.labels(reason).inc(),
                stop=self.stop,
                liveness=self.liveness,
            ):
                if isinstance(ev, Snapshot):
                    for obj in ev.items:
                        self._consider(obj)
                    self.synced.set()
                elif isinstance(ev, Change) and ev.type != "DELETED":
                    self._consider(ev.object)
        finally:
            resync.cancel()
            probe.cancel()
            for task in self._tasks.values():
                task.cancel()
            await asyncio.gather(resync, probe, *self._tasks.values(), return_exceptions=True)

    def _consider(self, obj: Obj, *, force: bool = False) -> None:
        meta = obj["metadata"]
        name = meta["name"]
        key = (int(meta.get("generation") or 0), bool(meta.get("deletionTimestamp")))
        running = self._tasks.get(name)
        # Already running, or done, for this generation: our own status writes echo back.
        same = not force and self._started.get(name) == key and running is not None
        if same and running is not None and _alive_or_ok(running):
            return
        if running and not running.done():
            running.cancel()
        self._started[name] = key
        self._tasks[name] = asyncio.create_task(self._reconcile_loop(obj), name=f"fleet-{name}")

    async def _resync_loop(self) -> None:
        while True:
            await asyncio.sleep(self.settings.resync_seconds)
            try:
                listed = await self.kube.list(crd.FLEETS)
            except errors.KubeError as e:
                log.warning("fleet resync list failed: %s", e)
                continue
            for obj in listed.items:
                self._consider(obj, force=True)

    async def _reconcile_loop(self, obj: Obj) -> None:
        """Reconcile one Fleet generation until it succeeds (backing off between failures)."""
        name = obj["metadata"]["name"]
        failures = 0
        while True:
            try:
                await self._reconcile(obj)
                return
            except asyncio.CancelledError:
                raise
            except (SpecError, ProfileError) as e:
                # A bad spec does not get better by retrying; the next generation may fix it.
                await self._set_status(obj, phase="Invalid", reason="InvalidSpec", message=str(e))
                self.metrics.errors.labels("fleet").inc()
                return
            except (ReconcileError, errors.KubeError) as e:
                failures += 1
                self.metrics.errors.labels("fleet").inc()
                delay = min(self.settings.retry_max, 2.0**failures) * random.uniform(0.5, 1.0)
                log.warning("fleet %s: reconcile failed (%s); retrying in %.1fs", name, e, delay)
                with contextlib.suppress(errors.KubeError):
                    await self._set_status(
                        obj,
                        phase="Failed",
                        reason="Error",
                        message=str(e).splitlines()[0][:500],
                    )
                await asyncio.sleep(delay)
                with contextlib.suppress(errors.NotFound):
                    obj = await self.kube.get(crd.FLEETS, name)

    async def _reconcile(self, obj: Obj) -> None:
        meta = obj["metadata"]
        name = meta["name"]
        if meta.get("deletionTimestamp"):
            if vocab.FLEET_FINALIZER in (meta.get("finalizers") or []):
                # Status at the deletion's generation tells `fleet delete` a service took it up.
                await self._set_status(
                    obj, phase="Deleting", reason="Deleting", message="deleting nodes and slices"
                )
                await self.reconciler.delete(name)
                await self._set_finalizer(name, present=False)
            return
        fleet = from_data(obj, source=f"Fleet {name}")
        wanted = render.validate(fleet)  # bad spec: fail before any write
        if vocab.FLEET_FINALIZER not in (meta.get("finalizers") or []):
            await self._set_finalizer(name, present=True)
        desired = fleet.spec.total_nodes
        self.metrics.nodes.labels(name, "desired").set(desired)
        await self._set_status(
            obj,
            phase="Provisioning",
            reason="Reconciling",
            message=f"writing objects for {desired} nodes",
            desired=desired,
        )
        started = time.perf_counter()
        counts = await self.reconciler.apply(wanted)
        took = time.perf_counter() - started
        last = _last(counts, took)
        last_update = 0.0

        def on_change(ready: int, total: int) -> None:
            nonlocal last_update
            self.metrics.nodes.labels(name, "ready").set(ready)
            now = time.monotonic()
            if now - last_update >= self.settings.status_interval and ready < total:
                last_update = now
                task = asyncio.get_running_loop().create_task(
                    self._set_status(
                        obj,
                        phase="Provisioning",
                        reason="WaitingReady",
                        message=f"{ready}/{total} nodes Ready",
                        desired=total,
                        ready_nodes=ready,
                        last=last,
                        quiet=True,
                    )
                )
                self._status_writes.add(task)
                task.add_done_callback(self._status_writes.discard)

        ready = (
            await self.reconciler.wait_ready(
                wanted, within=self.settings.ready_timeout, on_change=on_change
            )
            if desired
            else 0
        )
        self.metrics.nodes.labels(name, "ready").set(ready)
        await self._set_status(
            obj,
            phase="Ready",
            reason="AllNodesReady",
            message=f"{ready}/{desired} nodes Ready",
            desired=desired,
            ready_nodes=ready,
            last=last,
        )

    async def _set_finalizer(self, name: str, *, present: bool) -> None:
        await handoff.set_finalizer(self.kube, name, present=present)

    def _transition(self, name: str, ready: bool) -> str:
        """When the Ready condition last changed value (kept while it stays the same)."""
        value, since = self._since.get(name, (not ready, ""))
        if value != ready or not since:
            since = _now()
        self._since[name] = (ready, since)
        return since

    async def _set_status(
        self,
        obj: Obj,
        *,
        phase: str,
        reason: str,
        message: str,
        desired: int | None = None,
        ready_nodes: int | None = None,
        last: Obj | None = None,
        quiet: bool = False,
    ) -> None:
        meta = obj["metadata"]
        generation = int(meta.get("generation") or 0)
        ready = phase == "Ready"  # the Ready condition holds in that phase and no other
        status: Obj = {
            "observedGeneration": generation,
            "phase": phase,
            "conditions": [
                {
                    "type": "Ready",
                    "status": "True" if ready else "False",
                    "reason": reason,
                    "message": message,
                    "lastTransitionTime": self._transition(meta["name"], ready),
                    "observedGeneration": generation,
                }
            ],
        }
        if desired is not None:
            status["desiredNodes"] = desired
        if ready_nodes is not None:
            status["readyNodes"] = ready_nodes
            status["nodes"] = desired  # every node exists once apply returned
        if last is not None:
            status["lastReconcile"] = last
        try:
            await self.kube.patch(
                crd.FLEETS, meta["name"], {"status": status}, subresource="status"
            )
        except errors.NotFound:
            pass
        except errors.KubeError as e:
            if not quiet:
                raise
            log.debug("status update of %s failed: %s", meta["name"], e)


def _now() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def _alive_or_ok(task: asyncio.Task[None]) -> bool:
    return not task.done() or (not task.cancelled() and task.exception() is None)


def _last(counts: Counts, seconds: float) -> Obj:
    return {
        "created": counts.created,
        "updated": counts.updated,
        "deleted": counts.deleted,
        "unchanged": counts.unchanged,
        "durationSeconds": round(seconds, 3),
    }


# -- HTTP --------------------------------------------------------------------------------------

CONTROLLER = web.AppKey("controller", FleetController)
REGISTRY = web.AppKey("registry", CollectorRegistry)


def _not_ready(app: web.Application) -> str | None:
    """Why /readyz answers 503: the API server stopped answering, or no Fleet list yet."""
    liveness = app[CONTROLLER].liveness
    if liveness is not None and not liveness.up:
        return liveness.reason
    if not app[CONTROLLER].synced.is_set():
        return "waiting for the first list of Fleets"
    return None


def make_app(controller: FleetController, registry: CollectorRegistry) -> web.Application:
    app = web.Application()
    app[CONTROLLER] = controller
    app[REGISTRY] = registry
    runtime.add_probe_routes(
        app,
        registry=registry,
        not_ready=_not_ready,
    )

    async def run_controller(app: web.Application) -> AsyncIterator[None]:
        task = asyncio.create_task(app[CONTROLLER].run(), name="fleet-controller")
        task.add_done_callback(runtime.log_exit(log))
        yield
        app[CONTROLLER].stop.set()
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task

    app.cleanup_ctx.append(run_controller)
    return app


async def install_crd(kube: Kube, *, within: float = 60.0) -> None:
    """Create the Fleet CRD if missing and wait until it is Established."""
    with contextlib.suppress(errors.AlreadyExists):
        await kube.create(CRDS, crd.crd_object())
    if not await crds.wait_established(kube, crd.CRD_NAME, within=within):
        raise ReconcileError(f"CRD {crd.CRD_NAME} not Established after {within:.0f}s")


async def serve(
    *,
    kubeconfig: str | Path | None,
    context: str | None,
    settings: ClientSettings,
    host: str,
    port: int,
    with_crd: bool = False,
    concurrency: int = 64,
    ready_timeout: float = 600.0,
) -> int:
    registry = CollectorRegistry()
    metrics = FleetMetrics(registry)
    kube = await Kube.connect(
        kubeconfig=kubeconfig, context=context, settings=settings, observer=metrics.observe_request
    )
    try:
        if with_crd:
            await install_crd(kube)
        reconciler = Reconciler(
            kube, settings=ReconcileSettings(concurrency=concurrency), metrics=metrics
        )
        controller = FleetController(
            kube,
            reconciler,
            metrics,
            ControllerSettings(ready_timeout=ready_timeout),
            liveness=Liveness(kube),
        )
        async with runtime.listening(make_app(controller, registry), host, port) as url:
            log.warning("fleet service on %s (watching %s)", url, crd.CRD_NAME)
            await runtime.until_signal()
            log.warning("fleet service stopping")
    finally:
        await kube.close()
    return 0


__all__ = ["ControllerSettings", "FleetController", "install_crd", "make_app", "serve"]
