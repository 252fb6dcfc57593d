"""Metrics on an injected registry."""

from __future__ import annotations

from datetime import UTC, datetime

from prometheus_client import CollectorRegistry

from extender.metrics import LATE_AFTER_SECONDS, Metrics


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


def test_an_answer_after_the_schedulers_timeout_or_hang_up_is_late_not_ok() -> None:
    registry = CollectorRegistry()
    metrics = Metrics(registry)
    metrics.answered("filter", True, 0.01, 10)
    metrics.answered("filter", True, LATE_AFTER_SECONDS + 0.2, 10)  # slowed past httpTimeout
    metrics.answered("prioritize", True, 0.01, 10, gone=True)  # the scheduler hung up
    metrics.answered("filter", False, 0.01, 10)  # before the first sync: not_ready, as before

    def calls(verb: str, outcome: str) -> float | None:
        return registry.get_sample_value(
            "extender_requests_total", {"verb": verb, "outcome": outcome}
        )

    assert calls("filter", "ok") == 1 and calls("filter", "late") == 1
    assert calls("prioritize", "late") == 1 and calls("prioritize", "ok") == 0
    assert calls("filter", "not_ready") == 1
    # The duration histogram has a bucket at the timeout, so the late tail is readable there.
    le = {"verb": "filter", "le": str(LATE_AFTER_SECONDS)}
    assert registry.get_sample_value("extender_request_duration_seconds_bucket", le) == 2


def test_children_a_dashboard_rates_are_born_at_zero() -> None:
    """A burst of calls within one scrape interval must show as an increase: the children
    exist, at zero, before the first call."""
    registry = CollectorRegistry()
    Metrics(registry)
    for verb in ("filter", "prioritize"):
        assert (
            registry.get_sample_value("extender_requests_total", {"verb": verb, "outcome": "ok"})
            == 0
        )
        assert (
            registry.get_sample_value("extender_request_duration_seconds_count", {"verb": verb})
            == 0
        )
    for outcome in ("aligned", "numa", "unaligned"):
        assert (
            registry.get_sample_value("extender_observed_placements_total", {"outcome": outcome})
            == 0
        )


def test_expected_watch_restarts_are_exported_at_zero_before_any_restart() -> None:
    registry = CollectorRegistry()
    metrics = Metrics(registry)
    metrics.expect_restarts(["Node", "Namespace"])
    metrics.restart("Node", "gone")
    samples = {
        (s.labels["kind"], s.labels["reason"]): s.value
        for family in registry.collect()
        if family.name == "extender_watch_restarts"
        for s in family.samples
        if s.name == "extender_watch_restarts_total"
    }
    assert samples[("Node", "gone")] == 1
    assert samples[("Namespace", "hung")] == 0
    assert len(samples) == 2 * 4  # two kinds x gone, error, closed, hung
