"""Generic comparisons of an experiment file's variants (`experiment.judge.comparison`, pure)."""

from __future__ import annotations

import re

import pytest
from rich.console import Console

from experiment.judge import comparison
from experiment.measure import arm_record
from experiment.measure.arms import Arm
from experiment.report import rebuild, variants_report
from experiment.spec import spec as specs
from experiment.spec.spec import Experiment

R = arm_record.modelled
"""An arm's record of a result given in part (the rest zero)."""


def _doc(throughput: float, p99: float) -> arm_record.ArmRecord:
    return arm_record.modelled(
        {
            "throughput": {"Average": throughput},
            "latency_ms": {
                "pod_startup": {"count": 10, "Perc50": p99 / 2, "Perc90": p99, "Perc99": p99}
            },
        }
    )


def _arm(workload: str, variant: str, rep: int, latency: bool = False) -> Arm:
    return Arm(workload, variant, "pods", scheduler=variant, repeat=rep,
               latency_of=f"{workload}-{variant}-{rep}" if latency else "")  # fmt: skip


def test_each_variant_is_a_median_over_repeats_and_a_ratio_to_the_first() -> None:
    results = [
        (_arm("w", "a", 0), _doc(10, 100)),
        (_arm("w", "b", 0), _doc(5, 300)),
        (_arm("w", "b", 1), _doc(7, 100)),
        (_arm("w", "a", 1), _doc(12, 200)),
    ]
    rows = {r.metric: r for r in comparison.rows(results, ["a", "b"], ["scheduling throughput"])}
    row = rows["scheduling throughput"]
    assert (row.workload, row.unit, row.baseline) == ("w", "pods/s", "a")
    assert row.figures["a"].median == 11 and row.figures["b"].median == 6
    assert row.ratio("b") == pytest.approx(6 / 11) and row.ratio("a") == 1.0


def test_latency_arms_only_feed_the_unsaturated_metrics() -> None:
    results = [
        (_arm("w", "a", 0, latency=True), _doc(1, 50)),
        (_arm("w", "b", 0, latency=True), _doc(1, 80)),
        (_arm("w", "a", 0), _doc(10, 500)),
        (_arm("w", "b", 0), _doc(10, 900)),
    ]
    rows = comparison.rows(results, ["a", "b"], ["pod startup p99", "pod startup p99, unsaturated"])
    by = {r.metric: (r.figures["a"].median, r.figures["b"].median) for r in rows}
    assert by == {"pod startup p99": (500, 900), "pod startup p99, unsaturated": (50, 80)}


def test_without_metrics_the_defaults_with_values_are_shown() -> None:
    rows = comparison.rows([(_arm("w", "a", 0), _doc(3, 9))], ["a", "b"])
    assert [r.metric for r in rows] == [
        "scheduling throughput",
        "pod startup p50",
        "pod startup p99",
    ]
    assert list(rows[0].figures) == ["a"]


def test_release_rows_give_previous_current_and_the_change() -> None:
    results = [(_arm("w", "old", 0), _doc(10, 100)), (_arm("w", "new", 0), _doc(12, 80))]
    pairs = [("old", "1.35", "new", "1.36")]
    rows = {
        r.metric: r
        for r in comparison.release_rows(
            results, pairs, ["scheduling throughput", "pod startup p99"]
        )
    }
    t = rows["scheduling throughput"]
    assert (t.previous, t.current) == ("old (1.35)", "new (1.36)")
    assert t.change == pytest.approx(0.2)
    assert rows["pod startup p99"].change == pytest.approx(-0.2)
    assert comparison.release_rows(results, [("old", "1.35", "gone", "1.36")]) == []


def test_every_metric_name_is_known_once() -> None:
    names = comparison.metric_names()
    assert len(names) == len(set(names))
    assert set(comparison.DEFAULT_METRICS) <= set(names)


def test_ratios_carry_a_paired_interval_from_the_repeats_both_variants_ran() -> None:
    # b is half of a in every repeat although both swing 10x between repeats: paired by
    # repeat, the interval is tight around 0.5; repeat 3 of b is missing, so it is left out.
    a = [10.0, 100.0, 40.0, 70.0]
    b = [5.2, 49.0, 20.4]
    results = [(_arm("w", "a", i), _doc(x, 1)) for i, x in enumerate(a)]
    results += [(_arm("w", "b", i), _doc(x, 1)) for i, x in enumerate(b)]
    (row,) = comparison.rows(results, ["a", "b"], ["scheduling throughput"])
    interval = row.interval("b")
    assert interval is not None and interval.runs == 3
    assert 0.45 < interval.low < 0.5 < interval.high < 0.56


def test_the_release_table_prints_the_change_with_its_interval() -> None:
    results = [(_arm("w", "old", i), _doc(x, 1)) for i, x in enumerate([10.0, 30.0, 20.0])]
    results += [(_arm("w", "new", i), _doc(x, 1)) for i, x in enumerate([12.0, 36.6, 23.8])]
    releases = comparison.release_rows(results, [("old", "1.36", "new", "1.37")])
    console = Console(record=True, width=200)
    variants_report.console_tables([], releases, console)
    text = console.export_text()
    # Medians 20 -> 23.8 (+19.0 %); per repeat +20 %, +22 %, +19 %: the interval excludes 0.
    assert re.search(r"\+19\.0% \[\+1\d\.\d%, \+2\d\.\d%\]", text), text


def test_one_shared_repeat_gives_no_interval() -> None:
    results = [(_arm("w", "a", 0), _doc(10, 1)), (_arm("w", "b", 0), _doc(5, 1))]
    (row,) = comparison.rows(results, ["a", "b"], ["scheduling throughput"])
    interval = row.interval("b")
    assert interval is not None and interval.single_run


