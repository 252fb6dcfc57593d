"""Counters across restarts (loadgen.segments): a figure is the sum over the component's
process segments, as Prometheus's increase() reads it, never the end minus the start across
two processes; a figure that cannot be made whole is no number."""

from __future__ import annotations

import pytest
from rich.console import Console

from loadgen import segments, series
from loadgen.report import console, document, faults
from tests.support import synthetic_run as synthetic

ATTEMPTS = 'scheduler_schedule_attempts_total{profile="p",result="scheduled"}'
CPU = "process_cpu_seconds_total"
RSS = "process_resident_memory_bytes"
SUM = "scheduler_scheduling_attempt_duration_seconds_sum"
COUNT = "scheduler_scheduling_attempt_duration_seconds_count"
START = segments.START_TIME
ORIGIN = 1_000.0  # epoch seconds of the run's start


def scrape(start: float | None, attempts: float, **more: float) -> series.Samples:
    out = {ATTEMPTS: attempts, CPU: attempts / 10, RSS: 5e7 + attempts, **more}
    return out if start is None else {START: start, **out}


def test_increase_adds_the_value_after_a_drop_as_prometheus_does() -> None:
    assert segments.increase([10.0, 15.0, 3.0, 8.0]) == 5 + 3 + 5


def test_a_known_reset_counts_all_of_the_new_value_even_without_a_drop() -> None:
    # The new process counted past the old one's 15 before it was first sampled.
    assert segments.increase([10.0, 15.0, 20.0, 25.0], resets={2}) == 5 + 20 + 5


def test_a_counter_absent_at_first_counts_from_zero_and_gaps_are_skipped() -> None:
    assert segments.increase([None, 4.0, None, 6.0]) == 6.0
    assert segments.running([1.0, None, 3.0, 1.0]) == [0.0, None, 2.0, 3.0]
    assert segments.increase([]) == 0.0


def test_a_killed_scheduler_s_attempts_are_the_sum_over_its_two_processes() -> None:
    c = segments.Component("scheduler", origin_wall=ORIGIN, max_gap=12.0)
    c.answered(0.0, scrape(900.0, 100.0))
    c.answered(2.0, scrape(900.0, 5_000.0))  # the old process's last answer
    c.failed(4.0, "connection refused")  # killed
    c.failed(6.0, "connection refused")
    c.answered(8.0, scrape(ORIGIN + 7.0, 40.0))  # repaired: counts from 0
    c.answered(10.0, scrape(ORIGIN + 7.0, 900.0))
    d = c.deltas()
    # End minus start across the processes would read 900 - 100 = 800.
    assert d[ATTEMPTS] == (5_000 - 100) + 900
    assert c.growth(ATTEMPTS) == d[ATTEMPTS]
    assert d[CPU] == pytest.approx((500 - 10) + 90)
    assert c.processes == 2 and not c.partial
    [r] = c.restarts
    assert (r.seen, r.started, r.unseen_seconds) == (8.0, 7.0, 2.0)
    # Memory after is the new process's; its growth would span two processes: not given.
    assert d[RSS] == 5e7 + 900 and series.CHANGE + RSS not in d
    assert c.spans_processes == [series.CHANGE + RSS]
    assert (c.failures, c.first_error, c.first_failure) == (2, "connection refused", 4.0)


def test_a_histogram_s_sum_and_count_cross_a_restart_alike() -> None:
    c = segments.Component("scheduler", origin_wall=ORIGIN, max_gap=12.0)
    c.answered(0.0, scrape(900.0, 0.0, **{SUM: 1.5, COUNT: 10.0}))
    c.answered(2.0, scrape(900.0, 0.0, **{SUM: 4.0, COUNT: 30.0}))
    # The new process has done more than the old by its first scrape: no drop shows it.
    c.answered(4.0, scrape(ORIGIN + 3.0, 0.0, **{SUM: 9.0, COUNT: 50.0}))
    d = c.deltas()
    assert d[SUM] == pytest.approx(2.5 + 9.0) and d[COUNT] == 20.0 + 50.0


def test_without_a_start_time_a_restart_shows_as_a_counter_s_drop() -> None:
    c = segments.Component("extender", origin_wall=ORIGIN, max_gap=12.0)
    c.answered(0.0, scrape(None, 10.0))
    c.answered(2.0, scrape(None, 30.0))
    c.answered(4.0, scrape(None, 5.0))
    assert c.deltas()[ATTEMPTS] == 20 + 5
    assert c.start_time_series is False
    [r] = c.restarts
    assert r.started is None and r.seen == 4.0


