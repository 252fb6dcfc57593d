"""Figures the catalogue reads from a loadgen result that whole-arm summaries do not give:
the Filter extension point per pod, and one phase's latencies (ClusterLoader2 DRA's churn)."""

from __future__ import annotations

from typing import Any

from experiment import figures

FILTER = figures.FILTER_SUM


def _scheduler(deltas: dict[str, float], scheduled: int = 10) -> dict[str, Any]:
    return {
        "counts": {"pods_scheduled": scheduled, "expected_pods": scheduled},
        "metrics": {"scheduler": {"summary": {}, "deltas": deltas}},
    }


def test_filter_time_per_pod_sums_the_filter_extension_point_alone() -> None:
    get = figures.metric("Filter time per pod")[2]
    doc = _scheduler(
        {
            f'{FILTER}{{extension_point="Filter",profile="a",status="Success"}}': 0.3,
            f'{FILTER}{{extension_point="Filter",profile="a",status="Unschedulable"}}': 0.1,
            f'{FILTER}{{extension_point="Score",profile="a",status="Success"}}': 5.0,
        }
    )
    assert get(doc) == 0.4 * 1000 / 10
    assert get(_scheduler({"other": 1.0})) is None  # not scraped: no figure, never 0
    assert get(_scheduler({f'{FILTER}{{extension_point="Filter"}}': 1.0}, scheduled=0)) is None


def test_churn_figures_read_the_churn_phase_not_the_whole_run() -> None:
    def phase(name: str, p50: float) -> dict[str, Any]:
        summary = {"count": 5, "Perc50": p50, "Perc99": p50 * 2}
        return {"name": name, "latency_ms": {"pod_startup": summary, "create_to_schedule": summary}}

    doc = {
        "latency_ms": {"pod_startup": {"count": 10, "Perc50": 1.0, "Perc99": 1.0}},
        "phases": [phase("fill", 70.0), phase("churn", 55.0)],
    }
    assert figures.metric("churn pod startup p50")[2](doc) == 55.0
    assert figures.metric("churn create to schedule p99")[2](doc) == 110.0
    assert figures.metric("churn pod startup p99")[2]({"phases": [phase("fill", 1.0)]}) is None
