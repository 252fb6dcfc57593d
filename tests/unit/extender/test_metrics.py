"""Metrics on an injected registry."""

from __future__ import annotations

from datetime import UTC, datetime

from prometheus_client import CollectorRegistry

from extender.metrics import Metrics


def test_event_lag_uses_the_newest_managed_fields_time() -> None:
    registry = CollectorRegistry()
    metrics = Metrics(registry)
    written = datetime(2026, 1, 1, 0, 0, 10, tzinfo=UTC).timestamp()
    obj = {
        "metadata": {
            "managedFields": [
                {"manager": "a", "time": "2026-01-01T00:00:00Z"},
                {"manager": "b", "time": "2026-01-01T00:00:10Z"},
            ]
        }
    }
    metrics.event("Pod", obj, now=lambda: written + 1.5)
    metrics.event("Pod", {"metadata": {}}, now=lambda: written)  # no times: not observed
    labels = {"kind": "Pod"}
    assert registry.get_sample_value("extender_cache_event_lag_seconds_count", labels) == 1
    assert registry.get_sample_value("extender_cache_event_lag_seconds_sum", labels) == 1.5


def test_placements_and_restarts_count() -> None:
    registry = CollectorRegistry()
    metrics = Metrics(registry)
    metrics.placement("aligned", 3)
    metrics.restart("ResourceClaim", "gone")
    assert (
        registry.get_sample_value("extender_observed_placements_total", {"outcome": "aligned"}) == 3
    )
    labels = {"kind": "ResourceClaim", "reason": "gone"}
    assert registry.get_sample_value("extender_watch_restarts_total", labels) == 1