def test_experiment_json_keeps_the_repeats_so_a_rebuilt_page_pairs_them_alike() -> None:
    # b has no value in repeat 1: by position its repeat 2 would pair with a's repeat 1.
    results = [(_arm("w", "a", i), _doc(x, 1)) for i, x in enumerate([10.0, 50.0, 20.0])]
    results += [(_arm("w", "b", 0), _doc(5.0, 1)), (_arm("w", "b", 2), _doc(10.0, 1))]
    (row,) = comparison.rows(results, ["a", "b"], ["scheduling throughput"])
    kept = variants_report.figure_json(row.figures["b"])
    assert kept["repeats"] == [0, 2]
    again = rebuild.figure(kept["values"], kept["repeats"])
    base = rebuild.figure([10.0, 50.0, 20.0], [0, 1, 2])
    interval = comparison.paired_ratio(again, base)
    assert interval is not None and interval.runs == 2
    assert interval.low == pytest.approx(0.5) and interval.high == pytest.approx(0.5)


def _memory_doc(growth_mib: float) -> arm_record.ArmRecord:
    """An arm whose API server and scheduler grew by `growth_mib` each (GC can shrink it)."""
    grown = {"summary": {"rss_growth_bytes": growth_mib * 2**20}, "deltas": {}}
    return arm_record.modelled(
        {"counts": {"expected_pods": 1000}, "metrics": {"apiserver": grown, "scheduler": grown}}
    )


def test_a_memory_growth_that_went_negative_is_noise_never_a_ratio() -> None:
    """An experiment file printed "x-2.50" and "-327 %" for memory that shrank in a repeat."""
    metric = "API server + scheduler memory growth per 1,000 pods"
    results = [
        (_arm("w", "old", 0), _memory_doc(20)),
        (_arm("w", "new", 0), _memory_doc(-25)),
        (_arm("w", "old", 1), _memory_doc(30)),
        (_arm("w", "new", 1), _memory_doc(-10)),
    ]
    row = comparison.rows(results, ["old", "new"], [metric])[0]
    assert row.noise and row.ratio("new") is None and row.interval("new") is None
    assert variants_report._variant_cell(row, "new") == variants_report.NOISE
    release = comparison.release_rows(results, [("old", "1.36", "new", "1.37")], [metric])[0]
    assert release.noise and release.change is None and release.interval is None
    console = Console(record=True, width=300)
    variants_report.console_tables([row], [release], console)
    text = console.export_text()
    assert "x-" not in text and "×-" not in text and not re.search(r"-\d+(\.\d+)? ?%", text)
    assert "noise (negative in a repeat)" in text
    positive = [
        (a, _memory_doc(abs(m))) for a, m in ((_arm("w", "old", 0), 20), (_arm("w", "new", 0), 25))
    ]
    assert not comparison.rows(positive, ["old", "new"], [metric])[0].noise


def test_milliseconds_keep_three_significant_figures_and_counts_stay_whole() -> None:
    # An extender's 1.85 ms a pod against 3.9 ms read "2" and "4" when ms were whole.
    assert variants_report.value_text(1.846, "ms") == "1.85"
    assert variants_report.value_text(65.24, "ms") == "65.2"
    assert variants_report.value_text(1234.4, "ms") == "1,234"
    assert variants_report.value_text(539.4, "nodes") == "539"


def _sequential(pairs: int, at_most: float) -> tuple[Experiment, list[comparison.VariantRow]]:
    """A sequential file whose `b` runs at about half of `a`'s rate, over `pairs` pairs."""
    exp = specs.parse(
        {
            "name": "seq",
            "fleet": {"profile": "dgx-h100", "nodes": 10},
            "variants": [{"name": "a"}, {"name": "b"}],
            "workloads": [{"name": "w", "scenario": "pods", "params": {"pods": 20}}],
            "repeats": 24,
            "design": "sequential",
            "budgetMinutes": 30,
            "targets": [
                {"metric": "scheduling throughput", "variant": "b", "baseline": "a",
                 "atMost": at_most}
            ],
        }
    )  # fmt: skip
    base = [10.0, 12.0, 11.0, 9.0, 10.5, 11.5, 10.0, 12.5, 9.5, 10.0]
    results = [(_arm("w", "a", i), _doc(base[i], 1)) for i in range(pairs)]
    results += [
        (_arm("w", "b", i), _doc(base[i] * (0.5 + 0.001 * (i % 3)), 1)) for i in range(pairs)
    ]
    # The runner asks its reporter at each look, with the valid arms' results.
    undecided = variants_report.Reporter().undecided(exp, results, [a for a, _ in results])
    rows = comparison.rows(results, ["a", "b"], ["scheduling throughput"])
    assert undecided == variants_report.undecided_targets(exp, rows)
    return exp, rows


def test_a_files_targets_are_its_headlines_undecided_until_a_look_decides_them() -> None:
    # Before the first look (4 pairs) no verdict is taken: the run goes on.
    exp, rows = _sequential(3, at_most=0.8)
    assert variants_report.undecided_targets(exp, rows) == ["w: b / a scheduling throughput <= 0.8"]
    # At the first look (its level 1.6e-06) a ratio of 0.50 against <= 0.8 is decided (met).
    exp, rows = _sequential(4, at_most=0.8)
    assert variants_report.undecided_targets(exp, rows) == []
    # A threshold inside the interval at that look's level stays undecided.
    exp, rows = _sequential(4, at_most=0.502)
    assert variants_report.undecided_targets(exp, rows) == [
        "w: b / a scheduling throughput <= 0.502"
    ]
    # A target with no figure yet (no arm ran) is undecided too.
    assert variants_report.undecided_targets(exp, []) == ["w: b / a scheduling throughput <= 0.502"]
