"""Paired t intervals of ratios and verdicts that need a significant test and an interval
strictly past the threshold (the calibration itself: test_calibration.py)."""

from __future__ import annotations

import math
import re
import statistics

import pytest
from scipy import stats

from experiment.measure import intervals as iv


def test_median_and_min_max_of_nothing_are_nan() -> None:
    assert math.isnan(iv.median([]))
    assert all(math.isnan(x) for x in iv.min_max([]))
    assert iv.median([3, 1, 2]) == 2 and iv.min_max([3, 1, 2]) == (1, 3)


def test_one_repeat_is_an_observation_never_a_verdict() -> None:
    interval = iv.ratio_interval([90.0], [100.0])
    assert interval is not None and interval.single_run
    assert (interval.low, interval.high) == (pytest.approx(0.9), pytest.approx(0.9))
    for threshold in (0.5, 0.9, 0.95):
        assert iv.verdict(interval, threshold, at_least=True) == iv.OBSERVATION
    assert not iv.is_verdict(iv.OBSERVATION)
    assert iv.describe(interval) == "0.9 (1 repeat)"


def test_the_interval_is_students_t_over_the_paired_log_ratios() -> None:
    a, b = [95.0, 99.0, 101.0, 97.0, 96.0], [100.0, 104.0, 98.0, 99.0, 101.0]
    interval = iv.ratio_interval(a, b)
    assert interval is not None and interval.runs == 5
    logs = [math.log(x / y) for x, y in zip(a, b, strict=True)]
    expected = stats.ttest_1samp(logs, 0.0).confidence_interval(0.95)
    assert interval.low == pytest.approx(math.exp(expected.low))
    assert interval.high == pytest.approx(math.exp(expected.high))
    assert interval.contains(interval.point)


def test_pairs_follow_the_repeats_not_the_position() -> None:
    # Repeat 1 of B is missing (its arm was invalid): A's repeat 1 has no pair.
    a, b = iv.paired([1.0, 2.0, 3.0], [0, 1, 2], [10.0, 30.0], [0, 2])
    assert (a, b) == ([1.0, 3.0], [10.0, 30.0])
    with pytest.raises(ValueError, match="unpaired"):
        iv.ratio_interval([1.0, 2.0], [1.0])


def test_a_shared_drift_between_repeats_cancels_in_the_pairs() -> None:
    # The machine doubled its speed between repeats; each repeat's arms are 5 % apart.
    a, b = [95.0, 190.0, 380.0, 96.0, 47.0], [100.0, 200.0, 400.0, 100.0, 50.0]
    interval = iv.ratio_interval(a, b)
    assert interval is not None and interval.low > 0.93 and interval.high < 0.97
    assert iv.verdict(interval, 0.9, at_least=True) == "met"


def test_an_interval_touching_the_threshold_is_not_a_verdict() -> None:
    # Every repeat exactly on the threshold: no spread, but not past it.
    on = iv.ratio_interval([9.0, 9.0, 9.0], [10.0, 10.0, 10.0])
    assert iv.verdict(on, 0.9, at_least=True).startswith("inconclusive")
    # A gain target: equal placement in every repeat is no gain.
    equal = iv.ratio_interval([1.0, 1.0, 1.0, 1.0, 1.0], [1.0, 1.0, 1.0, 1.0, 1.0])
    assert iv.verdict(equal, 1.0, at_least=True, strict=True) == "missed"


def test_inconclusive_says_what_the_pairs_can_detect_at_the_spread_seen() -> None:
    interval = iv.ratio_interval([9.3, 9.9, 9.5], [10.0, 10.0, 10.0])
    assert interval is not None and interval.low < 0.9 < interval.high
    word = iv.verdict(interval, 0.9, at_least=True)
    assert word.startswith("inconclusive (at this spread 3 pairs tell a ratio <= ")
    low, high = (float(x) for x in re.findall(r"[<>]= ([0-9.]+)", word))
    assert low < 0.9 < high
    # The minimum detectable effect: (t_{1-a/2} + t_{power}) sd / sqrt(n) on the log scale.
    d = [math.log(x / 10.0 / 0.9) for x in (9.3, 9.9, 9.5)]
    sd = statistics.stdev(d)
    delta = (stats.t.ppf(0.975, 2) + stats.t.ppf(0.8, 2)) * sd / math.sqrt(3)
    assert high == pytest.approx(0.9 * math.exp(delta), rel=1e-2)
    # More pairs left in the budget detect less; a smaller level (a sequential look) more.
    more = iv.verdict(interval, 0.9, at_least=True, pairs_left=13)
    assert more.startswith("inconclusive (at this spread 16 pairs tell")
    assert float(re.findall(r">= ([0-9.]+)", more)[0]) < high
    assert iv.verdict(interval, 0.9, at_least=True, level=0.0) == (
        "inconclusive (before the design's first look)"
    )
    first = iv.verdict(interval, 0.9, at_least=True, level=0.0, detect_at=(4, 1e-4))
    assert first.startswith("inconclusive (before the design's first look; at this spread 4 pairs")


