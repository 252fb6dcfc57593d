"""kube-scheduler's view of a run from its /metrics text: reduced keys, the timeline and its
totals."""

from __future__ import annotations

import pytest

from loadgen import scheduler_view, series

SCRAPE_1 = """
# HELP scheduler_pending_pods [STABLE] Number of pending pods, by the queue type.
scheduler_pending_pods{queue="active"} 5
scheduler_pending_pods{queue="backoff"} 0
scheduler_pending_pods{queue="gated"} 100
scheduler_pending_pods{queue="unschedulable"} 2
scheduler_queue_incoming_pods_total{event="PodAdd",queue="active"} 10
scheduler_queue_incoming_pods_total{event="resource.k8s.io/ResourceClaimAdd",queue="active"} 1
scheduler_event_handling_duration_seconds_sum{event="resource.k8s.io/ResourceClaimAdd"} 1
scheduler_scheduling_algorithm_duration_seconds_sum 2
scheduler_scheduling_algorithm_duration_seconds_count 10
scheduler_scheduling_attempt_duration_seconds_sum{result="scheduled"} 3
scheduler_scheduling_attempt_duration_seconds_count{result="scheduled"} 10
scheduler_framework_extension_point_duration_seconds_sum{extension_point="Filter",status="ok"} 1
scheduler_framework_extension_point_duration_seconds_sum{extension_point="Bind",status="ok"} 0.5
scheduler_schedule_attempts_total{result="scheduled"} 10
process_cpu_seconds_total 4
kubernetes_build_info{git_version="v1.37.2",major="1"} 1
kubernetes_feature_enabled{name="SchedulerPreQueueingHints",stage="ALPHA"} 0
unrelated_total 7
"""
SCRAPE_2 = (
    SCRAPE_1.replace('queue="gated"} 100', 'queue="gated"} 300')
    .replace('queue="active"} 10', 'queue="active"} 40')
    .replace("algorithm_duration_seconds_sum 2", "algorithm_duration_seconds_sum 8")
    .replace("algorithm_duration_seconds_count 10", "algorithm_duration_seconds_count 20")
    .replace('result="scheduled"} 3', 'result="scheduled"} 10')
    .replace(
        'result="scheduled"} 10\nscheduler_framework', 'result="scheduled"} 20\nscheduler_framework'
    )
    .replace('status="ok"} 1\n', 'status="ok"} 3\n')
    .replace(
        'ResourceClaimAdd"} 1\nscheduler_scheduling', 'ResourceClaimAdd"} 5\nscheduler_scheduling'
    )
)
EXTENDER = """
extender_request_duration_seconds_sum{verb="filter"} 0.5
extender_request_duration_seconds_count{verb="filter"} 10
"""
EXTENDER_2 = EXTENDER.replace("0.5", "1.5").replace("} 10", "} 20")


def parse(text: str) -> series.Samples:
    return series.parse(text, scheduler_view.PREFIXES)


def test_reduce_keeps_only_the_scheduler_view() -> None:
    r = scheduler_view.reduce(parse(SCRAPE_1))
    assert r["pending:gated"] == 100
    assert r["incoming:PodAdd:active"] == 10
    assert r["point_seconds:Filter"] == 1
    assert r["scheduled"] == 10
    assert "unrelated_total" not in r
    assert scheduler_view.build_info(parse(SCRAPE_1)) == (
        "v1.37.2",
        {"SchedulerPreQueueingHints": False},
    )


def test_totals_are_changes_and_peaks() -> None:
    t = scheduler_view.Timeline()
    t.add(0.0, scheduler_view.reduce(scheduler_view.merged(parse(SCRAPE_1), parse(EXTENDER))))
    t.add(2.0, scheduler_view.reduce(scheduler_view.merged(parse(SCRAPE_2), parse(EXTENDER_2))))
    tot = scheduler_view.totals(t)
    assert tot.pending_peak["gated"] == 300
    assert tot.pending_mean["gated"] == 200
    assert tot.incoming == {"PodAdd:active": 30}
    assert tot.algorithm_seconds == 6 and tot.algorithm_count == 10
    assert tot.attempt_mean == pytest.approx(0.7)
    # 6 s of algorithm, 2 s of it in Filter: 4 s outside the extension points.
    assert tot.outside_points_seconds == pytest.approx(4.0)
    assert tot.extender_seconds == {"filter": 1.0} and tot.extender_calls == {"filter": 10}
    assert tot.event_seconds == {"resource.k8s.io/ResourceClaimAdd": 4}
    xs, ys = scheduler_view.mean_per_interval(t, "algorithm_seconds", "algorithm_count")
    assert list(xs) == [2.0] and list(ys) == [pytest.approx(0.6)]


def test_a_series_that_appears_later_is_none_before() -> None:
    t = scheduler_view.Timeline()
    t.add(0.0, {"a": 1.0})
    t.add(1.0, {"a": 2.0, "b": 5.0})
    assert t.values == {"a": [1.0, 2.0], "b": [None, 5.0]}
    # A counter appears when it first counts: from nothing at the start to 5.
    assert t.change("b") == 5.0
    assert t.change("never") == 0.0


def test_thinning_keeps_the_ends() -> None:
    t = scheduler_view.Timeline()
    for i in range(6):
        t.add(float(i), {"a": float(i)})
    t.thin()
    assert t.seconds == [0.0, 2.0, 4.0, 5.0]
    assert t.change("a") == 5.0


def test_a_restart_is_summed_over_processes_and_survives_thinning() -> None:
    t = scheduler_view.Timeline()
    starts = [100.0] * 6 + [200.0] * 3
    counts = [0.0, 10.0, 20.0, 30.0, 40.0, 50.0, 5.0, 15.0, 25.0]
    for i, (start, n) in enumerate(zip(starts, counts, strict=True)):
        t.add(float(i), {scheduler_view.PROCESS_START: start, "attempts": n})
    # End minus start across the two processes would read 25.
    assert t.change("attempts") == 50 + 25
    assert scheduler_view.totals(t).restarts == (6.0,)
    assert t.cumulative("attempts")[6] == 55.0  # no negative rate at the restart
    t.thin()
    # The old process's last sample (index 5, odd) is kept with the new one's first.
    assert 5.0 in t.seconds and 6.0 in t.seconds
    assert t.change("attempts") == 50 + 25


def test_a_new_process_that_counted_past_the_old_one_is_still_a_restart() -> None:
    t = scheduler_view.Timeline()
    for i, (start, n) in enumerate([(1.0, 10.0), (1.0, 20.0), (2.0, 30.0)]):
        t.add(float(i), {scheduler_view.PROCESS_START: start, "attempts": n})
    assert t.change("attempts") == 10 + 30
