"""The pathology detector on plain figures: each rule fires on its evidence, stays silent
without it, and names the upstream issue and the knob for the release."""

from __future__ import annotations

import dataclasses

from loadgen import cpu, pathologies
from loadgen.pathologies import Evidence

STORM = Evidence(
    release="v1.37.2",
    pods=3000,
    claims=3000,
    seconds=600.0,
    throughput=2.0,
    pending_peak={"active": 50, "gated": 1800, "unschedulable": 0},
    cpu_shares={cpu.QUEUE: 0.45, cpu.DRA: 0.1, cpu.OTHER: 0.05},
    signature_shares={"isPodWorthRequeuing": 0.44},
)
NORMAL = dataclasses.replace(
    STORM,
    throughput=9.0,
    pending_peak={"active": 900, "gated": 30, "unschedulable": 0},
    cpu_shares={cpu.QUEUE: 0.04, cpu.DRA: 0.5, cpu.OTHER: 0.05},
    signature_shares={"isPodWorthRequeuing": 0.01},
)


def names(e: Evidence) -> list[str]:
    return [f.name for f in pathologies.detect(e)]


def test_a_storm_is_named_with_its_issue_and_the_gate() -> None:
    [f] = pathologies.detect(STORM)
    assert f.name == "requeue-storm" and f.issue == "kubernetes/kubernetes#138095"
    assert "1800 pods gated or unschedulable" in f.evidence and "45 %" in f.evidence
    assert "--feature-gates SchedulerPreQueueingHints=true" in f.knob


def test_a_normal_run_names_nothing() -> None:
    assert names(NORMAL) == []


def test_no_storm_without_claims_or_without_requeue_cpu() -> None:
    assert names(dataclasses.replace(STORM, claims=0)) == []
    calm = dataclasses.replace(
        STORM, cpu_shares={cpu.QUEUE: 0.1}, signature_shares={"isPodWorthRequeuing": 0.1}
    )
    assert names(calm) == []


def test_without_a_profile_claim_event_handling_is_the_evidence() -> None:
    unprofiled = dataclasses.replace(STORM, cpu_shares=None, signature_shares={})
    assert names(unprofiled) == []
    busy = dataclasses.replace(unprofiled, claim_event_seconds=400.0)
    [f] = pathologies.detect(busy)
    assert "not profiled" in f.evidence


def test_the_knob_depends_on_the_release_and_the_gate() -> None:
    [old] = pathologies.detect(dataclasses.replace(STORM, release="v1.36.4"))
    assert "exists from 1.37" in old.knob
    [on] = pathologies.detect(dataclasses.replace(STORM, gates={"SchedulerPreQueueingHints": True}))
    assert "already on" in on.knob and "#142109" in on.knob


def test_pool_gathering_only_before_1_37() -> None:
    e = dataclasses.replace(
        NORMAL,
        release="v1.36.4",
        partitionable=True,
        cpu_shares={cpu.DRA: 0.6, cpu.CEL: 0.1},
        signature_shares={"GatherPools": 0.3},
    )
    assert names(e) == ["partitionable-pool-gathering"]
    assert names(dataclasses.replace(e, release="v1.37.2")) == []


def test_extender_bound_from_the_attempt_time_outside_the_extension_points() -> None:
    e = dataclasses.replace(
        NORMAL,
        attempts=100,
        attempt_seconds=10.0,
        outside_points_seconds=6.0,
        extender_served_seconds=5.0,
        extender_calls=200,
    )
    [f] = pathologies.detect(e)
    assert f.name == "extender-bound" and "60 %" in f.evidence and "25.0 ms per call" in f.evidence
    assert names(dataclasses.replace(e, outside_points_seconds=1.0)) == []


def test_api_server_bound_from_throttling() -> None:
    e = dataclasses.replace(NORMAL, throttle_seconds=300.0)
    [f] = pathologies.detect(e)
    assert f.name == "api-server-bound" and f.issue is None and "clientConnection" in f.knob


def test_api_server_bound_from_slow_binding_calls() -> None:
    e = dataclasses.replace(NORMAL, attempts=200, attempt_seconds=700.0, binding_seconds=430.0)
    [f] = pathologies.detect(e)
    assert f.name == "api-server-bound" and "61 % of the scheduling attempts' time" in f.evidence
    assert names(dataclasses.replace(e, binding_seconds=100.0)) == []
