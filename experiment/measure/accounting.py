"""Whether an arm accounted for every pod it asked for, from its record (pure)."""

from __future__ import annotations

from experiment.measure.arm_record import ArmRecord


def accounted(rec: ArmRecord) -> tuple[bool, str]:
    """Every pod the arm asked for was seen, and each either ran or is explained.

    A probe phase may leave pods the scheduler found unschedulable, or time out, by design
    (the fragmentation and alignment probes ask for more pods than a fragmented fleet can
    take; how many fit is the measurement). A phase is a probe by its own scenario's word:
    it waits until each pod is placed or refused (`wait: settled`).
    """
    if rec.in_process:
        # scheduler_perf's measured createPods step waits until every pod is scheduled, and
        # a run that did not get there fails and writes no result (`in_process.run_arm`).
        return True, "ok (scheduler_perf: every measured pod scheduled)"
    if rec.clusterloader2 is not None:
        # One observer per ClusterLoader2 measurement: each of its pods measured.
        pods = rec.clusterloader2.pods
        if short := [
            f"{i} {p.measured} of {p.expected}" for i, p in pods.items() if p.measured != p.expected
        ]:
            return False, f"pods measured: {'; '.join(short)}"
        return True, "ok (ClusterLoader2: every pod of both measurements measured)"
    result = rec.result
    scenario = rec.scenario
    probe_phases = tuple(p.name for p in scenario.phases if p.wait == "settled") if scenario else ()
    counts = result.counts
    expected = counts.expected_pods
    probe_timeout = any(p.name in probe_phases and p.timed_out for p in result.phases)
    if result.error and not probe_timeout:
        return False, f"error: {result.error}"
    if counts.pods_seen != expected:
        return False, f"saw {counts.pods_seen} of {expected} pods"
    timed_out = any(p.timed_out for p in result.phases)
    # pods_running counts every pod that ran, including those that have since succeeded or
    # failed (loadgen counts a pod once, when first seen Running or later): adding
    # pods_succeeded counted Jobs' pods twice ("20 of 10 pods ran").
    ran = counts.pods_running
    if probe_phases:
        # The probe ends once each pod is placed or refused: a placed one may not have
        # reached Running yet (every other phase waited for Running, so for them the two
        # counts agree).
        ran = counts.pods_scheduled + counts.pods_unschedulable
    if ran != expected and not timed_out:
        return False, f"{ran} of {expected} pods ran"
    return True, "ok"
