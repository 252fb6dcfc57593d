"""A phase's wait fails on a stall, not on a fixed clock: `loadgen.stall` on a fake clock."""

from __future__ import annotations

from loadgen import stall


def test_a_wait_that_keeps_moving_never_stalls() -> None:
    watch = stall.Watch(stall=60.0, cap=None, started=0.0, mark=(0,))
    # Progress every 50 s for an hour: each one moves the deadline.
    for t in range(50, 3600, 50):
        watch.observe((t,), float(t))
        assert watch.expired(float(t)) is None
    assert watch.remaining(3550.0) == 60.0


def test_a_wait_stalls_once_nothing_moved_for_the_stall_time() -> None:
    watch = stall.Watch(stall=60.0, cap=None, started=0.0, mark=(0,))
    watch.observe((5,), 10.0)
    watch.observe((5,), 40.0)  # the same marker again is no progress
    assert watch.expired(69.9) is None
    assert watch.remaining(40.0) == 30.0
    assert watch.expired(70.0) == "stalled"
    assert watch.idle(70.0) == 60.0
    assert watch.remaining(80.0) == 0.0


def test_nothing_at_all_stalls_from_the_start() -> None:
    watch = stall.Watch(stall=5.0, cap=None, started=100.0)
    assert watch.expired(104.0) is None
    assert watch.expired(105.0) == "stalled"


def test_an_explicit_cap_ends_a_moving_wait() -> None:
    watch = stall.Watch(stall=60.0, cap=90.0, started=0.0, mark=0)
    for t in range(10, 90, 10):
        watch.observe(t, float(t))
    assert watch.remaining(80.0) == 10.0  # the cap comes before the stall
    assert watch.expired(89.0) is None
    assert watch.expired(90.0) == "capped"


def test_the_cap_wins_when_both_have_run_out() -> None:
    watch = stall.Watch(stall=10.0, cap=10.0, started=0.0)
    assert watch.expired(10.0) == "capped"


def test_a_late_observation_never_moves_the_progress_time_back() -> None:
    watch = stall.Watch(stall=10.0, cap=None, started=50.0, mark="a")
    watch.observe("b", 40.0)  # a clock reading from before the wait started
    assert watch.idle(55.0) == 5.0
