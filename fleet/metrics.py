"""Prometheus metrics of the fleet reconciler; the registry is injected (tests build their own)."""

from __future__ import annotations

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram

from testbed.kube import resources as r

_LATENCY_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0)
_RECONCILE_BUCKETS = (0.1, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0, 120.0, 300.0, 600.0)


class FleetMetrics:
    def __init__(self, registry: CollectorRegistry) -> None:
        self.registry = registry
        self.objects = Counter(
            "fleet_objects_total",
            "API objects the reconciler wrote, by kind and action (created, updated, deleted).",
            ["kind", "action"],
            registry=registry,
        )
        self.errors = Counter(
            "fleet_errors_total",
            "Failed object writes and failed reconciles, by kind.",
            ["kind"],
            registry=registry,
        )
        self.reconcile_duration = Histogram(
            "fleet_reconcile_duration_seconds",
            "Wall time of one reconcile of one fleet (writes, not the wait for Ready).",
            buckets=_RECONCILE_BUCKETS,
            registry=registry,
        )
        self.api_latency = Histogram(
            "fleet_api_request_duration_seconds",
            "Latency of API server requests, by verb and resource.",
            ["verb", "resource"],
            buckets=_LATENCY_BUCKETS,
            registry=registry,
        )
        self.api_requests = Counter(
            "fleet_api_requests_total",
            "API server requests by verb, resource and HTTP status (0 = no answer).",
            ["verb", "resource", "code"],
            registry=registry,
        )
        self.nodes = Gauge(
            "fleet_nodes",
            "Nodes of each fleet by state (desired, present, ready).",
            ["fleet", "state"],
            registry=registry,
        )
        self.watch_restarts = Counter(
            "fleet_watch_restarts_total",
            "Restarts of the Fleet watch, by reason (gone, error, closed).",
            ["reason"],
            registry=registry,
        )

        # Born at zero, the children a dashboard's rate() needs from the first write: one born
        # at its first increment shows no increase until the next scrape sees another.
        for kind in (r.NODES.kind, r.RESOURCE_SLICES.kind):
            for action in ("created", "updated", "deleted"):
                self.objects.labels(kind, action)
        for kind in ("object", "fleet", "outage"):
            self.errors.labels(kind)

    def observe_request(self, verb: str, resource: str, status: int, seconds: float) -> None:
        """A `testbed.kube.client.RequestObserver`."""
        self.api_latency.labels(verb, resource).observe(seconds)
        self.api_requests.labels(verb, resource, str(status)).inc()

    def object_written(self, kind: str, action: str) -> None:
        self.objects.labels(kind, action).inc()