def test_a_scrape_gap_across_a_restart_makes_the_counters_partial_not_a_number() -> None:
    c = segments.Component("apiserver", origin_wall=ORIGIN, max_gap=12.0)
    c.answered(0.0, scrape(900.0, 100.0))
    # Not scraped for 60 s, and a new process started 50 s in: what the old one counted in
    # up to 50 s is unknown.
    c.answered(60.0, scrape(ORIGIN + 50.0, 30.0))
    assert c.partial and "50 s" in c.partial[0]
    assert c.growth(ATTEMPTS) is None
    d = c.deltas()
    assert ATTEMPTS not in d and CPU not in d and d[RSS] == 5e7 + 30
    summary = series.summary(d, partial=True)
    assert summary == {"rss_bytes": 5e7 + 30}  # no 0 standing in for a partial figure


def test_a_component_that_never_answers_has_no_figures_and_says_so_once() -> None:
    c = segments.Component("scheduler", origin_wall=ORIGIN, max_gap=12.0)
    for at in range(0, 100, 2):
        c.failed(float(at), "connection refused")
    assert c.processes == 0 and c.deltas() == {} and c.growth(ATTEMPTS) is None
    scrapes = faults.Scrapes(
        component="scheduler",
        attempts=c.attempts,
        failed=c.failures,
        first_failure_seconds=c.first_failure,
        first_error=c.first_error,
        start_time_series=c.start_time_series,
        processes=c.processes,
    )
    [line] = scrapes.describe()
    assert "no scrape answered in 50 tries" in line and "connection refused" in line


def test_a_first_answer_late_counts_from_zero_only_for_a_process_started_in_the_run() -> None:
    late = segments.Component("scheduler", origin_wall=ORIGIN, max_gap=12.0)
    late.failed(0.0, "timeout")
    late.answered(2.0, scrape(ORIGIN - 3_600.0, 500.0))  # counting for an hour already
    late.answered(4.0, scrape(ORIGIN - 3_600.0, 600.0))
    assert late.partial and late.growth(ATTEMPTS) is None

    fresh = segments.Component("scheduler", origin_wall=ORIGIN, max_gap=12.0)
    fresh.failed(0.0, "connection refused")
    fresh.answered(2.0, scrape(ORIGIN + 1.0, 500.0))  # started in the run: all its counts
    fresh.answered(4.0, scrape(ORIGIN + 1.0, 600.0))
    assert not fresh.partial and fresh.growth(ATTEMPTS) == 600.0


def test_one_process_keeps_the_two_scrape_figures() -> None:
    before, after = scrape(900.0, 10.0), scrape(900.0, 30.0)
    d = segments.between(before, after)
    assert d[ATTEMPTS] == 20.0 and d[series.CHANGE + RSS] == 20.0


def _killed(name: str) -> segments.Component:
    """A component whose old process answered last 0.55 s into the run; the next scrape, at
    1.05 s, failed; the new process started at 1.1 s."""
    c = segments.Component(name, origin_wall=ORIGIN, max_gap=12.0)
    c.answered(0.0, scrape(900.0, 0.0))
    c.answered(0.55, scrape(900.0, 1.0))
    c.failed(1.05, "connection refused")
    c.answered(1.2, scrape(ORIGIN + 1.1, 4.0))
    return c


def test_pods_bound_in_a_killed_scheduler_s_unseen_stretch_are_counted_beside_it() -> None:
    result = synthetic.run_result()  # its pods are first seen bound 0.5, 0.6, ... 1.4 s in
    result.components = {"scheduler": _killed("scheduler")}
    [r] = faults.build(result).restarts
    assert r.unseen_seconds == 0.5 and r.bound_unseen == 5  # 0.6 ... 1.0 s
    assert "5 of the run's pods were seen bound then" in r.describe()
    # Only kube-scheduler binds pods: another component's restart says nothing of them.
    result.components = {"apiserver": _killed("apiserver")}
    [r] = faults.build(result).restarts
    assert r.bound_unseen is None and "bound" not in r.describe()


def test_the_attempts_figure_counts_the_pods_bound_in_the_unseen_stretch() -> None:
    """The counter sum over both processes misses what the old one counted after its last
    scrape; the pods seen bound then are each at least one attempt, so the figure holds them
    and says so, and is never short of the pods scheduled for that reason alone."""
    result = synthetic.run_result()
    killed = _killed("scheduler")
    result.components = {"scheduler": killed}
    result.metrics = {"scheduler": killed.deltas()}
    m = document.build(result).metrics["scheduler"]
    counted = result.metrics["scheduler"][ATTEMPTS]
    assert m.attempts_bound_unseen == 5
    assert m.summary["schedule_attempts"] == counted + 5
    out = Console(record=True, width=300)
    console.render(document.build(result), out)
    assert "attempts include 5 pods seen bound while the old process" in out.export_text()
