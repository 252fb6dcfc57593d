"""Prometheus metrics, on an injected registry (tests build a fresh one each)."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Iterator
from datetime import datetime
from typing import Any, get_args

from prometheus_client import CollectorRegistry, Counter, Histogram
from prometheus_client.core import GaugeMetricFamily
from prometheus_client.registry import Collector

from extender.cache.index import Index
from extender.topology import Outcome
from testbed.kube.watching import RestartReason

_LATENCY_BUCKETS = (0.0002, 0.0005, 0.001, 0.002, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 1.0, 5.0)
LATE_AFTER_SECONDS = 5.0
"""kube-scheduler's `httpTimeout` in the shipped configuration: an answer that took longer
came after the scheduler gave up on the call (and, the extender being ignorable, scheduled
without it)."""
VERBS = ("filter", "prioritize")
_CANDIDATE_BUCKETS = (1, 10, 50, 100, 250, 500, 1000, 2500, 5000, 10000)
_LAG_BUCKETS = (0.5, 1, 2, 5, 10, 30, 60, 300)


class Metrics:
    def __init__(self, registry: CollectorRegistry) -> None:
        self.request_seconds = Histogram(
            "extender_request_duration_seconds",
            "Time to answer a scheduler call, by verb (filter, prioritize).",
            ["verb"],
            buckets=_LATENCY_BUCKETS,
            registry=registry,
        )
        self.requests = Counter(
            "extender_requests_total",
            "Scheduler calls by verb and outcome (ok, not_ready, late = answered after the "
            "scheduler's httpTimeout or after it hung up, bad_request, error, overloaded = "
            "refused with 503 beyond the in-flight cap, deadline = the call deadline, from its "
            "arrival, passed before its turn came: answered not judged at once, slow_body = "
            "its body not received within the call deadline, 408; cel_budget = its CEL time "
            "budget spent, cel_not_judged = an expression this interpreter cannot follow "
            "Kubernetes' on: both answered not judged, the expressions named in the log).",
            ["verb", "outcome"],
            registry=registry,
        )
        self.candidates = Histogram(
            "extender_candidate_nodes",
            "Candidate nodes per scheduler call.",
            ["verb"],
            buckets=_CANDIDATE_BUCKETS,
            registry=registry,
        )
        self.rejections = Counter(
            "extender_filter_rejections_total",
            "Nodes the filter rejected, by the requirement they broke (alignment, locality).",
            ["requirement"],
            registry=registry,
        )
        self.watch_restarts = Counter(
            "extender_watch_restarts_total",
            "Watch restarts by kind and reason (gone = relist after 410, error, closed, hung = "
            "relist after the API server stopped answering).",
            ["kind", "reason"],
            registry=registry,
        )
        self.event_lag = Histogram(
            "extender_cache_event_lag_seconds",
            "Delay from an object's last write (managedFields time, 1 s resolution) to the "
            "extender seeing the watch event, by kind.",
            ["kind"],
            buckets=_LAG_BUCKETS,
            registry=registry,
        )
        self.apiserver_outages = Counter(
            "extender_apiserver_outages_total",
            "Times the API server stopped answering the liveness probe (hung or unreachable): "
            "/readyz turned 503 and every kind was relisted once it answered again.",
            registry=registry,
        )
        self.unjudged = Counter(
            "extender_unjudged_requests_total",
            "Requests (or whole pods) the extender could not judge and left to DRA, by reason "
            "(unknown_class, unsupported_function, does_not_compile, too_complex, deadline...).",
            ["reason"],
            registry=registry,
        )
        self.placements = Counter(
            "extender_observed_placements_total",
            "GPUs in fresh claim allocations that also got NICs, by pairing: aligned (same "
            "PCIe root), numa (same NUMA node) or unaligned.",
            ["outcome"],
            registry=registry,
        )
        self.gangs = Counter(
            "extender_gang_placements_total",
            "What the gang placer did with gated gangs and pods: placed_one_block, "
            "placed_blocks (the fewest that hold the gang), no_room (said once while the gang "
            "waits gated), bad_input (a gated pod without gang label or size: left gated), "
            "hold_expired (pods not bound within gang_hold_seconds of placement).",
            ["outcome"],
            registry=registry,
        )

        # Born at zero, the children a dashboard's rate() or increase() needs from the first
        # call: one born at its first observation shows no increase until the next scrape
        # sees another (a burst of pods within one scrape interval would show nothing).
        for verb in VERBS:
            self.request_seconds.labels(verb)
            self.candidates.labels(verb)
            self.requests.labels(verb, "ok")
        for requirement in ("alignment", "locality"):
            self.rejections.labels(requirement)
        for outcome in get_args(Outcome):
            self.placements.labels(outcome)
        self._answered: dict[tuple[str, bool], tuple[Any, Any, Any]] = {}
        self._lag: dict[str, Any] = {}

    def answered(
        self, verb: str, ready: bool, seconds: float, candidates: int, *, gone: bool = False
    ) -> None:
        """One scheduler call answered (ok, or not_ready before the first sync), or answered
        too late to count: after LATE_AFTER_SECONDS or once the scheduler hung up (`gone`),
        it has already skipped the extender. The label children are looked up once:
        `labels()` costs more than the observation itself."""
        if ready and (gone or seconds >= LATE_AFTER_SECONDS):
            self.request_seconds.labels(verb).observe(seconds)
            self.candidates.labels(verb).observe(candidates)
            self.requests.labels(verb, "late").inc()
            return
        children = self._answered.get((verb, ready))
        if children is None:
            children = self._answered[(verb, ready)] = (
                self.request_seconds.labels(verb),
                self.candidates.labels(verb),
                self.requests.labels(verb, "ok" if ready else "not_ready"),
            )
        duration, count, outcome = children
        duration.observe(seconds)
        count.observe(candidates)
        outcome.inc()

    def placement(self, outcome: Outcome, count: int) -> None:
        self.placements.labels(outcome).inc(count)

    def not_judged(self, reason: str) -> None:
        self.unjudged.labels(reason).inc()

    def gang(self, outcome: str) -> None:
        self.gangs.labels(outcome).inc()

    def liveness(self, up: bool, reason: str) -> None:
        if not up:
            self.apiserver_outages.inc()

    def restart(self, kind: str, reason: str) -> None:
        self.watch_restarts.labels(kind, reason).inc()

    def expect_restarts(self, kinds: Iterable[str]) -> None:
        """Every (kind, reason) series of the watches about to start, at 0: a dashboard panel
        of restarts then shows 0 rather than no data, and rate() counts the first restart
        (a series that first appears at 1 has no increase)."""
        for kind in kinds:
            for reason in get_args(RestartReason):
                self.watch_restarts.labels(kind, reason)

    def event(self, kind: str, obj: dict[str, Any], now: Callable[[], float] = time.time) -> None:
        written = _last_write(obj)
        if written is not None:
            child = self._lag.get(kind)
            if child is None:
                child = self._lag[kind] = self.event_lag.labels(kind)
            child.observe(max(0.0, now() - written))


class CacheCollector(Collector):
    """Reads the index at scrape time: objects per kind, and readiness."""

    def __init__(self, index: Index, ready: Callable[[], bool]) -> None:
        self.index = index
        self.ready = ready

    def collect(self) -> Iterator[GaugeMetricFamily]:
        objects = GaugeMetricFamily(
            "extender_cache_objects", "Objects held in the cache, by kind.", labels=["kind"]
        )
        for kind, n in self.index.counts().items():
            objects.add_metric([kind], n)
        yield objects
        yield GaugeMetricFamily(
            "extender_cache_ready",
            "1 once every watched kind has been listed in full.",
            value=1 if self.ready() else 0,
        )


def _last_write(obj: dict[str, Any]) -> float | None:
    newest = ""
    for f in (obj.get("metadata") or {}).get("managedFields") or ():
        t = f.get("time") if isinstance(f, dict) else None
        if isinstance(t, str) and t > newest:  # RFC 3339 in UTC: text order is time order
            newest = t
    if not newest:
        return None
    try:
        return datetime.fromisoformat(newest).timestamp()  # 3.11 reads the trailing Z
    except ValueError:
        return None
