"""The aiohttp application: routes, the one error middleware, lifecycle contexts."""

from __future__ import annotations

import asyncio
import logging
import re
from collections.abc import AsyncIterator, Awaitable, Callable

from aiohttp import web
from aiohttp.typedefs import Middleware
from prometheus_client import CollectorRegistry, ProcessCollector

from extender import cpu_stages, gates, handlers, limits, runs, startup, warmup
from extender.cache import sync
from extender.cache.index import Index
from extender.cache.store import Store
from extender.config import Settings
from extender.core import Core
from extender.gangs.placer import Placer
from extender.metrics import CacheCollector, Metrics
from testbed import runtime
from testbed.kube import errors as kube_errors
from testbed.kube import workloads
from testbed.kube.client import Kube
from testbed.kube.watching import Liveness

log = logging.getLogger(__name__)

Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]
REGISTRY = web.AppKey("registry", CollectorRegistry)
STORE = web.AppKey("store", Store)


def _verb(request: web.Request) -> str:
    """The `verb` label of a call: the scheduler's verbs by name, any other path as `other`
    (paths such as /debug/nodes/<node>/free would make the label unbounded)."""
    name = request.path.strip("/")
    return name if name in ("filter", "prioritize") else "other"


@web.middleware
async def errors(request: web.Request, handler: Handler) -> web.StreamResponse:
    """Bad input becomes a 400 with one line; anything unexpected a logged 500. Both are
    counted, so a scheduler seeing failed calls can be matched with the extender's view."""
    try:
        return await handler(request)
    except web.HTTPException:
        raise
    except Exception as e:
        refused = handlers.refusal(e)
        error: str | None
        if refused is None:
            log.exception("unexpected error answering %s %s", request.method, request.path)
            status, outcome, error = 500, "error", "internal error; see the extender log"
        else:
            status, outcome, error = refused
        request.app[handlers.METRICS].requests.labels(_verb(request), outcome).inc()
        if error is None:
            log.debug("%s %s: %s", request.method, request.path, e)
            return web.Response(status=status)
        response = web.json_response({"error": error}, status=status)
        if isinstance(e, handlers.SlowBody):
            response.force_close()  # the rest of the body is not waited for
        return response


def build(
    settings: Settings,
    *,
    registry: CollectorRegistry | None = None,
    kube: Kube | None = None,
    separate_admin: bool = False,
    api_timeout: float = 10.0,
) -> web.Application:
    """An app over a fresh index. With `kube`, informers fill it (cleanup_ctx); without, the
    caller fills `app[STORE]` (offline files, tests) before serving. It serves the scheduler's
    calls and the probes, and /metrics and (with `settings.debug`) /debug/* too unless
    `separate_admin`: then `admin(app)` serves those, on a port of their own. The app
    serves at once; with `kube`, it waits for the API server in the background (each attempt
    within `api_timeout` seconds, `extender.startup`), and is not ready until then."""
    registry = registry if registry is not None else CollectorRegistry()
    metrics = Metrics(registry)
    index = Index(settings, on_placement=metrics.placement)
    stages = cpu_stages.CpuStages()
    registry.register(stages)
    store = Store(index, on_event=metrics.event, stages=stages)
    core = Core(
        index, settings, ready=store.ready.is_set, on_unjudged=metrics.not_judged, stages=stages
    )
    registry.register(CacheCollector(index, store.ready.is_set))
    seen = runs.Runs()
    registry.register(seen)
    # process_cpu_seconds_total and RSS, as Go components expose them: loadgen and the demo
    # report the extender's CPU per pod beside the scheduler's.
    ProcessCollector(registry=registry)

    # /metrics and /debug/* here too (no admin port) are throttled as the admin port's are.
    middlewares = [errors] if separate_admin else [_rate_limited(_admin_rate()), errors]
    app = web.Application(middlewares=middlewares, client_max_size=settings.max_body_bytes)
    app[handlers.CORE] = core
    app[handlers.METRICS] = metrics
    app[handlers.HEADS] = handlers.HostHeads()
    app[handlers.GATE] = limits.Gate(
        max_inflight=settings.max_inflight, deadline_seconds=settings.call_deadline_seconds
    )
    app[REGISTRY] = registry
    app[STORE] = store
    app[warmup.WARM] = asyncio.Event()
    app.router.add_post("/filter", handlers.filter_nodes)
    app.router.add_post("/prioritize", handlers.prioritize_nodes)
    runtime.add_probe_routes(
        app, registry=registry, not_ready=handlers.not_ready, metrics=not separate_admin
    )
    if not separate_admin:
        _admin_routes(app)
    if kube is not None:
        liveness = Liveness(kube, on_change=metrics.liveness)
        app[handlers.LIVENESS] = liveness
        wait = app[handlers.API_WAIT] = startup.ApiWait(kube.host)
        placer = Placer(core, settings.gang_hold_seconds, on_outcome=metrics.gang)
        app.cleanup_ctx.append(
            _watching(kube, store, metrics, liveness, seen, wait, api_timeout, placer)
        )
    app.cleanup_ctx.append(warmup.after_sync(core, store, app[warmup.WARM]))
    app.on_shutdown.append(_close_sandbox)
    return app


async def _close_sandbox(app: web.Application) -> None:
    """Stop the CEL sandbox's worker process, if one was started: at shutdown, before the
    calls in flight are waited for, so that one judged off the event loop on a busy worker
    ends at once (not judged) rather than at its CEL budget (`extender.judging`)."""
    app[STORE].index.evaluator.close()