@pytest.mark.parametrize(
    ("a", "at_least", "expected"),
    [
        ([9.6, 9.7, 9.8, 9.65, 9.75], True, "met"),
        ([8.0, 8.2, 8.1, 8.05, 8.15], True, "missed"),
        ([0.5, 0.6, 0.55, 0.52, 0.58], False, "met"),
        ([9.6, 9.7, 9.8, 9.65, 9.75], False, "missed"),
    ],
)
def test_a_clear_difference_over_five_repeats_is_a_verdict(
    a: list[float], at_least: bool, expected: str
) -> None:
    interval = iv.ratio_interval(a, [10.0] * 5)
    assert iv.verdict(interval, 0.9, at_least=at_least) == expected


def test_a_repeat_that_measured_zero_is_tested_on_differences() -> None:
    # The default scheduler placed no aligned probe in two repeats: no log-ratio exists.
    interval = iv.ratio_interval([1.0, 1.0, 0.9, 1.0, 0.95], [0.0, 0.05, 0.0, 0.1, 0.06])
    assert interval is not None and interval.scale == "linear" and not interval.defined
    assert iv.describe(interval).startswith("- (a repeat measured 0")
    assert iv.verdict(interval, 1.0, at_least=True) == "met"


def test_no_ratio_without_values_or_with_b_zero_everywhere() -> None:
    assert iv.ratio_interval([], []) is None
    assert iv.ratio_interval([1.0], [0.0]) is None
    assert iv.verdict(None, 1.0, at_least=True) == "not measured"
    assert iv.mean_interval([]) is None


def test_an_absolute_figure_is_judged_on_its_mean() -> None:
    interval = iv.mean_interval([40.0, 50.0, 45.0, 42.0, 48.0])
    assert interval is not None and interval.contains(45.0)
    assert iv.verdict(interval, 95.4, at_least=False) == "met"
    same = iv.mean_interval([1.0, 1.0, 1.0])
    assert same is not None and (same.low, same.high, same.runs) == (1.0, 1.0, 3)


def test_from_ten_pairs_the_tenth_at_each_end_is_set_aside() -> None:
    # One arm alone slowed in one repeat of ten (a background burst): the trimmed mean
    # log-ratio stays where the other nine put it, and the interval is scipy's trimmed t.
    a = [110.0, 111.0, 109.5, 110.5, 110.2, 109.8, 110.9, 109.1, 110.4, 55.0]
    b = [100.0] * 10
    interval = iv.ratio_interval(a, b, "cost")
    assert interval is not None and interval.runs == 10
    logs = [math.log(x / 100.0) for x in a]
    assert interval.point == pytest.approx(math.exp(stats.trim_mean(logs, 0.1)))
    assert interval.point == pytest.approx(1.10, abs=0.005)
    assert statistics.geometric_mean(x / 100.0 for x in a) < 1.03  # the plain mean's estimate
    ordered = sorted(logs)
    winsorised = [min(max(v, ordered[1]), ordered[8]) for v in ordered]
    se = statistics.stdev(winsorised) / (0.8 * math.sqrt(10))
    half = stats.t.ppf(0.975, 10 - 2 - 1 - 1) * se
    m = stats.trim_mean(logs, 0.1)
    assert (interval.low, interval.high) == (
        pytest.approx(math.exp(m - half)),
        pytest.approx(math.exp(m + half)),
    )


def test_the_interval_beside_a_verdict_is_the_one_at_its_level() -> None:
    a, b = [111.0, 114.0, 112.5, 113.0, 111.5, 112.0], [100.0] * 6
    interval = iv.ratio_interval(a, b, "cost")
    assert interval is not None
    for level in (0.05, 0.0336, 0.0023):
        low, high = interval.at(level)
        decided = iv.is_verdict(iv.verdict(interval, 1.10, at_least=False, level=level))
        assert decided == (low > 1.10 or high < 1.10)
        assert iv.describe(interval, "{:.4f}".format, level) == f"[{low:.4f}, {high:.4f}]"
    assert interval.at(0.05) == (interval.low, interval.high)
    assert interval.at(0.0023)[0] < interval.low and interval.at(0.0023)[1] > interval.high
    assert iv.confidence(0.05) == "95 %" and iv.confidence(0.0023) == "99.77 %"
    # This one is decided at 0.05 but not at 0.0023: said beside each, its interval shows why.
    assert iv.verdict(interval, 1.10, at_least=False, level=0.05) == "missed"
    assert iv.verdict(interval, 1.10, at_least=False, level=0.0023).startswith("inconclusive")


def test_an_impossible_value_is_refused_never_judged_nor_printed_as_nan() -> None:
    interval = iv.ratio_interval([1.0, math.inf, 1.02, 1.01], [1.0, 1.0, 1.0, 1.0], "cost")
    assert interval is not None and interval.runs == 3
    (refused,) = interval.refused
    assert (refused.position, refused.arm, refused.why) == (1, "A", "infinite")
    assert refused.line("on", "CPU per pod") == "on's CPU per pod inf (infinite): pair dropped"
    assert "nan" not in iv.verdict(interval, 1.10, at_least=False)
    # A figure that may be 0 or less (a share of profiled CPU) keeps its pairs.
    shares = iv.ratio_interval([0.0, 0.1, 0.2], [0.1, 0.1, 0.2], "measured")
    assert shares is not None and shares.runs == 3 and shares.scale == "linear"
