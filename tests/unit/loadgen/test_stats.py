"""stats: nearest-rank percentiles, CL2 phases, scheduler_perf throughput."""

from __future__ import annotations

import itertools
import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from loadgen import stats


def test_nearest_rank_percentile_of_one_to_hundred_is_the_value_itself() -> None:
    values = [float(v) for v in range(1, 101)]
    assert stats.percentile(values, 50) == 50.0
    assert stats.percentile(values, 90) == 90.0
    assert stats.percentile(values, 99) == 99.0
    assert stats.percentile(values, 100) == 100.0


def test_nearest_rank_takes_the_ceiling_not_an_interpolation() -> None:
    # ceil(3 * 0.5) - 1 = 1 -> the second value; interpolation would give 2.0 as well,
    # but for p90 nearest rank gives the third value (3.0) where linear gives 2.8.
    assert stats.percentile([1.0, 2.0, 3.0], 50) == 2.0
    assert stats.percentile([1.0, 2.0, 3.0], 90) == 3.0
    assert stats.percentile([5.0, 10.0], 50) == 5.0


def test_percentile_of_nothing_is_zero() -> None:
    assert stats.percentile([], 99) == 0.0
    assert stats.summarize([])["count"] == 0


@given(st.lists(st.floats(0, 1e6, allow_nan=False), min_size=1), st.floats(1, 100))
def test_percentile_is_a_sample_value_with_enough_values_at_or_below(
    values: list[float], p: float
) -> None:
    ordered = sorted(values)
    v = stats.percentile(ordered, p)
    assert v in ordered
    assert sum(1 for x in ordered if x <= v) >= math.ceil(len(ordered) * p / 100)


def test_phase_durations_follow_cl2_definitions() -> None:
    events = [{"create": 10.0, "schedule": 10.5, "run": 11.25, "watch": 11.25}]
    d = stats.phase_durations_ms(events)
    assert d["create_to_schedule"] == [500.0]
    assert d["schedule_to_run"] == [750.0]
    assert d["run_to_watch"] == [0.0]
    assert d["schedule_to_watch"] == [750.0]
    assert d["pod_startup"] == [1250.0]
    assert d["create_to_run"] == [1250.0]


def test_a_pod_still_pending_only_counts_in_phases_it_finished() -> None:
    d = stats.phase_durations_ms([{"create": 1.0, "schedule": 2.0, "run": None, "watch": None}])
    assert d["create_to_schedule"] == [1000.0]
    assert d["pod_startup"] == []


def test_throughput_follows_scheduler_perfs_collector() -> None:
    ticks = [
        (1.0, 0),  # nothing scheduled yet: ignored
        (2.0, 5),  # first non-zero sample: only starts the clock
        (3.0, 15),  # 10 in 1 s
        (4.0, 15),  # no new pod: skipped, not a zero
        (5.0, 15),  # skipped again
        (6.0, 21),  # 6 over the 3 s since t=3, recorded once per interval: 2, 2, 2
        (7.1, 32),  # 11 over 1.1 s (a late tick's real duration counts)
    ]
    assert stats.sampled_rates(ticks) == [10.0, 2.0, 2.0, 2.0, pytest.approx(10.0)]
    t = stats.throughput(ticks)
    assert t["Average"] == pytest.approx(26.0 / 5)
    assert t["Perc50"] == 2.0 and t["Perc90"] == t["Perc99"] == pytest.approx(10.0)


def test_throughput_of_fewer_than_two_scheduling_ticks_is_zero() -> None:
    assert stats.throughput([])["Average"] == 0.0
    assert stats.throughput([(1.0, 0), (2.0, 40)]) == dict.fromkeys(
        ("Average", "Perc50", "Perc90", "Perc95", "Perc99"), 0.0
    )


def test_every_report_definition_names_its_reference() -> None:
    assert "pod_startup_latency.go" in stats.DEFINITIONS["pod_startup"]
    assert "throughputCollector" in stats.DEFINITIONS["throughput"]


def test_cdf_ends_at_one_and_is_monotonic() -> None:
    pts = stats.cdf([float(i) for i in range(1000)], points=50)
    assert pts[-1] == (999.0, 1.0)
    assert all(a[0] <= b[0] and a[1] < b[1] for a, b in itertools.pairwise(pts))
    assert len(pts) <= 51


def test_server_bound_flags_client_durations_shorter_than_server_timestamps() -> None:
    ok = (0.0, 3.0, 1000.0, 1002.0)  # client 3 s, server 2 s
    slack = (0.0, 1.5, 1000.0, 1002.0)  # client 1.5 s vs server 2 s: within 1 s truncation
    bad = (0.0, 0.5, 1000.0, 1003.0)  # client 0.5 s, server >= 2 s
    assert stats.server_bound_violations([ok, slack, bad]) == 1