ADMIN_MAX_CONNECTIONS = 64
"""Connections the admin port serves at once (probes and scrapes need a handful); more wait
in the kernel's queue, so a flood there leaves the event loop to the scheduler's calls."""
ADMIN_RATE = 10.0
"""Scrapes and /debug/* calls a second the admin port serves (bursts of twice that); more
get a 429 at once. Its port is apart from the scheduler's, but not its event loop: 1,000
concurrent scrapes, each rendering every metric, held /filter past the scheduler's 5 s."""


def _admin_rate() -> limits.Rate:
    return limits.Rate(ADMIN_RATE, burst=int(2 * ADMIN_RATE))


def _rate_limited(rate: limits.Rate) -> Middleware:
    """/metrics and /debug/* at most `rate`; the probes and the scheduler's calls never."""

    @web.middleware
    async def limit(request: web.Request, handler: Handler) -> web.StreamResponse:
        path = request.path
        throttled = path == "/metrics" or path.startswith("/debug/")
        if throttled and not rate.allow():
            return web.Response(status=429, text="too many requests", headers={"Retry-After": "1"})
        return await handler(request)

    return limit


def admin(main: web.Application) -> web.Application:
    """/healthz, /readyz, /metrics and (if enabled) /debug/* of `main`, as an app of their own
    (a port that the scheduler's network need not reach), /metrics and /debug/* at most
    ADMIN_RATE a second."""
    out = web.Application(
        middlewares=[_rate_limited(_admin_rate()), errors], client_max_size=main._client_max_size
    )
    out[handlers.CORE] = main[handlers.CORE]
    out[handlers.METRICS] = main[handlers.METRICS]
    out[handlers.HEADS] = main[handlers.HEADS]
    out[handlers.GATE] = main[handlers.GATE]
    if handlers.LIVENESS in main:
        out[handlers.LIVENESS] = main[handlers.LIVENESS]
    out[warmup.WARM] = main[warmup.WARM]
    if handlers.API_WAIT in main:
        out[handlers.API_WAIT] = main[handlers.API_WAIT]
    # The probes here too: kubelet reaches this port when the scheduler's is on loopback.
    runtime.add_probe_routes(out, registry=main[REGISTRY], not_ready=handlers.not_ready)
    _admin_routes(out)
    return out


def _admin_routes(app: web.Application) -> None:
    """/debug/* only when asked for: /debug/decisions lists every tenant's recent pods."""
    if app[handlers.CORE].settings.debug:
        app.router.add_get("/debug/decisions", handlers.decisions)
        app.router.add_get("/debug/nodes/{node}/free", handlers.free_devices)
        app.router.add_post("/debug/judge", handlers.judge)


_MINOR = re.compile(r"^(\d+)\D*$")


def _release(version: dict[str, object]) -> tuple[int, int] | None:
    """The API server's (major, minor) from its /version; None if it does not say (then the
    allocator is judged as the newest release has it)."""
    major, minor = (_MINOR.match(str(version.get(k, ""))) for k in ("major", "minor"))
    if not (major and minor):
        log.warning(
            "cannot read the cluster's version (%s): judging as the newest release", version
        )
        return None
    return int(major.group(1)), int(minor.group(1))


async def _serves_workloads(kube: Kube) -> bool:
    """The cluster serves a Workload API version, so a pod may name its gang only there
    (and is then watched); False if discovery fails (the labelled pods are still followed)."""
    try:
        version = await workloads.served_version(kube)
    except kube_errors.KubeError as e:
        log.warning("cannot discover the Workload API (%s): following labelled gangs only", e)
        return False
    if version is not None:
        log.info("the cluster serves the Workload API (%s): following group-only pods", version)
    return version is not None


def _watching(
    kube: Kube,
    store: Store,
    metrics: Metrics,
    liveness: Liveness,
    seen: runs.Runs,
    wait: startup.ApiWait,
    api_timeout: float,
    placer: Placer,
) -> Callable[[web.Application], AsyncIterator[None]]:
    tasks: list[asyncio.Task[None]] = []

    async def start() -> None:
        version = await startup.wait_for_api(kube, wait, attempt_timeout=api_timeout)
        store.index.release = _release(version)
        if store.index.settings.fractional_capacity is None:
            store.index.fractional = await gates.read_fractional(kube, store.index.release)
        if await _serves_workloads(kube):
            store.watch_groups()
        metrics.expect_restarts({*(w.kind for w in store.watches.values()), runs.KIND})
        tasks.extend(sync.start(kube, store, on_restart=metrics.restart, liveness=liveness))
        follow = runs.follow(kube, seen, on_restart=metrics.restart, liveness=liveness)
        tasks.append(asyncio.create_task(follow, name="watch-loadgen-runs"))
        tasks[-1].add_done_callback(runtime.log_exit(log))
        # Gated gangs, off the scheduler's calls (not part of readiness: it waits for it).
        placing = placer.run(kube, on_restart=metrics.restart, liveness=liveness)
        tasks.append(asyncio.create_task(placing, name="gang-placer"))
        tasks[-1].add_done_callback(runtime.log_exit(log))

    async def ctx(app: web.Application) -> AsyncIterator[None]:
        # In the background: the app listens (healthz, readyz "waiting") meanwhile.
        tasks.append(asyncio.create_task(start(), name="start-watching"))
        tasks[-1].add_done_callback(runtime.log_exit(log))
        try:
            yield
        finally:
            for t in tasks:
                t.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)

    return ctx
