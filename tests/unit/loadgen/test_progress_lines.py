"""Progress lines for logs where no bar is drawn: `loadgen.progress` on a fake clock."""

from __future__ import annotations

from loadgen import progress


def test_the_first_line_comes_one_interval_after_the_phase_appears() -> None:
    lines = progress.Lines(interval=30.0)
    assert lines.due("pods", 100, 0, 0, 10_000, now=0.0) is None
    assert lines.due("pods", 400, 300, 200, 10_000, now=29.9) is None
    text = lines.due("pods", 500, 330, 318, 10_000, now=30.0)
    assert text == (
        "phase pods: created 500, scheduled 330, running 318 of 10,000; 10.6 pods/s, "
        "about 15m13s left"
    )
    assert lines.due("pods", 900, 500, 400, 10_000, now=45.0) is None


def test_the_rate_is_that_of_the_last_interval() -> None:
    lines = progress.Lines(interval=10.0)
    lines.due("a", 0, 0, 0, 100, now=0.0)
    lines.due("a", 50, 50, 50, 100, now=10.0)
    text = lines.due("a", 60, 60, 60, 100, now=20.0)
    assert text is not None and "1.0 pods/s" in text and "about 40s left" in text


def test_a_finished_phase_says_so_once_then_stays_quiet() -> None:
    lines = progress.Lines(interval=10.0)
    lines.due("a", 10, 0, 0, 10, now=0.0)
    assert lines.due("a", 10, 10, 10, 10, now=10.0) == (
        "phase a: created 10, scheduled 10, running 10 of 10; 1.0 pods/s, all running"
    )
    assert lines.due("a", 10, 10, 10, 10, now=20.0) is None


def test_a_stuck_phase_gives_no_time_left() -> None:
    lines = progress.Lines(interval=10.0)
    lines.due("a", 10, 0, 0, 10, now=0.0)
    assert lines.due("a", 10, 0, 0, 10, now=10.0) == (
        "phase a: created 10, scheduled 0, running 0 of 10; 0.0 pods/s"
    )


def test_phases_are_timed_apart() -> None:
    lines = progress.Lines(interval=10.0)
    lines.due("a", 1, 0, 0, 5, now=0.0)
    lines.due("b", 1, 0, 0, 5, now=5.0)
    assert lines.due("a", 1, 0, 0, 5, now=10.0) is not None
    assert lines.due("b", 1, 0, 0, 5, now=10.0) is None


def test_time_left_reads_as_a_clock() -> None:
    assert [progress.clock_time(s) for s in (0.4, 59, 60, 500, 3599, 3600, 7500)] == [
        "0s",
        "59s",
        "1m00s",
        "8m20s",
        "59m59s",
        "1h00m",
        "2h05m",
    ]
