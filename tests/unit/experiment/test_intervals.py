"""Medians, bootstrap intervals and verdicts that need an interval to clear the threshold."""

from __future__ import annotations

import math

import pytest

from experiment import intervals as iv


def test_median_and_min_max_of_nothing_are_nan() -> None:
    assert math.isnan(iv.median([]))
    assert all(math.isnan(x) for x in iv.min_max([]))
    assert iv.median([3, 1, 2]) == 2 and iv.min_max([3, 1, 2]) == (1, 3)


def test_one_repeat_gives_the_point_and_says_single_run() -> None:
    interval = iv.ratio_interval([90.0], [100.0])
    assert interval == iv.Interval(0.9, 0.9, 1) and interval.single_run
    assert iv.verdict(interval, 0.9, at_least=True) == "met (single run)"
    assert iv.verdict(interval, 0.95, at_least=True) == "missed (single run)"
    assert iv.describe(interval) == "0.9 (single run)"


def test_the_bootstrap_is_seeded_and_brackets_the_ratio_of_medians() -> None:
    a, b = [95.0, 99.0, 101.0], [100.0, 104.0, 98.0]
    first = iv.ratio_interval(a, b, seed=3)
    assert first == iv.ratio_interval(a, b, seed=3)
    assert first is not None and not first.single_run and first.runs == 3
    assert first.contains(iv.median(a) / iv.median(b))
    assert first.low >= min(a) / max(b) and first.high <= max(a) / min(b)


def test_an_interval_that_straddles_the_threshold_is_inconclusive() -> None:
    # Overhead flipping between runs (the extender's 13.8 % vs 5.1 %): no verdict.
    interval = iv.ratio_interval([80.0, 95.0, 88.0], [100.0, 100.0, 100.0])
    assert interval is not None and interval.low < 0.9 < interval.high
    assert iv.verdict(interval, 0.9, at_least=True) == "inconclusive"


@pytest.mark.parametrize(
    ("low", "high", "at_least", "expected"),
    [
        (0.92, 0.99, True, "met"),
        (0.80, 0.89, True, "missed"),
        (0.85, 0.95, True, "inconclusive"),
        (0.01, 0.08, False, "met"),
        (0.11, 0.20, False, "missed"),
    ],
)
def test_verdict_needs_the_whole_interval_on_one_side(
    low: float, high: float, at_least: bool, expected: str
) -> None:
    threshold = 0.9 if at_least else 0.1
    assert iv.verdict(iv.Interval(low, high, 3), threshold, at_least=at_least) == expected


def test_no_ratio_without_values_or_with_a_zero_denominator() -> None:
    assert iv.ratio_interval([], [1.0]) is None
    assert iv.ratio_interval([1.0], [0.0]) is None
    assert iv.verdict(None, 1.0, at_least=True) == "not measured"
    assert iv.median_interval([]) is None


def test_median_interval_of_identical_values_is_that_value() -> None:
    assert iv.median_interval([1.0, 1.0, 1.0]) == iv.Interval(1.0, 1.0, 3)
