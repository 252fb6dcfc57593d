"""The CL2 agreement check: loadgen's p50/p90/p99 of three phases against CL2's PerfData,
within max(20 ms, 5 %)."""

from __future__ import annotations

from typing import Any

import pydantic
import pytest

from loadgen import agreement
from loadgen.report.document import Summary


def _summary(p50: float, p90: float, p99: float, count: int = 100) -> Summary:
    return Summary(count=count, min=0, max=p99, avg=p50, Perc50=p50, Perc90=p90, Perc99=p99)


def _perfdata(**phases: tuple[float, float, float]) -> dict[str, Any]:
    return {
        "version": "1.0",
        "dataItems": [
            {
                "data": {"Perc50": a, "Perc90": b, "Perc99": c},
                "unit": "ms",
                "labels": {"Metric": name},
            }
            for name, (a, b, c) in phases.items()
        ],
    }


CL2 = _perfdata(
    create_to_schedule=(100.0, 400.0, 1000.0),
    schedule_to_run=(10.0, 30.0, 50.0),
    pod_startup=(120.0, 450.0, 1100.0),
    run_to_watch=(0.0, 0.0, 0.0),
)


def test_tolerance_is_20_ms_or_5_percent_whichever_is_larger() -> None:
    assert agreement.allowed_ms(100.0) == 20.0
    assert agreement.allowed_ms(400.0) == 20.0
    assert agreement.allowed_ms(1000.0) == 50.0


def test_figures_within_tolerance_agree_and_one_beyond_it_does_not() -> None:
    cl2 = agreement.cl2_pod_startup(CL2)
    assert set(cl2) == {"create_to_schedule", "schedule_to_run", "pod_startup", "run_to_watch"}
    ours = {
        "create_to_schedule": _summary(119.0, 381.0, 1049.0),  # -19, +49 < 50: in
        "schedule_to_run": _summary(10.0, 30.0, 50.0),
        "pod_startup": _summary(120.0, 450.0, 1100.0),
    }
    table = agreement.rows("Churn", ours, cl2)
    assert len(table) == 9 and agreement.met(table)
    ours["pod_startup"] = _summary(141.0, 472.0, 1100.0)  # +21 on 120 (> 20), +22 on 450 (< 22.5)
    table = agreement.rows("Churn", ours, cl2)
    missed = [(r.phase, r.stat) for r in table if not r.ok]
    assert missed == [("pod_startup", "Perc50")] and not agreement.met(table)
    assert next(r for r in table if not r.ok).diff == pytest.approx(21.0)


def test_a_phase_missing_on_either_side_never_agrees() -> None:
    cl2 = agreement.cl2_pod_startup(_perfdata(create_to_schedule=(1.0, 2.0, 3.0)))
    ours = {"create_to_schedule": _summary(1, 2, 3), "schedule_to_run": _summary(0, 0, 0, 0)}
    table = agreement.rows("FastFill", ours, cl2)
    assert [r.ok for r in table[:3]] == [True] * 3
    assert not any(r.ok for r in table[3:])  # no pods measured / no CL2 figure
    assert not agreement.met([])


def test_only_perfdata_is_read() -> None:
    with pytest.raises(pydantic.ValidationError):
        agreement.cl2_pod_startup({"version": "1.0", "items": []})


def test_summaries_are_found_by_measurement_and_copies_are_skipped() -> None:
    names = [
        "PodStartupLatency_FastFillPodStartupLatency_dra-steady-state_2026-11-22T17:00:00Z.json",
        "StatelessPodStartupLatency_FastFillPodStartupLatency_dra-steady-state_2026.json",
        "PodStartupLatency_ChurnPodStartupLatency_dra-steady-state_2026-11-22T17:05:00Z.json",
        "ResourceClaimAllocationLatency_FastFill_dra-steady-state_2026.json",
        "junit.xml",
    ]
    found = agreement.cl2_summaries(names)
    assert sorted(found) == ["ChurnPodStartupLatency", "FastFillPodStartupLatency"]
    assert found["FastFillPodStartupLatency"] == names[0]
