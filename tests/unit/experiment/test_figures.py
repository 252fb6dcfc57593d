"""Figures the catalogue reads from a loadgen result that whole-arm summaries do not give:
the Filter extension point per pod, and one phase's latencies (ClusterLoader2 DRA's churn)."""

from __future__ import annotations

from typing import Any

from experiment.measure import arm_record, figures
from loadgen import cpu

R = arm_record.modelled
"""An arm's record of a result given in part (the rest zero)."""

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
    assert get(R(doc)) == 0.4 * 1000 / 10
    assert get(R(_scheduler({"other": 1.0}))) is None  # not scraped: no figure, never 0
    assert get(R(_scheduler({f'{FILTER}{{extension_point="Filter"}}': 1.0}, scheduled=0))) is None


def test_churn_figures_read_the_churn_phase_not_the_whole_run() -> None:
    def phase(name: str, p50: float) -> dict[str, Any]:
        summary = {"count": 5, "Perc50": p50, "Perc99": p50 * 2}
        return {"name": name, "latency_ms": {"pod_startup": summary, "create_to_schedule": summary}}

    doc = {
        "latency_ms": {"pod_startup": {"count": 10, "Perc50": 1.0, "Perc99": 1.0}},
        "phases": [phase("fill", 70.0), phase("churn", 55.0)],
    }
    assert figures.metric("churn pod startup p50")[2](R(doc)) == 55.0
    assert figures.metric("churn create to schedule p99")[2](R(doc)) == 110.0
    assert figures.metric("churn pod startup p99")[2](R({"phases": [phase("fill", 1.0)]})) is None


def test_requeue_shares_read_the_scheduler_profile_and_are_none_when_not_profiled() -> None:
    category = figures.metric("scheduler CPU in queue and requeue")[2]
    signature = figures.metric("scheduler CPU under isPodWorthRequeuing")[2]
    categories = [
        {"category": cpu.QUEUE, "cpu_seconds": 3.0, "share": 0.075},
        {"category": cpu.CEL, "cpu_seconds": 17.0, "share": 0.425},
    ]
    profile: dict[str, Any] = {
        "profiled": True,
        "cpu_seconds": 40.0,
        "categories": categories,
        "signatures": {"isPodWorthRequeuing": 0.053, "GatherPools": 0.01},
    }
    doc = {"explanation": {"cpu": {"scheduler": profile}}}
    assert (category(R(doc)), signature(R(doc))) == (0.075, 0.053)
    # The gate on: a category with no sample is 0, a figure (not "not measured").
    quiet = {**profile, "categories": categories[1:], "signatures": {}}
    gate_on = {"explanation": {"cpu": {"scheduler": quiet}}}
    assert (category(R(gate_on)), signature(R(gate_on))) == (0.0, 0.0)
    # Not profiled (refused, or an older result): no figure.
    refused = {"profiled": False, "reason": "403", "cpu_seconds": 0}
    for d in ({"explanation": {"cpu": {"scheduler": refused}}}, {}):
        assert category(R(d)) is None and signature(R(d)) is None


def test_the_requeue_figures_name_loadgens_category_and_signature() -> None:
    # The engine reads loadgen's result as data: its names must be loadgen's own.
    assert figures.REQUEUE_CATEGORY == cpu.QUEUE
    assert figures.REQUEUE_SIGNATURE in cpu.SIGNATURES
